"""Classes for tests/test_artifacts_attack4.py (the fourth attacker pass), which fresh processes
import by module name: an artifact names a class by module and name."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit
from pytreekit import field, pytree_class

CALLS: list[str] = []  # what the victim's own code ran
T = TypeVar("T")


class Warmup:
    """A callable schedule stored through a codec: it must never stand where a function is."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def __call__(self, x: Any) -> Any:
        CALLS.append("Warmup.__call__")
        return x

    def __eq__(self, other: object) -> bool:
        return type(other) is Warmup and other.steps == self.steps

    def __hash__(self) -> int:
        return hash(self.steps)


pytreekit.register_static_codec(Warmup, lambda w: w.steps, Warmup)


@dataclasses.dataclass(frozen=True)
class Clip:
    """Stored through a codec whose decoder validates (it calls ``Clip``)."""

    low: float = -1.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError("Clip: low must be below high")


def _clip(pair: Any) -> Clip:
    CALLS.append("decode Clip")
    return Clip(*pair)


pytreekit.register_static_codec(Clip, lambda c: (c.low, c.high), _clip)


class Pair(NamedTuple):
    low: float
    high: float


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


pytreekit.register_static_codec(Pair, tuple, lambda items: Pair(*items))
pytreekit.register_static_codec(Level, lambda m: m.value, Level)


class Interval:
    """The codec example of docs/using/jax-export.md: hashable only as its decoder is given."""

    def __init__(self, low: Any, high: Any) -> None:
        self.low, self.high = low, high

    def __eq__(self, other: object) -> bool:
        return type(other) is Interval and (self.low, self.high) == (other.low, other.high)

    def __hash__(self) -> int:
        return hash((self.low, self.high))


pytreekit.register_static_codec(Interval, lambda i: (i.low, i.high), lambda p: Interval(*p))


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A derived field: ``init=False``, no default, set in ``__post_init__``."""

    lr: float
    warmup: int
    peak: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak", self.lr * self.warmup)


@dataclasses.dataclass(frozen=True)
class Box(Generic[T]):
    item: T


@pytree_class
class Model:
    """One static field per attack of the pass."""

    w: jax.Array
    act: Callable[[jax.Array], jax.Array] = field(static=True, default=jnp.tanh)
    post: Callable[[Any], Any] = field(static=True, default=np.tanh)
    clean: Callable[[Any], Any] = field(static=True, default=np.nan_to_num)
    schedule: Warmup = field(static=True, default=Warmup(100))
    clip: Clip = field(static=True, default=Clip())
    bounds: Interval = field(static=True, default=Interval(-1.0, 1.0))
    plan: Schedule = field(static=True, default=Schedule(0.1, 10))

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.act(x * self.w)


@pytree_class
class Boxed:
    """A field declared as a generic alias of the user's own class."""

    w: jax.Array
    box: Box[int] = field(static=True, default=Box(1))


class Watched(type):
    """A metaclass whose comparison is code: loading must never run it."""

    def __eq__(cls, other: object) -> bool:
        CALLS.append("Watched.__eq__")
        return type.__eq__(cls, other)

    __hash__ = type.__hash__


class Odd(metaclass=Watched):
    def __call__(self, x: Any) -> Any:
        return x


pytreekit.register_static_codec(Odd, lambda odd: 0, lambda data: Odd())
