"""``==`` compares fields as the running Python's dataclasses compare them.

Up to Python 3.12 dataclasses compare the tuples of the fields' values, and a tuple takes
identical items for equal; from 3.13 they compare field by field (``self.x == other.x and ...``),
so a field holding the same NaN in both instances makes them unequal. An instance equals itself
on every Python. Each case is compared with a dataclass holding the same values; arrays, which a
dataclass cannot compare, are compared as pytreekit compares them.
"""

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pytreekit import pytree_class

NAN = float("nan")


class NeverEqual:
    """Unequal to everything, itself included."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


@dataclasses.dataclass
class Child:
    value: Any


@pytree_class
class PytreeChild:
    value: Any


@dataclasses.dataclass
class Reference:
    value: Any
    other: Any = 0


@pytree_class
class Annotated:
    value: Any
    other: Any = 0


@pytree_class
class Unannotated:
    def __init__(self, value: Any, other: Any = 0) -> None:
        self.value = value
        self.other = other


SHARED_CHILD, SHARED_PYTREE_CHILD = Child(NAN), PytreeChild(NAN)

# Each case: the value both instances hold (the same object), for the reference and for pytreekit
# (a nested instance is a dataclass in one and a pytree class in the other).
CASES = {
    "the same NaN": (NAN, NAN),
    "the same NumPy NaN scalar": (np.float64(NAN),) * 2,
    "the same object unequal to itself": (NeverEqual(),) * 2,
    "the same list holding a NaN": ([NAN],) * 2,
    "the same dict holding a NaN": ({"k": NAN},) * 2,
    "the same instance holding a NaN": (SHARED_CHILD, SHARED_PYTREE_CHILD),
    "a plain number": (1.5, 1.5),
}


@pytest.mark.parametrize("kind", [Annotated, Unannotated], ids=["annotated", "unannotated"])
@pytest.mark.parametrize("case", CASES)
def test_instances_holding_the_same_value_compare_as_dataclasses_compare(case, kind):
    reference_value, value = CASES[case]
    expected = bool(Reference(reference_value) == Reference(reference_value))
    assert (kind(value) == kind(value)) is expected
    assert (kind(value) != kind(value)) is not expected
    one = kind(value)
    assert one == one  # an instance equals itself, as a dataclass does


@pytest.mark.parametrize("kind", [Annotated, Unannotated], ids=["annotated", "unannotated"])
def test_distinct_instances_each_holding_the_same_nan_compare_as_dataclasses_compare(kind):
    expected = Reference(Child(NAN)) == Reference(Child(NAN))
    assert (kind(PytreeChild(NAN)) == kind(PytreeChild(NAN))) is expected


def test_arrays_are_compared_as_pytreekit_compares_them():
    with_nan = jnp.asarray([1.0, jnp.nan])
    assert Annotated(with_nan) == Annotated(with_nan)  # the same array
    assert Annotated(with_nan) != Annotated(jnp.asarray([1.0, jnp.nan]))  # NaN != NaN
    assert Annotated(jnp.ones(2)) == Annotated(jnp.ones(2))
    assert Annotated(jnp.ones(2)) != Annotated(jnp.ones(3))

    @jax.jit
    def same(model):
        return model == model  # an instance equals itself, even under jit

    assert bool(same(Annotated(with_nan)))
