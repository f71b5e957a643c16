"""Defects the seventh peer suite found, each against its reference (dataclasses, Python's ``==``,
the guide's "a Python bool"): each test fails without its fix."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import pytreekit
from pytreekit import pytree_class

# -- D1: over @dataclass(eq=False), the dataclass's choice stands -------------------------------


@pytest.mark.parametrize("frozen", [False, True])
def test_over_a_dataclass_without_eq_equality_and_hash_agree_as_dataclasses_says(frozen):
    def make(decorate):
        @decorate
        @dataclasses.dataclass(eq=False, frozen=frozen)
        class C:
            a: int

        return C

    reference, ours = make(lambda c: c), make(pytree_class)
    for cls in (reference, ours):
        x, y = cls(1), cls(1)
        assert (x == y) is False and x == x
        assert cls.__hash__ is object.__hash__
        assert len({x, y}) == 2
    leaves, treedef = jax.tree_util.tree_flatten(ours(1))
    assert leaves == [1] and jax.tree_util.tree_unflatten(treedef, leaves).a == 1


def test_over_a_dataclass_with_eq_pytreekit_still_compares_by_value():
    @pytree_class
    @dataclasses.dataclass(frozen=True)
    class C:
        a: int

    assert C(1) == C(1) and hash(C(1)) == hash(C(1))


# -- D4: no mutable subclass of a frozen class, as dataclasses refuses -------------------------


def test_an_explicit_subclass_that_is_not_frozen_of_a_frozen_class_is_refused():
    @dataclasses.dataclass(frozen=True)
    class DataBase:
        a: int = 1

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        dataclasses.dataclass(type("DataSub", (DataBase,), {"__annotations__": {"b": int}}))

    @pytree_class(frozen=True)
    class Base:
        a: int = 1

    for decorate in (pytree_class, pytree_class(frozen=False)):
        with pytest.raises(TypeError, match=r"Sub: cannot inherit .* frozen one \(.*Base\)") as e:

            @decorate
            class Sub(Base):
                b: int = 2

        assert "frozen=True" in str(e.value)

    @pytree_class(frozen=True)
    class Frozen(Base):
        b: int = 2

    class Automatic(Base):  # made a pytree class by inheritance: frozen as its parent
        b: int = 3

    for cls in (Frozen, Automatic):
        with pytest.raises(pytreekit.FrozenInstanceError):
            cls().b = 5  # type: ignore[misc]


# -- D5: arrays of typed PRNG keys compare to a Python bool -------------------------------------


@pytree_class
class Agent:
    key: jax.Array


@pytest.mark.parametrize(
    ("one", "other", "equal"),
    [
        (jax.random.key(0), jax.random.key(0), True),
        (jax.random.key(0), jax.random.key(1), False),
        (jax.random.split(jax.random.key(0)), jax.random.split(jax.random.key(0)), True),
        (jnp.ones(2), jnp.ones(2), True),
    ],
)
def test_typed_key_arrays_compare_to_a_python_bool(one, other, equal):
    result = Agent(one) == Agent(other)
    assert type(result) is bool and result is equal


def test_under_jit_equality_is_still_a_traced_boolean():
    result = jax.jit(lambda a, b: a == b)(Agent(jnp.ones(2)), Agent(jnp.ones(2)))
    assert bool(result) is True


# -- D6: instances holding themselves: RecursionError, as Python's == -------------------------


@pytree_class
class Node:
    children: list


@pytreekit.pytree_class
class Loose:
    def __init__(self):
        self.children = []


@pytest.mark.parametrize("make", [lambda: Node([]), Loose])
def test_equality_of_two_instances_holding_themselves_raises_recursion_error(make):
    a, b = make(), make()
    a.children.append(a)
    b.children.append(b)
    with pytest.raises(RecursionError):
        _ = a == b
    assert a == a  # the same instance: equal at once, as a dataclass's


def test_python_lists_holding_themselves_raise_the_same():
    a: list = []
    b: list = []
    a.append(a)
    b.append(b)
    with pytest.raises(RecursionError):
        _ = a == b


# -- the eighth peer suite: what the fixes above must not break ---------------------------------


def test_a_frozen_dataclass_below_makes_a_subclass_of_a_frozen_class_frozen_enough():
    @pytree_class(frozen=True)
    class Base:
        x: int = 1

    @pytree_class
    @dataclasses.dataclass(frozen=True)
    class Sub(Base):
        y: int = 2

    sub = Sub()
    assert (sub.x, sub.y) == (1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.y = 5  # type: ignore[misc]


def test_a_subclass_by_inheritance_keeps_identity_as_its_dataclass_parent_does():
    @pytree_class
    @dataclasses.dataclass(eq=False)
    class Parent:
        a: int

    class Sub(Parent):  # a pytree class by inheritance alone
        pass

    @dataclasses.dataclass(eq=False)
    class Reference:
        a: int

    class ReferenceSub(Reference):
        pass

    for cls in (Sub, ReferenceSub):
        x, y = cls(1), cls(1)
        assert (x == y) is False and len({x, y}) == 2
    assert pytreekit.is_pytree_class(Sub)
    assert jax.tree_util.tree_leaves(Sub(3)) == [3]


def test_equality_of_deep_lists_agrees_with_pythons():
    deep_a: list = []
    deep_b: list = []
    for _ in range(900):  # within every supported Python's limit (the bound is no smaller)
        deep_a, deep_b = [deep_a], [deep_b]
    assert (Node(deep_a) == Node(deep_b)) is (deep_a == deep_b) is True


# -- the ninth peer suite ---------------------------------------------------------------------


def test_a_subclass_remade_by_dataclass_slots_is_refused_not_left_a_leaf():
    @pytree_class
    class Base:
        x: float

    with pytest.raises(TypeError, match=r"C was made from a copy .* Drop slots=True"):

        @dataclasses.dataclass(slots=True)
        class C(Base):
            y: float = 1.0

    class Slotted(Base):  # what the error suggests
        __slots__ = ("y",)
        y: float

    assert jax.tree_util.tree_leaves(Slotted(1.0, 2.0)) == [1.0, 2.0]

    @pytree_class
    @dataclasses.dataclass(slots=True)
    class Root:  # a root class remade by slots=True before pytreekit sees it: fine
        x: float

    assert jax.tree_util.tree_leaves(Root(3.0)) == [3.0] and not hasattr(Root(3.0), "__dict__")


def test_an_instance_missing_a_field_with_a_default_factory_is_told_what_to_do():
    @pytree_class
    class A:
        x: float
        w: list = dataclasses.field(default_factory=list)

    old = object.__new__(A)  # a pickle of A before it had w loads so
    old.__dict__.update(x=1.0)
    with pytest.raises(AttributeError, match="no default is filled in there") as caught:
        jax.tree_util.tree_leaves(old)
    assert "give the field a default" not in str(caught.value)


def test_a_frozen_dataclass_below_is_recorded_frozen_for_subclasses():
    @pytree_class
    @dataclasses.dataclass(frozen=True)
    class Parent:
        x: int

    class Child(Parent):  # a pytree class by inheritance: frozen as its parent
        y: int = 2

    child = Child(1)
    assert (child.x, child.y) == (1, 2) and hash(child) == hash(Child(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.y = 3  # type: ignore[misc]
    assert jax.tree_util.tree_leaves(child) == [1, 2]
