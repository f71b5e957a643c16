"""Generated flatten/unflatten: round trips (hypothesis), layouts of unannotated classes, slots."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
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


def test_missing_field_is_named_on_flatten():
    @pytree_class
    class Unset:
        w: jax.Array = field(init=False)

    with pytest.raises(AttributeError, match=r"Unset.w is a field but this instance has no value"):
        jax.tree_util.tree_flatten(Unset())


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
