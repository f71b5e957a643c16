"""Frozen classes: fields read, replace updates; the own-__init__ form every checker accepts."""

from typing import assert_type

import jax

from pytreekit import FrozenInstanceError, field, pytree_class, replace


@pytree_class(frozen=True)
class Options:
    rate: float
    steps: int = 10


o = Options(0.1)
assert_type(o.rate, float)
assert_type(replace(o, steps=20), Options)
try:
    setattr(o, "rate", 0.2)  # checkers cannot see through setattr; pytreekit refuses at run time
except FrozenInstanceError:
    pass
else:
    raise AssertionError("frozen instance assigned")


# A frozen class with its own __init__ (or __post_init__): checkers report `self.x = ...` there,
# so set fields as dataclasses requires, with object.__setattr__ (pytreekit accepts both).
@pytree_class(frozen=True)
class Doubled:
    x: float
    weights: jax.Array = field(init=False)

    def __init__(self, x: float) -> None:
        object.__setattr__(self, "x", 2 * x)
        object.__setattr__(self, "weights", jax.random.normal(jax.random.key(0), (2,)))


@pytree_class(frozen=True)
class Derived:
    x: float
    half: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "half", self.x / 2)


assert_type(Doubled(1.0).x, float)
assert Doubled(1.0).x == 2.0
assert Derived(3.0).half == 1.5
