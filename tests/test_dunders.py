"""__eq__ (array-aware), __hash__ and __repr__."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pytreekit import field, pytree_class


@pytree_class
class Pair:
    a: jax.Array
    b: object = None
    tag: str = field(static=True, default="t")


@pytree_class(frozen=True)
class Key:
    name: str
    size: int = 0


def test_eq_is_array_aware_and_returns_a_bool():
    x = Pair(jnp.arange(3.0), [np.ones(2)])
    same = Pair(jnp.arange(3.0), [np.ones(2)])
    assert (x == same) is True
    assert (x == Pair(jnp.arange(3.0) + 1, [np.ones(2)])) is False
    assert (x == Pair(jnp.arange(4.0), [np.ones(2)])) is False  # other shape: no broadcasting
    assert (x == Pair(jnp.arange(3), [np.ones(2)])) is False  # other dtype
    assert (x == Pair(jnp.arange(3.0), [np.ones(2)], tag="u")) is False
    assert x != Pair(jnp.arange(3.0), {"k": np.ones(2)})
    assert (x == 3) is False


def test_eq_under_jit_gives_a_traced_bool():
    x = Pair(jnp.arange(3.0))
    result = jax.jit(lambda p, q: p == q)(x, x)
    assert bool(result) is True
    assert bool(jax.jit(lambda p, q: p == q)(x, Pair(jnp.zeros(3)))) is False


def test_eq_other_class_with_same_fields_is_not_equal():
    @pytree_class
    class Other:
        a: jax.Array
        b: object = None
        tag: str = field(static=True, default="t")

    assert Pair(jnp.ones(1)) != Other(jnp.ones(1))


def test_hash_rules():
    with pytest.raises(TypeError):
        hash(Pair(jnp.ones(1)))  # mutable with eq: unhashable, as with dataclasses
    assert hash(Key("a", 1)) == hash(Key("a", 1))
    assert len({Key("a"), Key("a"), Key("b")}) == 2

    @pytree_class(frozen=True)
    class Holds:
        w: jax.Array

    with pytest.raises(TypeError, match=r"Holds instances are hashable only when.*field 'w'"):
        hash(Holds(jnp.ones(2)))

    @pytree_class
    class OwnHash:
        x: int

        def __hash__(self):
            return 7

    assert hash(OwnHash(1)) == 7


def test_repr_summarises_arrays():
    text = repr(Pair(jnp.ones((3, 2)), {"k": np.zeros(4, dtype=np.int32)}))
    assert text == "Pair(a=f32[3,2], b={'k': i32[4]}, tag='t')"
    assert repr(Key("n")) == "Key(name='n', size=0)"


def test_repr_respects_field_repr_false_and_user_repr():
    @pytree_class
    class Hidden:
        x: int
        secret: str = field(repr=False, default="s")

    assert repr(Hidden(1)).endswith("<locals>.Hidden(x=1)")  # the qualified name, as dataclasses

    @pytree_class
    class Mine:
        x: int

        def __repr__(self):
            return "mine"

    assert repr(Mine(1)) == "mine"


def test_eq_false_keeps_identity_semantics():
    @pytree_class(eq=False)
    class Identity:
        x: jax.Array

    a = Identity(jnp.ones(1))
    assert a != Identity(jnp.ones(1)) and a == a and isinstance(hash(a), int)


@pytest.mark.parametrize("annotated", [True, False])
def test_eq_and_repr_handle_nesting_deeper_than_jax_flattens(annotated):
    if annotated:

        @pytree_class
        class Node:
            child: object = None
            value: int = 0

    else:

        @pytree_class
        class Node:
            def __init__(self, child=None, value=0):
                self.child = child
                self.value = value

    def chain(depth, last=0):
        node = None
        for i in range(depth):
            node = Node(node, i if i < depth - 1 else last)
        return node

    depth = 900  # JAX's own flatten works at this depth; comparison must too
    assert len(jax.tree_util.tree_leaves(chain(depth))) == depth
    assert chain(depth) == chain(depth) and chain(depth) != chain(depth, last=-1)
    text = repr(chain(depth))
    assert text.startswith("Node(child=Node(") or ".Node(child=" in text
    assert text.count("value=") == depth
    looped = Node()
    looped.child = looped
    assert repr(looped).endswith("Node(child=..., value=0)")
