"""Classes that fresh processes import by module name (tests/test_interop.py): an exported or
saved artifact stores a class by its module and qualified name."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pytreekit import field, pytree_class


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
