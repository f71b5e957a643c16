"""The victim's module for tests/test_artifacts_attack13.py: fields read as a function, beside a
class that stands for its instances (a union's other member, a callback protocol)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import jax

from pytreekit import field, pytree_class

CALLED: list[str] = []  # what ran of the victim's code that only an attacker would run


@pytree_class(frozen=True)
class Warmup:
    steps: int = field(static=True, default=10)

    def __call__(self, step: int) -> float:
        return min(1.0, step / self.steps)


@pytree_class(frozen=True)
class Checkpointing(Warmup):
    """A pytree subclass some other module of the process defines."""

    def __post_init__(self) -> None:
        CALLED.append(f"Checkpointing.__post_init__({self.steps!r})")


class Activation(Protocol):
    def __call__(self, x: jax.Array) -> jax.Array: ...


@pytree_class(frozen=True)
class Swish(Activation):
    beta: float = field(static=True, default=1.0)

    def __call__(self, x: jax.Array) -> jax.Array:
        return x * jax.nn.sigmoid(self.beta * x)


@pytree_class
class Model:
    w: jax.Array
    schedule: Warmup | Callable[[int], float] = field(static=True, default=Warmup())
    act: Activation = field(static=True, default=jax.numpy.tanh)  # pyright: ignore[reportAssignmentType]


@pytree_class
class Made:
    w: jax.Array
    make: Warmup | Callable[..., Warmup] = field(static=True, default=Warmup)
    kind: type[Warmup] | Callable[[int], float] = field(static=True, default=Warmup)
