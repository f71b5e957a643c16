"""Classes without annotations: the field rule, layouts in fresh processes and under threads."""

import copy
import functools
import inspect
import pickle
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _versions import needs_from_node_data_and_children
from conftest import ROOT, require, run_fresh, run_threads
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.tree_util import GetAttrKey
from quickstart import Linear

import pytreekit
from pytreekit import pytree_class


def _run_fresh(script, *args):
    """Run ``script`` in a new interpreter that has built no instance of anything."""
    return run_fresh(script, *args, pythonpath=[*_FIXTURE_PATH, ROOT, ROOT / "examples"])


def test_pickled_treedef_unflattens_in_a_fresh_process(tmp_path):
    model = [Linear(jax.random.PRNGKey(0), 3, 2), Linear(jax.random.PRNGKey(1), 2, 2)]
    leaves, treedef = jax.tree_util.tree_flatten(model)
    path = tmp_path / "treedef.pkl"
    path.write_bytes(pickle.dumps((treedef, [np.asarray(x) for x in leaves])))
    out = _run_fresh(
        """
        import pickle, sys
        import jax, numpy as np
        import quickstart
        calls = []
        init = quickstart.Linear.__init__
        quickstart.Linear.__init__ = lambda *a, **k: calls.append(a) or init(*a, **k)
        treedef, leaves = pickle.loads(open(sys.argv[1], "rb").read())
        model = jax.tree_util.tree_unflatten(treedef, leaves)
        assert calls == [], calls
        x = np.ones((4, 3), np.float32)
        print(repr(np.asarray(model[1](model[0](x))).sum().item()), model[0].in_features)
        assert jax.tree_util.tree_structure(model) == treedef
        """,
        path,
    )
    expected = float(np.asarray(model[1](model[0](np.ones((4, 3), np.float32)))).sum())
    value, in_features = out.split()
    assert float(value) == pytest.approx(expected, rel=1e-6) and in_features == "3"


def test_pickled_instance_keeps_its_layout_in_a_process_whose_first_layout_differs(tmp_path):
    from layouts_fixture import Optional

    with_bias = Optional(2, bias=True)
    path = tmp_path / "instance.pkl"
    path.write_bytes(pickle.dumps(with_bias))
    out = _run_fresh(
        """
        import pickle, sys
        import jax
        from layouts_fixture import Optional
        Optional(3, bias=False)  # this process's first layout has no bias
        loaded = pickle.loads(open(sys.argv[1], "rb").read())
        names = [f.name for f in __import__("pytreekit").fields(loaded)]
        print(len(jax.tree_util.tree_leaves(loaded)), names)
        """,
        path,
    )
    assert out.split("\n")[0] == "2 ['size', 'w', 'b']"


FIXTURE = '''
"""A module fresh processes can import: a class whose instances may set an optional attribute."""
import jax.numpy as jnp
from pytreekit import pytree_class


@pytree_class(static=("size",))
class Optional:
    def __init__(self, size, bias):
        self.size = size
        self.w = jnp.ones(size)
        if bias:
            self.b = jnp.zeros(size)

    def __call__(self, x):
        out = self.w * x
        return out + self.b if hasattr(self, "b") else out
'''


@pytest.fixture(autouse=True, scope="module")
def _fixture_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layouts_fixture")
    (folder / "layouts_fixture.py").write_text(FIXTURE)
    sys.path.insert(0, str(folder))
    _FIXTURE_PATH[:] = [str(folder)]
    yield
    sys.path.remove(str(folder))
    sys.modules.pop("layouts_fixture", None)


_FIXTURE_PATH: list[str] = []


def test_exported_function_of_unannotated_instances_runs_in_a_fresh_process(tmp_path):
    path = tmp_path / "exported.bin"
    _run_fresh(
        """
        import sys
        import jax, jax.numpy as jnp
        from jax import export
        from layouts_fixture import Optional
        step = jax.jit(lambda m, x: (m(x).sum(), jax.tree_util.tree_map(lambda a: a * 2, m)))
        model = Optional(3, bias=True)
        exported = export.export(step)(model, jnp.ones(3))
        open(sys.argv[1], "wb").write(exported.serialize())
        """,
        path,
    )
    out = _run_fresh(
        """
        import sys
        import jax.numpy as jnp
        from jax import export
        from layouts_fixture import Optional
        exported = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
        model = Optional(3, bias=False)  # this process's first layout has no bias
        biased = Optional(3, bias=True)
        total, doubled = exported.call(biased, jnp.full(3, 2.0))
        print(float(total), doubled.b.tolist(), doubled.size, type(doubled).__name__)
        """,
        path,
    )
    assert out.split() == ["6.0", "[0.0,", "0.0,", "0.0]", "3", "Optional"]


# -- the field rule -------------------------------------------------------------------------------


def _views(obj):
    """Every view of an instance's fields, which must all agree with flatten."""
    paths = [p[0].name for p, _ in jax.tree_util.tree_flatten_with_path(obj)[0]]
    names = [f.name for f in pytreekit.fields(obj)]
    statics = [f.name for f in pytreekit.fields(obj) if f.static]
    return names, paths, statics


def test_attributes_set_after_init_are_in_no_view():
    @pytree_class
    class Later:
        def __init__(self):
            self.w = jnp.ones(2)

        @functools.cached_property
        def norm(self):
            return jnp.linalg.norm(self.w)

    obj = Later()
    float(obj.norm)
    obj.note = jnp.zeros(3)
    names, paths, _ = _views(obj)
    assert names == paths == ["w"]
    assert "note" not in repr(obj) and "norm" not in repr(obj)
    other = Later()
    assert obj == other  # the extra attribute is not compared either
    for clone in (copy.copy(obj), copy.deepcopy(obj)):
        assert _views(clone)[0] == ["w"] and clone == obj
    rebuilt = jax.tree_util.tree_map(lambda x: x, obj)
    assert not hasattr(rebuilt, "note")


def test_equality_does_not_depend_on_assignment_order():
    @pytree_class
    class Either:
        def __init__(self, flip):
            if flip:
                self.b = jnp.ones(1)
                self.a = jnp.zeros(1)
            else:
                self.a = jnp.zeros(1)
                self.b = jnp.ones(1)

    assert Either(True) == Either(False)
    assert _views(Either(True))[0] == ["b", "a"]  # each instance's fields in its own order


def test_static_names_that_only_some_instances_set():
    @pytree_class(static=("activation", "size"))
    class Layer:
        def __init__(self, size, activation=None):
            self.size = size
            self.w = jnp.ones(size)
            if activation is not None:
                self.activation = activation

    plain, activated = Layer(2), Layer(2, jnp.tanh)
    assert _views(plain)[2] == ["size"]
    assert _views(activated)[2] == ["size", "activation"]
    for obj in (plain, activated):
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        assert len(leaves) == 1
        assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
    with pytest.raises(TypeError, match=r"Layer.activation is a static field.*list"):
        Layer(2, [1])


def test_attribute_names_that_are_not_identifiers_are_refused_at_construction():
    @pytree_class
    class Sequential:
        def __init__(self):
            setattr(self, "layer-1", jnp.ones(2))

    with pytest.raises(
        TypeError, match=r"Sequential: attribute 'layer-1' is not a Python identifier"
    ):
        Sequential()


@pytest.mark.parametrize(
    ("stored", "normal"),
    [("\u00b5", "\u03bc"), ("\ufb01", "fi"), ("\u212a", "K"), ("\uff57", "w")],
)
def test_attribute_names_python_would_spell_otherwise_are_refused(stored, normal):
    # setattr keeps the string as given; the generated code, like any `obj.name` in source, names
    # its NFKC form: the value would be read and written under another name, or lost to a twin.
    @pytree_class
    class Params:
        def __init__(self, params):
            for key, value in params.items():
                setattr(self, key, value)

    with pytest.raises(TypeError, match="Params: attribute") as refused:
        Params({stored: 1.0, normal: 2.0})
    assert ascii(stored) in str(refused.value) and ascii(normal) in str(refused.value)
    assert jax.tree_util.tree_leaves(Params({normal: 2.0})) == [2.0]  # the normal form is a field


def test_static_names_are_read_as_python_reads_identifiers():
    @pytree_class(static=("\u00b5",))  # MICRO SIGN, as typed; `self.µ` in source is GREEK MU
    class Scaled:
        def __init__(self, mu, w):
            self.µ = mu
            self.w = w

    scaled = Scaled(2, jnp.ones(1))
    assert [(f.name, f.static) for f in pytreekit.fields(scaled)] == [
        ("\u03bc", True),
        ("w", False),
    ]
    assert len(jax.tree_util.tree_leaves(scaled)) == 1


def test_deleted_field_leaves_every_view():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    del linear.biases
    names, paths, _ = _views(linear)
    assert names == ["in_features", "out_features", "weights"] and paths == ["weights"]
    assert "biases" not in repr(linear)


def test_slotted_instances_a_slot_is_a_field_while_it_holds_a_value():
    @pytree_class
    class Slots:
        __slots__ = ("a", "b")

        def __init__(self):
            self.a = jnp.ones(1)

    obj = Slots()
    assert _views(obj)[0] == ["a"]
    obj.b = jnp.ones(2)  # no __dict__ to record what __init__ set: the slots say it
    names, paths, _ = _views(obj)
    assert names == paths == ["a", "b"] and pytreekit.replace(obj, b=jnp.zeros(2)).b.sum() == 0


def test_layouts_pickle_to_the_interned_layout():
    treedef = jax.tree_util.tree_structure(Linear(jax.random.PRNGKey(0), 3, 2))
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    layout = treedef.node_data()[1][0]
    assert pickle.loads(pickle.dumps(layout)) is layout


# -- hypothesis: dict, slotted and mixed classes, instances setting different attributes ---------

_NAMES = ("a", "b", "c", "d", "e")


_STATICS = ((), ("a",), ("b", "c"))


def _class(kind, static):
    def __init__(self, present):
        for name, value in present:
            setattr(self, name, value)

    name = f"Kind_{kind}_{'_'.join(static) or 'none'}"
    namespace = {"__init__": __init__, "__qualname__": name}
    if kind == "slots":
        namespace["__slots__"] = _NAMES
    elif kind == "mixed":
        namespace["__slots__"] = ("a", "b", "__dict__")
    cls = pytree_class(type(name, (), namespace), static=static)
    globals()[name] = cls  # picklable by reference, as a class at module level is
    return cls


_CLASSES = {
    (kind, static): _class(kind, static)
    for kind in ("dict", "slots", "mixed")
    for static in _STATICS
}


@st.composite
def _instances(draw):
    (_kind, static), cls = draw(st.sampled_from(list(_CLASSES.items())))
    objects = []
    for _ in range(draw(st.integers(1, 4))):
        names = draw(st.permutations(_NAMES))[: draw(st.integers(0, len(_NAMES)))]
        present = [
            (n, draw(st.integers(-3, 3)) if n in static else jnp.full(2, draw(st.integers(-3, 3))))
            for n in names
        ]
        objects.append((cls(present), dict(present)))
    return objects


@settings(max_examples=60, deadline=None)
@given(_instances())
def test_round_trips_of_instances_with_different_attributes(objects):
    for obj, values in objects:
        names, paths, statics = _views(obj)
        assert set(names) == set(values)
        assert paths == [n for n in names if n not in statics]
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
        assert rebuilt == obj and _views(rebuilt) == (names, paths, statics)
        for name, value in values.items():
            np.testing.assert_array_equal(getattr(rebuilt, name), value)
        assert jax.tree_util.tree_structure(rebuilt) == treedef
        assert pickle.loads(pickle.dumps(treedef)) == treedef
        for clone in (pytreekit.replace(obj), copy.copy(obj), pickle.loads(pickle.dumps(obj))):
            assert clone == obj and jax.tree_util.tree_structure(clone) == treedef


# -- threads ---------------------------------------------------------------------------------------


def _fresh_classes(count):
    classes = []
    for index in range(count):
        width = 300 if index % 4 == 0 else 3
        names = [f"x{i}" for i in range(width)]

        def __init__(self, seed, names=names):
            for i, name in enumerate(names):
                if (seed + i) % 5 or i == 0:  # instances differ in which attributes they set
                    setattr(self, name, np.float32(seed * 1000 + i))

        kind = ("dict", "slots", "mixed")[index % 3]
        namespace = {"__init__": __init__}
        if kind == "slots":
            namespace["__slots__"] = tuple(names)
        elif kind == "mixed":
            namespace["__slots__"] = (names[0], "__dict__")
        classes.append(pytree_class(type(f"Threaded{index}", (), namespace), static=("x1",)))
    return classes


def test_threads_building_flattening_and_unflattening_first_instances():
    classes = _fresh_classes(24)
    errors = []
    barrier = threading.Barrier(8)

    def work(thread_index):
        try:
            barrier.wait()
            for round_index in range(6):
                for cls in classes:
                    seed = thread_index * 7 + round_index
                    obj = cls(seed)
                    expected = {f.name: getattr(obj, f.name) for f in pytreekit.fields(obj)}
                    leaves, treedef = jax.tree_util.tree_flatten(obj)
                    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
                    got = {f.name: getattr(rebuilt, f.name) for f in pytreekit.fields(rebuilt)}
                    assert got == expected, (cls.__name__, sorted(set(expected) ^ set(got)))
                    assert len(leaves) == len(expected) - ("x1" in expected)
        except BaseException as error:  # reported below, with the thread
            errors.append((thread_index, repr(error)))

    run_threads([functools.partial(work, i) for i in range(8)])
    assert errors == []
    for cls in classes:  # later single-threaded instances are right too
        for seed in range(5):
            obj = cls(seed)
            leaves, treedef = jax.tree_util.tree_flatten(obj)
            assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
            names = [f.name for f in pytreekit.fields(obj)]
            assert all(getattr(obj, n) == seed * 1000 + int(n[1:]) for n in names)


def test_key_paths_follow_each_instance_layout():
    from layouts_fixture import Optional

    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(Optional(2, True))[0]]
    assert paths == [(GetAttrKey("w"),), (GetAttrKey("b"),)]


# -- recognising the first layout without reading __dict__ (nodes._is_primary_source) -----------


def test_same_number_of_attributes_with_other_names_is_another_layout():
    @pytree_class
    class Swap:
        b = 0.0  # a class attribute named like a field: the count check alone would be fooled

        def __init__(self, other):
            self.a = jnp.ones(1)
            if other:
                self.c = jnp.ones(2)
            else:
                self.b = jnp.ones(3)

    first, second = Swap(False), Swap(True)
    assert _views(first)[0] == ["a", "b"] and _views(second)[0] == ["a", "c"]
    assert [x.shape for x in jax.tree_util.tree_leaves(second)] == [(1,), (2,)]


def test_single_field_instances_whose_init_read_the_instance_dict():
    @pytree_class
    class Peek:
        def __init__(self, extra):
            self.a = jnp.ones(1)
            vars(self)  # materialises the instance dict: one referent, whatever it holds
            if extra:
                self.z = jnp.ones(2)

    Peek(False)
    assert _views(Peek(True))[0] == ["a", "z"]
    assert len(jax.tree_util.tree_leaves(Peek(True))) == 2


def test_unhashable_static_value_is_reported_for_the_first_layout_too():
    @pytree_class(static=("size",))
    class Sized:
        def __init__(self, size):
            self.size = size
            self.w = jnp.ones(2)

    Sized(2)
    with pytest.raises(TypeError, match=r"Sized.size is a static field.*list"):
        Sized([2])


# -- classes pickled by value ----------------------------------------------------------------------


def test_cloudpickled_instances_of_local_classes_arrive_registered(tmp_path):
    cloudpickle = require("cloudpickle")

    def make():
        @pytree_class(static=("n",))
        class Local:
            def __init__(self, n, bias):
                self.n = n
                self.w = jnp.arange(n, dtype=jnp.float32)
                if bias:
                    self.b = jnp.ones(n)

            def __call__(self, x):
                return (self.w * x).sum()

        @pytree_class(frozen=True)
        class LocalAnnotated:
            a: jax.Array
            k: int = pytreekit.field(static=True, default=2)

        return Local(3, False), Local(2, True), LocalAnnotated(jnp.ones(2))

    path = tmp_path / "objects.pkl"
    path.write_bytes(cloudpickle.dumps(make()))
    out = _run_fresh(
        """
        import pickle, sys
        import jax
        import pytreekit
        plain, biased, annotated = pickle.loads(open(sys.argv[1], "rb").read())
        assert pytreekit.is_pytree_class(plain) and type(plain) is type(biased)
        print(jax.grad(lambda m: m(2.0))(plain).w.tolist())
        print(len(jax.tree_util.tree_leaves(biased)), jax.tree_util.tree_leaves(annotated))
        leaves, treedef = jax.tree_util.tree_flatten(annotated)
        assert jax.tree_util.tree_unflatten(treedef, leaves) == annotated
        again = pickle.loads(open(sys.argv[1], "rb").read())  # the same class, tracked
        assert type(again[0]) is type(plain)
        """,
        path,
    )
    lines = out.splitlines()
    assert lines[0] == "[2.0, 2.0, 2.0]"
    assert lines[1].startswith("2 [Array([1., 1.], dtype=float32)]")


@pytree_class
class OwnPickling:
    def __init__(self, w, cache):
        self.w = w
        self.cache = cache

    def __getstate__(self):  # the class's own pickling: the cache is not sent
        return {"w": self.w}

    def __setstate__(self, state):
        self.__dict__.update(state, cache=None)


def test_class_defining_its_own_pickling_keeps_it():
    obj = OwnPickling(np.ones(2, np.float32), cache=np.zeros(4))
    for again in (pickle.loads(pickle.dumps(obj)), copy.copy(obj)):
        assert again.cache is None and again.w.tolist() == [1.0, 1.0]


def test_instances_of_a_class_cloudpickled_in_another_process_arrive_registered(tmp_path):
    require("cloudpickle")
    path = tmp_path / "objects.pkl"
    _run_fresh(
        """
        import sys
        import cloudpickle
        import jax.numpy as jnp
        from pytreekit import pytree_class

        def make():
            @pytree_class(static=("n",))
            class Remote:
                def __init__(self, n, bias):
                    self.n = n
                    self.w = jnp.arange(n, dtype=jnp.float32)
                    if bias:
                        self.b = jnp.ones(n)

            return Remote(3, False), Remote(2, True)

        open(sys.argv[1], "wb").write(cloudpickle.dumps(make()))
        """,
        path,
    )
    # Unpickling the class here meets its first-layout attribute before the class is registered.
    plain, biased = pickle.loads(path.read_bytes())
    assert type(plain) is type(biased) and pytreekit.is_pytree_class(plain)
    assert [(f.name, f.static) for f in pytreekit.fields(biased)] == [
        ("n", True),
        ("w", False),
        ("b", False),
    ]
    for obj, leaves in ((plain, [[0.0, 1.0, 2.0]]), (biased, [[0.0, 1.0], [1.0, 1.0]])):
        flat, treedef = jax.tree_util.tree_flatten(obj)
        assert [leaf.tolist() for leaf in flat] == leaves
        assert jax.tree_util.tree_unflatten(treedef, flat) == obj
    assert jax.tree_util.tree_structure(plain) != jax.tree_util.tree_structure(biased)


# -- the wrapped __init__ -------------------------------------------------------------------------


def test_a_frozen_subclass_init_assigns_after_calling_the_wrapped_base_init():
    @pytree_class(frozen=True)
    class Base:
        def __init__(self, x):
            self.x = x

    class Child(Base):
        def __init__(self, x, y):
            super().__init__(x)
            self.y = y  # still initialising: the base's wrapper did not end it

    c = Child(1.0, 2.0)
    assert (c.x, c.y) == (1.0, 2.0)
    assert [f.name for f in pytreekit.fields(c)] == ["x", "y"]
    with pytest.raises(pytreekit.FrozenInstanceError):
        c.y = 3.0


def test_the_wrapped_init_keeps_the_signature_and_docstring_and_takes_the_class_module():
    namespace = {"__name__": "elsewhere"}
    exec("def init(self, x, y=2):\n    'Set x and y.'\n    self.x, self.y = x, y\n", namespace)

    Plain = pytree_class(type("Plain", (), {"__init__": namespace["init"]}))
    assert str(inspect.signature(Plain)) == "(x, y=2)"
    assert Plain.__init__.__doc__ == "Set x and y."
    assert Plain.__init__.__module__ == Plain.__module__ == __name__
    assert Plain.__init__.__qualname__ == "Plain.__init__"


@pytree_class
class Repickled:  # module level, so that pickle finds it
    def __init__(self, n):
        self.n = n


def test_a_pickled_instance_loads_into_the_class_as_declared_now():
    data = pickle.dumps(Repickled(1))  # n is a leaf
    pytree_class(Repickled, static=("n",))
    assert jax.tree_util.tree_leaves(Repickled(1)) == []
    # Its values load; which of them are static is what the class declares now (issue 34).
    loaded = pickle.loads(data)
    assert loaded.n == 1 and jax.tree_util.tree_leaves(loaded) == []


def test_instances_pickled_by_pytreekit_020_load_with_their_fields_and_layouts():
    # tests/pickled_by_020.py says how they were written. A fresh process: the class has seen no
    # instance before these, of either layout.
    printed = _run_fresh(
        """
        import pickle, sys
        sys.path.insert(0, sys.argv[1])
        import jax
        from pickled_by_020 import PICKLED

        plain, varied = pickle.loads(PICKLED)
        doubled = jax.tree.map(lambda x: x * 2, varied)
        print(repr((jax.tree.leaves(plain), jax.tree.leaves(varied), vars(doubled)["extra"],
                    doubled.mode)))
        """,
        ROOT / "tests",
    )
    assert eval(printed) == ([1.0], [2.0, 3.0], 6.0, "scaled")


# -- instances of several layouts (moved from test_nodes.py: one file for layouts) --------


def test_instances_whose_init_sets_other_attributes_get_their_own_treedef():
    @pytree_class(static=("size",))
    class Growing:
        def __init__(self, size, cached=False):
            self.size = size
            self.w = jnp.ones(size)
            if cached:
                self.cache = jnp.zeros(5)

    plain = Growing(2)
    assert len(jax.tree_util.tree_leaves(plain)) == 1
    extended = Growing(2, cached=True)
    leaves, treedef = jax.tree_util.tree_flatten(extended)
    assert len(leaves) == 2
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt.cache.shape == (5,) and rebuilt.size == 2 and rebuilt == extended
    assert jax.tree_util.tree_structure(plain) != treedef
    assert len(jax.tree_util.tree_leaves(Growing(3))) == 1
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(extended)[0]]
    assert paths == [(GetAttrKey("w"),), (GetAttrKey("cache"),)]
    assert jax.jit(lambda g: g)(extended) == extended


def test_attributes_set_after_init_are_not_fields():
    @pytree_class
    class Later:
        def __init__(self):
            self.w = jnp.ones(2)

    obj = Later()
    obj.note = "set by a method"
    assert [f.name for f in pytreekit.fields(Later())] == ["w"]
    assert not hasattr(jax.tree_util.tree_map(lambda x: x, obj), "note")


def test_deleted_attribute_gives_its_own_treedef():
    @pytree_class
    class Pair:
        def __init__(self):
            self.a = jnp.ones(1)
            self.b = jnp.ones(2)

    pair = Pair()
    del pair.b
    leaves, treedef = jax.tree_util.tree_flatten(pair)
    assert len(leaves) == 1
    assert not hasattr(jax.tree_util.tree_unflatten(treedef, leaves), "b")


def test_private_attributes_do_not_change_the_treedef():
    @pytree_class
    class WithCache:
        def __init__(self, private):
            self.w = jnp.ones(2)
            if private:
                self.__memo = {}

    assert jax.tree_util.tree_structure(WithCache(True)) == jax.tree_util.tree_structure(
        WithCache(False)
    )


def test_slots_instances_that_leave_a_slot_unset():
    @pytree_class
    class Optional:
        __slots__ = ("a", "b")

        def __init__(self, with_b):
            self.a = jnp.ones(1)
            if with_b:
                self.b = jnp.ones(2)

    full, partial = Optional(True), Optional(False)
    assert len(jax.tree_util.tree_leaves(full)) == 2
    leaves, treedef = jax.tree_util.tree_flatten(partial)
    assert len(leaves) == 1
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert not hasattr(rebuilt, "b") and rebuilt == partial
    assert jax.tree_util.tree_structure(full) != treedef


def _varied():
    """A class whose first instance has fields (tag, w) and whose second also has b and c."""

    @pytree_class(static=("tag",))
    class Varied:
        def __init__(self, extra):
            self.tag = "t"
            self.w = jnp.ones(1)
            if extra:
                self.b = jnp.full(2, 2.0)
                self.c = jnp.full(3, 3.0)

    return Varied, Varied(False), Varied(True)


def test_field_deleted_from_an_instance_of_a_second_layout_leaves_its_treedef():
    _, _, obj = _varied()
    del obj.b
    leaves, treedef = jax.tree_util.tree_flatten(obj)
    assert [leaf.tolist() for leaf in leaves] == [[1.0], [3.0, 3.0, 3.0]]
    assert [(f.name, f.static) for f in pytreekit.fields(obj)] == [
        ("tag", True),
        ("w", False),
        ("c", False),
    ]
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert not hasattr(rebuilt, "b") and rebuilt.tag == "t" and rebuilt == obj


def test_replace_checks_static_values_of_an_instance_of_a_second_layout():
    _, _, obj = _varied()
    with pytest.raises(TypeError, match=r"Varied.tag is a static field.*list"):
        pytreekit.replace(obj, tag=["not", "hashable"])
    assert pytreekit.replace(obj, tag="u").tag == "u"


def test_names_flatten_of_an_instance_of_a_second_layout():
    # The flatten handed to optree: children, aux data and the children's names.
    optree = require("optree")
    Varied, _, obj = _varied()
    pytreekit.register_backend(Varied, "optree")
    leaves, treedef = optree.tree_flatten(obj, namespace="pytreekit")
    paths = optree.tree_paths(obj, namespace="pytreekit")
    assert paths == [("w",), ("b",), ("c",)]
    assert [leaf.tolist() for leaf in leaves] == [[1.0], [2.0, 2.0], [3.0, 3.0, 3.0]]
    assert optree.tree_unflatten(treedef, leaves) == obj


@needs_from_node_data_and_children
def test_unflatten_refuses_aux_data_of_another_class():
    Varied, plain, _ = _varied()
    _, other, _ = _varied()
    treedef = jax.tree_util.tree_structure(plain)
    foreign = jax.tree_util.tree_structure(other).node_data()[1]
    forged = jax.tree_util.PyTreeDef.from_node_data_and_children(
        jax.tree_util.default_registry, (Varied, foreign), treedef.children()
    )
    with pytest.raises(TypeError, match=r"cannot unflatten .*\.Varied from aux data .*not made"):
        jax.tree_util.tree_unflatten(forged, [jnp.ones(1)])


def test_unflatten_refuses_aux_data_that_is_not_a_tuple():
    Varied, _, second = _varied()
    nodes = Varied.__pytreekit_spec__.nodes
    aux = [nodes.table.layout_of(second), "t"]  # the right contents, in a list
    with pytest.raises(TypeError, match=r"cannot unflatten .*\.Varied from aux data \[Layout\("):
        nodes.unflatten(aux, [jnp.ones(1), jnp.ones(2), jnp.ones(3)])


@pytest.mark.parametrize("used", [False, True], ids=["unused", "used"])
def test_a_table_used_before_it_is_published_keeps_carrying_its_layout(used):
    # A class decorated again while a thread flattens it through the registries, which follow
    # the new table before it is published: the aux data that thread made carries the layout,
    # so the table's stays so. It declares its layout all the same, as it does in a process
    # where no thread used it first: what static values alone mean is the same in both.
    from pytreekit._classes import layouts

    @pytree_class
    class C:  # no static fields: no layout of it is declared yet
        w: float
        n: int = 1

    first = C.__pytreekit_spec__.table
    second = layouts.table_for(C, layouts.records(("w", "n"), (False, True)), (), {})
    if used:
        second.first_use()
    layouts.publish(second)
    assert second.primary.plain is not used
    assert second.declared() is second.primary
    layouts.publish(first)
