"""Classes that fresh processes import by module name (tests/test_interop.py): an exported or
saved artifact stores a class by its module and qualified name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from pytreekit import add_safe_references, field, pytree_class, register_static_codec


def relu(x: jax.Array) -> jax.Array:
    return jnp.maximum(x, 0.0)


@pytree_class
class Model:
    """Annotated, with static fields: a function (stored by reference) and a tuple."""

    weight: jax.Array
    bias: jax.Array
    activation: object = field(static=True, default=relu)
    shape: tuple[int, ...] = field(static=True, default=(3,))

    def __call__(self, x: jax.Array) -> jax.Array:
        out: jax.Array = self.activation(self.weight * x + self.bias)
        return out


@pytree_class(static=("size",))
class Unannotated:
    """No annotations: the fields are what ``__init__`` set, so the layout varies."""

    def __init__(self, size: int, bias: bool) -> None:
        self.size = size
        self.w = jnp.ones(size)
        if bias:
            self.b = jnp.zeros(size)

    def __call__(self, x: jax.Array) -> jax.Array:
        out = self.w * x
        return out + self.b if hasattr(self, "b") else out


def make_model() -> Model:
    return Model(jnp.array([1.0, -2.0, 3.0]), jnp.array([0.5, 0.5, -10.0]))


# -- issue 33: what an attacker's artifact targets ----------------------------------------------

try:
    import torch  # noqa: F401 - only whether it is there

    BACKENDS: tuple[str, ...] = ("jax", "torch")
except ImportError:  # pragma: no cover - CI installs torch
    BACKENDS = ("jax",)

# This module's activation: artifacts naming it load where the process allows it (a user's
# module says so when it is imported).
add_safe_references([relu])


@pytree_class(backends=BACKENDS)
class Activation:
    """A static function, declared: only a callable may stand there."""

    fn: Callable[[Any], Any] = field(static=True, default=jnp.tanh)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.fn(x)


@pytree_class(static=("fn",), backends=BACKENDS)
class Loose:
    """No annotations: a method an artifact's field of the same name would hide."""

    def __init__(self, fn: Callable[[jax.Array], jax.Array]) -> None:
        self.fn = fn
        self.scale = jnp.ones(())

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.encode(self.fn(x)) * self.scale

    def encode(self, x: jax.Array) -> jax.Array:
        return x


@pytree_class(backends=BACKENDS)
class Net:
    """Sub-modules: one an attacker replaces by ``pytreekit.Static(payload)``."""

    act: Activation
    w: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.act(self.w * x)


@pytree_class(backends=BACKENDS)
class Teacher:
    w: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return jnp.tanh(self.w * x)


@pytree_class(backends=BACKENDS)
class Student:
    w: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return -jnp.tanh(self.w * x)


@dataclasses.dataclass(frozen=True)
class Config:
    width: int = 3


@dataclasses.dataclass(frozen=True)
class Decoy:
    width: int = 3


@pytree_class(backends=BACKENDS)
class Configured:
    w: jax.Array
    config: Config = field(static=True, default=Config())


class Interval:
    """A type with a registered codec (in whichever process imports this module)."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interval) and (self.low, self.high) == (other.low, other.high)

    def __hash__(self) -> int:
        return hash((self.low, self.high))


register_static_codec(Interval, lambda i: (i.low, i.high), lambda pair: Interval(*pair))


@pytree_class(backends=BACKENDS)
class Bounded:
    w: jax.Array
    bounds: Interval = field(static=True, default=Interval(0.0, 1.0))
