"""Generated flatten/unflatten: round trips (hypothesis), layouts of unannotated classes, slots."""

import dataclasses
import pickle
import sys
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _versions import needs_from_node_data_and_children
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.tree_util import GetAttrKey

import pytreekit
from pytreekit import field, pytree_class


def _make_class(index, n_fields, static_mask, frozen, annotated):
    names = [f"f{i}" for i in range(n_fields)]
    static = tuple(n for n, s in zip(names, static_mask, strict=True) if s)
    if annotated:
        namespace = {"__annotations__": dict.fromkeys(names, object)}
        for n, s in zip(names, static_mask, strict=True):
            namespace[n] = field(static=s)
        cls = type(f"Random{index}", (), namespace)
        return pytree_class(cls, frozen=frozen)

    def __init__(self, *values):
        for n, v in zip(names, values, strict=True):
            setattr(self, n, v)

    cls = type(f"Random{index}", (), {"__init__": __init__})
    return pytree_class(cls, static=static, frozen=frozen)


@st.composite
def random_trees(draw, depth=0):
    n_fields = draw(st.integers(0, 4))
    mask = draw(st.lists(st.booleans(), min_size=n_fields, max_size=n_fields))
    cls = _make_class(
        draw(st.integers(0, 10**9)),
        n_fields,
        mask,
        frozen=draw(st.booleans()),
        annotated=draw(st.booleans()),
    )
    values = []
    for is_static in mask:
        if is_static:
            values.append(draw(st.one_of(st.integers(), st.text(max_size=3), st.none())))
        elif depth < 2 and draw(st.booleans()):
            values.append(draw(random_trees(depth=depth + 1)))
        else:
            size = draw(st.integers(0, 3))
            values.append(jnp.arange(size, dtype=jnp.float32) + draw(st.integers(-5, 5)))
    return cls(*values)


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_round_trip_and_tree_map_preserve_structure_and_values(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt == tree
    assert jax.tree_util.tree_structure(rebuilt) == treedef

    doubled = jax.tree_util.tree_map(lambda x: x * 2, tree)
    assert jax.tree_util.tree_structure(doubled) == treedef
    for a, b in zip(jax.tree_util.tree_leaves(doubled), leaves, strict=True):
        np.testing.assert_array_equal(a, b * 2)

    path_leaves, path_treedef = jax.tree_util.tree_flatten_with_path(tree)
    assert path_treedef == treedef
    assert all(isinstance(p[-1], GetAttrKey) for p, _ in path_leaves)


def test_unflatten_with_sentinels_keeps_them_verbatim():
    @pytree_class(frozen=True)
    class Frozen:
        a: jax.Array
        b: jax.Array
        n: int = field(static=True, default=1)

    treedef = jax.tree_util.tree_structure(Frozen(jnp.ones(1), jnp.ones(1)))
    marker = object()
    rebuilt = jax.tree_util.tree_unflatten(treedef, [None, marker])
    assert rebuilt.a is None and rebuilt.b is marker and rebuilt.n == 1


def test_slots_classes_annotated_and_unannotated():
    @pytree_class(frozen=True, static=("n",))
    class Slotted:
        __slots__ = ("w", "n")
        w: jax.Array
        n: int

    @pytree_class(static=("n",))
    class OwnInitSlots:
        __slots__ = ("n", "w")

        def __init__(self, n):
            self.n = n
            self.w = jnp.ones(n)

    for obj in (Slotted(jnp.ones(2), 3), OwnInitSlots(2)):
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        assert jax.tree_util.tree_unflatten(treedef, [None] * len(leaves)).w is None
        assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
        assert jax.jit(lambda o: o)(obj) == obj
        assert pytreekit.replace(obj, w=jnp.zeros(2)).w.sum() == 0


def test_missing_field_is_named_on_flatten():
    @pytree_class
    class Unset:
        w: jax.Array = field(init=False)

    with pytest.raises(AttributeError, match=r"Unset.w is a field but this instance has no value"):
        jax.tree_util.tree_flatten(Unset())


def test_instances_made_before_the_class_is_decorated_again_follow_the_new_options():
    class Plain:
        def __init__(self):
            self.n = 2
            self.w = jnp.ones(2)

    pytree_class(Plain)
    old = Plain()
    assert len(jax.tree_util.tree_leaves(old)) == 2  # n is a leaf
    pytree_class(Plain, static=("n",))
    assert jax.tree_util.tree_leaves(old) == [old.w]  # the first instance seen since
    assert [f.static for f in pytreekit.fields(old)] == [True, False]
    assert jax.tree_util.tree_structure(Plain()) == jax.tree_util.tree_structure(old)


def _define(annotated, static):
    """The same class (same module and qualname) as a notebook cell would redefine it."""
    if annotated:

        @pytree_class(static=static)
        class Model:
            w: jax.Array
            n: int = 2

    else:

        @pytree_class(static=static)
        class Model:
            def __init__(self, w, n=2):
                self.w = w
                self.n = n

    return Model


def _serialized(model):
    return jax.export.export(jax.jit(lambda m: m.w * m.n))(model).serialize()


def test_exported_treedef_is_read_while_its_layout_is_what_the_class_makes_now():
    # The artifact holds the layout: the same fields and static flags read into either kind of
    # class; other static flags are refused, naming both.
    data = _serialized(_define(annotated=False, static=())(jnp.ones(2)))
    Annotated = _define(annotated=True, static=())
    np.testing.assert_array_equal(
        jax.export.deserialize(data).call(Annotated(jnp.ones(2))), 2 * jnp.ones(2)
    )

    data = _serialized(_define(annotated=False, static=("n",))(jnp.ones(2)))
    _define(annotated=False, static=())
    with pytest.raises(
        ValueError,
        match=r"\.Model: .*\(static: \('n',\)\).*\(static: \(\)\)\. Export the function again",
    ):
        jax.export.deserialize(data)
    Current = _define(annotated=False, static=("n",))
    exported = jax.export.deserialize(data)
    np.testing.assert_array_equal(exported.call(Current(jnp.ones(2))), 2 * jnp.ones(2))


def test_missing_second_field_is_the_one_named():
    @pytree_class
    class Half:
        a: jax.Array
        b: jax.Array = field(init=False)

    with pytest.raises(AttributeError, match=r"\.Half\.b is a field but .*Set it in __init__"):
        jax.tree_util.tree_flatten(Half(jnp.ones(1)))


def test_attribute_error_of_a_field_that_holds_a_value_propagates_unchanged():
    failures = []

    @pytree_class
    class Loading:
        a: jax.Array

        def __getattribute__(self, name):
            if name == "a" and not failures:  # the first read fails, as if still loading
                failures.append(name)
                raise AttributeError("a is still loading")
            return object.__getattribute__(self, name)

    obj = Loading(jnp.ones(1))
    with pytest.raises(AttributeError, match=r"^a is still loading$"):
        jax.tree_util.tree_flatten(obj)
    assert jax.tree_util.tree_leaves(obj)[0].tolist() == [1.0]


def test_threads_first_using_an_annotated_class_together_generate_its_code_once(monkeypatch):
    @pytree_class
    class Fresh:
        w: jax.Array

    obj = Fresh(jnp.ones(2))
    table = Fresh.__pytreekit_spec__.table
    generated = []
    original = table.on_change
    monkeypatch.setattr(table, "on_change", lambda: generated.append(1) or original())

    def waiting_in_first_use(thread):
        frame = sys._current_frames().get(thread.ident)
        while frame is not None and frame.f_code.co_name != "first_use":
            frame = frame.f_back
        return frame is not None

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(jax.tree_util.tree_leaves(obj)))
        for _ in range(3)
    ]
    with table.lock:  # every thread reaches the first use before any passes it
        for thread in threads:
            thread.start()
        while not all(waiting_in_first_use(thread) for thread in threads):
            time.sleep(0.001)
    for thread in threads:
        thread.join()
    assert generated == [1]
    assert [[leaf.tolist() for leaf in leaves] for leaves in results] == [[[1.0, 1.0]]] * 3


def test_registering_with_jax_after_instances_exist():
    @pytree_class(backends=())
    class Later:
        def __init__(self):
            self.w = jnp.ones(2)

    obj = Later()
    assert pytreekit.fields(obj)[0].name == "w"  # the first layout is known
    assert jax.tree_util.tree_leaves(obj) == [obj]  # not registered: a leaf
    pytreekit.register_backend(Later, "jax")
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(obj)[0]]
    assert paths == [(GetAttrKey("w"),)]


def test_failed_decoration_again_leaves_existing_instances_as_they_were():
    class Logged:
        def __init__(self):
            self.n = 2
            self.w = jnp.ones(2)

        def __setattr__(self, name, value):  # its own: so it cannot also be frozen
            object.__setattr__(self, name, value)

    pytree_class(Logged, static=("n",))
    old = Logged()
    treedef = jax.tree_util.tree_structure(old)
    with pytest.raises(TypeError, match=r"defines __setattr__ and asks for frozen=True"):
        pytree_class(Logged, frozen=True)
    assert jax.tree_util.tree_leaves(old) == [old.w]  # n still static
    assert jax.tree_util.tree_structure(old) == treedef
    assert jax.tree_util.tree_structure(Logged()) == treedef
    Logged().w = jnp.zeros(2)  # not frozen


def test_an_annotated_class_decorated_again_flattens_and_replaces():
    @pytree_class
    class Unused:
        w: jax.Array
        n: int = 2

    pytree_class(Unused, static=("n",))  # before any use: new static flags, fresh functions
    changed = pytreekit.replace(Unused(jnp.ones(1)), n=3)
    assert changed.n == 3 and jax.tree_util.tree_leaves(changed) == [changed.w]

    @pytree_class
    class Used:
        w: jax.Array
        n: int = 2

    leaves, treedef = jax.tree_util.tree_flatten(Used(jnp.ones(1)))
    pytree_class(Used)  # after use, with the same fields: old treedefs still read
    assert jax.tree_util.tree_unflatten(treedef, leaves).n == 2
    assert len(jax.tree_util.tree_leaves(Used(jnp.ones(1)))) == 2
    pytree_class(Used, static=("n",))  # other static flags: old treedefs carry their layout
    assert jax.tree_util.tree_unflatten(treedef, leaves).n == 2
    assert [leaf.tolist() for leaf in jax.tree_util.tree_leaves(Used(jnp.ones(1)))] == [[1.0]]


# -- treedefs as users read them (issue 34) --------------------------------------------------------


def _by_hand(name: str, node_data: Any) -> type:
    """A class named ``name`` with one child ``x``, registered by hand with ``node_data``."""
    cls = type(name, (), {"__init__": lambda self, x: setattr(self, "x", x)})
    jax.tree_util.register_pytree_node(
        cls, lambda o: ((o.x,), node_data), lambda _, children: cls(*children)
    )
    return cls


def test_an_annotated_class_without_static_fields_prints_as_one_registered_without_node_data():
    # Cases of JAX's tree_util tests (the string of a treedef holding custom nodes), with the
    # custom node a pytree class, against the same class registered by hand.
    @pytree_class
    class Point:
        x: Any

    Twin = _by_hand("Point", None)
    for make in (
        lambda cls: cls(1),
        lambda cls: [cls(1), (cls(2), None)],
        lambda cls: {"a": cls(cls(1)), "b": [cls(2)]},
        lambda cls: cls((1, {"c": 2})),
    ):
        ours, theirs = (
            jax.tree_util.tree_structure(make(Point)),
            jax.tree_util.tree_structure(make(Twin)),
        )
        assert str(ours) == str(theirs)
        assert ours.num_leaves == theirs.num_leaves and ours.num_nodes == theirs.num_nodes
    treedef = jax.tree_util.tree_structure(Point(1))
    assert str(treedef) == "PyTreeDef(CustomNode(Point[None], [*]))"
    # node_data(): the class and the aux data, (layout,), printed as None
    cls, aux = treedef.node_data()
    assert cls is Point and repr(aux) == "None" and aux == (aux[0],) and aux[0].names == ("x",)
    pickled = jax.tree_util.tree_structure(Bare(1))
    assert pickle.loads(pickle.dumps(pickled)) == pickled
    assert str(pickle.loads(pickle.dumps(pickled))).endswith("Bare[None], [*]))")


@pytree_class
class Bare:  # module level, so that pickle finds it
    x: Any


def _dataclass_twin(name: str, fields: dict[str, bool], optree: Any = None) -> type:
    """A dataclass named ``name`` with ``fields`` (name: static), registered by hand with
    ``jax.tree_util.register_dataclass`` (and with ``optree`` when given, its aux data the static
    values)."""
    cls = dataclasses.make_dataclass(name, list(fields))
    data = [n for n, s in fields.items() if not s]
    meta = [n for n, s in fields.items() if s]
    jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)
    if optree is not None:
        optree.register_pytree_node(
            cls,
            lambda o: ([getattr(o, n) for n in data], tuple(getattr(o, n) for n in meta), data),
            lambda aux, children: cls(
                **dict(zip(data, children, strict=True)), **dict(zip(meta, aux, strict=True))
            ),
            namespace="twins",
        )
    return cls


@pytree_class
class Tagged:  # module level, so that pickle finds it
    a: Any
    tag: str = field(static=True)
    b: Any = None
    n: int = field(static=True, default=2)


_TAGGED_FIELDS = {"a": False, "tag": True, "b": False, "n": True}
_MAKERS = (
    lambda cls: cls(1, "treedef", 2, 3),
    lambda cls: [cls(1, "x", 2, 3), (cls(2, ("y", 1), None, 4), None)],
    lambda cls: {"a": cls(cls(1, "in", 2, 3), "out", 2, 3), "b": [cls(2, "z", 3, 4)]},
)


def test_an_annotated_class_with_static_fields_prints_as_its_twin_in_optree():
    optree = pytest.importorskip("optree")

    @pytree_class(backends=("optree",))
    class Tagged:
        a: Any
        tag: str = field(static=True)
        b: Any = None
        n: int = field(static=True, default=2)

    Twin = _dataclass_twin("Tagged", _TAGGED_FIELDS, optree)
    for make in _MAKERS:
        assert str(optree.tree_structure(make(Tagged), namespace="pytreekit")) == str(
            optree.tree_structure(make(Twin), namespace="twins")
        ).replace("'twins'", "'pytreekit'")
    assert optree.tree_paths(Tagged(1, "t", 2), namespace="pytreekit") == [("a",), ("b",)]


def test_an_annotated_class_with_static_fields_prints_as_its_register_dataclass_twin():
    Twin = _dataclass_twin("Tagged", _TAGGED_FIELDS)
    for make in _MAKERS:
        ours, theirs = (
            jax.tree_util.tree_structure(make(Tagged)),
            jax.tree_util.tree_structure(make(Twin)),
        )
        assert str(ours) == str(theirs)
    treedef = jax.tree_util.tree_structure(Tagged(1, "treedef", 2, 3))
    assert str(treedef) == "PyTreeDef(CustomNode(Tagged[('treedef', 3)], [*, *]))"
    assert treedef.node_data() == (Tagged, ("treedef", 3))  # the static values, in field order
    # Equal exactly when the static values are, as register_dataclass's
    same, other = (jax.tree_util.tree_structure(Tagged(5, "treedef", 6, n)) for n in (3, 4))
    assert same == treedef and hash(same) == hash(treedef) and other != treedef
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    leaves = [jnp.ones(1), jnp.zeros(2)]
    rebuilt = jax.tree_util.tree_unflatten(pickle.loads(pickle.dumps(treedef)), leaves)
    assert (rebuilt.a, rebuilt.tag, rebuilt.b, rebuilt.n) == (leaves[0], "treedef", leaves[1], 3)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(rebuilt)]
    assert paths == [".a", ".b"]


@needs_from_node_data_and_children
def test_treedefs_written_with_the_layout_in_their_aux_data_still_unflatten():
    # Up to 0.4.0, the aux data of an annotated class with static fields was (layout, *statics):
    # a treedef pickled then still loads and unflattens (its layout interned now).
    leaves, treedef = jax.tree_util.tree_flatten(Tagged(1.0, "old", 2.0, 3))
    layout = Tagged.__pytreekit_spec__.table.primary
    old = jax.tree_util.PyTreeDef.from_node_data_and_children(
        jax.tree_util.default_registry, (Tagged, (layout, "old", 3)), treedef.children()
    )
    loaded = pickle.loads(pickle.dumps(old))
    assert (
        str(loaded) == "PyTreeDef(CustomNode(Tagged[(Layout(a, tag*, b, n*), 'old', 3)], [*, *]))"
    )
    rebuilt = jax.tree_util.tree_unflatten(loaded, leaves)
    assert (rebuilt.a, rebuilt.tag, rebuilt.b, rebuilt.n) == (1.0, "old", 2.0, 3)
    assert jax.tree_util.tree_structure(rebuilt) == treedef  # flattened as declared now
    with pytest.raises(TypeError, match=r"cannot unflatten .*Tagged from aux data \('old',\)"):
        forged = jax.tree_util.PyTreeDef.from_node_data_and_children(
            jax.tree_util.default_registry, (Tagged, ("old",)), treedef.children()
        )
        jax.tree_util.tree_unflatten(forged, leaves)


def test_a_class_decorated_again_with_other_fields_carries_its_layout():
    # Aux data that is static values alone means the layout the class first declared, for as long
    # as the class lives; a later decoration with other static flags carries its layout (short).
    @pytree_class
    class Again:
        w: Any
        n: int = field(static=True, default=2)
        k: int = 5

    leaves, first = jax.tree_util.tree_flatten(Again(1.0))
    assert str(first) == "PyTreeDef(CustomNode(Again[(2,)], [*, *]))"
    pytree_class(Again, static=("k",))
    leaves_now, now = jax.tree_util.tree_flatten(Again(1.0))
    assert str(now) == "PyTreeDef(CustomNode(Again[(Layout(w, n*, k*), 2, 5)], [*]))"
    old = jax.tree_util.tree_unflatten(first, leaves)  # still the first declaration's meaning
    assert (old.w, old.n, old.k) == (1.0, 2, 5)
    assert jax.tree_util.tree_structure(old) == now
    pytree_class(Again, static=())  # back to the first declaration: static values alone again
    assert jax.tree_util.tree_structure(Again(1.0)) == first
    again = jax.tree_util.tree_unflatten(now, leaves_now)
    assert (again.w, again.n, again.k) == (1.0, 2, 5)


def test_a_class_without_annotations_shows_its_short_layout_before_its_static_values():
    @pytree_class(static=("n",))
    class Learned:
        def __init__(self, w, n):
            self.w = w
            self.n = n

    treedef = jax.tree_util.tree_structure(Learned(1, 2))
    assert str(treedef) == "PyTreeDef(CustomNode(Learned[(Layout(w, n*), 2)], [*]))"
    cls, aux = treedef.node_data()  # (layout, *static values)
    assert cls is Learned and aux[1:] == (2,) and aux[0].static_names == ("n",)
