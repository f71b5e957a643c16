"""__eq__ (array-aware), __hash__ and __repr__."""

import dataclasses
from typing import Any

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


# -- __eq__: containers, leaves that are not arrays, instances without annotations -------------


def test_eq_walks_lists_tuples_and_dicts_element_by_element():
    w = jnp.ones(2)
    assert Pair(w, {"k": np.ones(2), "j": [1]}) == Pair(w, {"j": [1], "k": np.ones(2)})
    assert Pair(w, {"k": np.ones(2)}) != Pair(w, {"k": np.zeros(2)})
    assert Pair(w, {"k": 1}) != Pair(w, {"j": 1})  # other keys
    assert (Pair(w, {"k": 1}) == Pair(w, {"j": 1})) is False  # a bool, not merely falsy
    assert Pair(w, [1, 2]) != Pair(w, (1, 2))  # a list is not a tuple, as in Python
    assert Pair(w, [1, 2]) != Pair(w, [1, 2, 3])
    assert Pair(w, (np.ones(1), 2)) == Pair(w, (np.ones(1), 2))


def test_eq_of_an_array_and_a_non_array_is_false():
    assert (Pair(jnp.ones(2)) == Pair([1.0, 1.0])) is False
    assert (Pair(jnp.ones(2), 1.0) == Pair(jnp.ones(2), np.ones(()))) is False


class _AllClose:
    """A leaf whose own __eq__ answers with a NumPy boolean, as ``(a == b).all()`` does."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __eq__(self, other):
        return (self.values == other.values).all()


class _Elementwise(_AllClose):
    def __eq__(self, other):
        return self.values == other.values


class _JaxAll(_AllClose):
    def __eq__(self, other):
        return jnp.all(jnp.asarray(self.values) == jnp.asarray(other.values))


class _Truthy(_AllClose):
    def __eq__(self, other):
        return int(np.array_equal(self.values, other.values))  # 1 or 0, not a bool


@pytest.mark.parametrize("leaf", [_AllClose, _Elementwise, _JaxAll, _Truthy])
def test_eq_turns_a_leafs_own_non_bool_answer_into_a_python_bool(leaf):
    # A NumPy or JAX boolean, an elementwise array or an int from a leaf's __eq__ is reduced to
    # a Python bool, as for arrays (not passed on as np.True_ or a JAX array).
    x = Pair(jnp.ones(1), leaf([1, 2]))
    assert (x == Pair(jnp.ones(1), leaf([1, 2]))) is True
    assert (x == Pair(jnp.ones(1), leaf([1, 3]))) is False


def test_eq_under_jit_keeps_a_nested_instances_own_traced_answer():
    @pytree_class
    class Approx:
        v: jax.Array

        def __eq__(self, other):
            return jnp.all(jnp.abs(self.v - other.v) < 0.5)

        __hash__ = None  # type: ignore[assignment]

    x = Pair(jnp.ones(2), Approx(jnp.ones(3)))
    eq = jax.jit(lambda p, q: p == q)
    assert bool(eq(x, Pair(jnp.ones(2), Approx(jnp.ones(3) + 0.1)))) is True
    assert bool(eq(x, Pair(jnp.ones(2), Approx(jnp.ones(3) + 1.0)))) is False
    assert bool(eq(x, Pair(jnp.zeros(2), Approx(jnp.ones(3))))) is False


@pytree_class
class Attrs:
    """Without annotations: the fields are what __init__ sets."""

    def __init__(self, x, **more):
        self.x = x
        for name, value in more.items():
            setattr(self, name, value)


def test_eq_without_annotations_compares_the_attributes_each_instance_set():
    assert Attrs(jnp.ones(2), y=1) == Attrs(jnp.ones(2), y=1)
    assert Attrs(jnp.ones(2), y=1) != Attrs(jnp.ones(2), y=2)
    # Different sets of attributes: unequal without comparing any value.
    assert (Attrs(1, y=1) == Attrs(1)) is False
    assert (Attrs(1, y=1) == Attrs(1, z=1)) is False
    assert (Attrs(1) == Pair(1)) is False


# -- __hash__ ------------------------------------------------------------------------------------


@pytest.mark.parametrize("own_hash", [False, True], ids=["no __hash__", "own __hash__"])
@pytest.mark.parametrize("frozen", [False, True], ids=["mutable", "frozen"])
@pytest.mark.parametrize("eq", [False, True], ids=["eq=False", "eq=True"])
def test_hash_is_decided_as_dataclasses_decides_it(eq, frozen, own_hash):
    def make(decorate):
        body = {"__annotations__": {"x": float}}
        if own_hash:
            body["__hash__"] = lambda self: 7
        return decorate(type("Point", (), body))

    def behaviour(cls):
        a, b = cls(1.0), cls(1.0)
        if cls.__hash__ is None:
            return "unhashable"
        if hash(a) == 7:
            return "its own"
        return "by value" if hash(a) == hash(b) else "by identity"

    reference = make(dataclasses.dataclass(eq=eq, frozen=frozen))
    ours = make(pytree_class(eq=eq, frozen=frozen))
    assert behaviour(ours) == behaviour(reference)


@pytree_class(frozen=True)
class FrozenAttrs:
    def __init__(self, x, y=None):
        self.x = x
        self.y = y


def test_hash_without_annotations_hashes_the_attribute_values():
    assert hash(FrozenAttrs(1, "a")) == hash(FrozenAttrs(1, "a"))
    assert len({FrozenAttrs(1, "a"), FrozenAttrs(1, "a"), FrozenAttrs(1, "b")}) == 2
    assert len({hash(FrozenAttrs(x, 0)) for x in range(5)}) == 5  # the values make the hash
    with pytest.raises(TypeError) as error:
        hash(FrozenAttrs(1, [2]))
    assert str(error.value).startswith(
        "FrozenAttrs instances are hashable only when the fields they compare are, but field 'y' "
        "holds a list ([2])."
    )
    assert "define __hash__ on the class" in str(error.value)


def test_hash_passes_on_a_type_error_no_field_reproduces():
    class Flaky:
        """Raises TypeError on its first hash only (say, state another thread then changed)."""

        calls = 0

        def __hash__(self):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise TypeError("not yet hashable")
            return 0

    with pytest.raises(TypeError, match=r"^not yet hashable$"):
        hash(Key(Flaky()))  # type: ignore[arg-type]
    assert Flaky.calls == 2  # the second look found every field hashable


# -- __repr__ ------------------------------------------------------------------------------------


def test_repr_names_dtypes_numpy_cannot_interpret_and_other_kinds():
    key = jax.random.key(0)
    assert repr(Pair(key, jax.random.split(key, 3))) == "Pair(a=key<fry>[], b=key<fry>[3], tag='t')"
    assert (
        repr(Pair(np.array([True]), np.array(["ab", "c"])))
        == "Pair(a=bool[1], b=str64[2], tag='t')"
    )
    assert repr(Pair(jnp.zeros(2, jnp.bfloat16), np.zeros((), np.complex64))) == (
        "Pair(a=bfloat16[2], b=c64[], tag='t')"
    )


def test_repr_of_tuples_keeps_the_one_element_comma():
    assert repr(Pair((jnp.ones(2),), (1, (2,)))) == "Pair(a=(f32[2],), b=(1, (2,)), tag='t')"
    assert repr(Pair((), [])) == "Pair(a=(), b=[], tag='t')"


def test_repr_shows_a_field_not_set_yet_as_unset():
    @pytree_class
    class Lazy:
        x: jax.Array
        norm: jax.Array = field(init=False)

    assert repr(Lazy(jnp.ones(2))).endswith("Lazy(x=f32[2], norm=<unset>)")


def test_repr_names_functions_by_qualified_name():
    assert repr(Pair(jnp.ones(1), len)) == "Pair(a=f32[1], b=<function len>, tag='t')"


class _AnswersEveryName:
    """Neither an array nor a pytree: its ``__getattr__`` answers ``shape`` and ``dtype`` too."""

    def __getattr__(self, name: str) -> float:
        return 1.0

    def __repr__(self) -> str:
        return "_AnswersEveryName()"


def test_repr_takes_only_a_tuple_shape_for_an_array():
    assert repr(Pair(_AnswersEveryName(), 1)) == "Pair(a=_AnswersEveryName(), b=1, tag='t')"

    @pytree_class
    class Lenient:
        def __init__(self, x: Any) -> None:
            self.x = x

        def __getattr__(self, name: str) -> float:
            return 1.0

    assert repr(Lenient(jnp.ones(2))).endswith(".Lenient(x=f32[2])")


def test_repr_shows_the_fields_of_a_pytree_class_with_a_shape_and_a_dtype():
    @pytree_class
    class Param:
        value: jax.Array

        @property
        def shape(self) -> tuple[int, ...]:
            return tuple(self.value.shape)

        @property
        def dtype(self) -> Any:
            return self.value.dtype

    assert repr(Pair(Param(jnp.ones(3)), 0)).endswith(".Param(value=f32[3]), b=0, tag='t')")
