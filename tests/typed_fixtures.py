"""Pytree classes under third-party type checkers (tests/test_interop.py).

This file is imported twice: as written, with postponed annotations (every annotation a string
that beartype, jaxtyping and ``typing.get_type_hints`` resolve in this module), and once without
the ``__future__`` line (annotations evaluated at definition), so both annotation modes are
tested with the same classes.
"""
# ruff: noqa: F722 (jaxtyping's shape strings are not forward references)

from __future__ import annotations

from typing import Self

import jax
from beartype import beartype
from jaxtyping import Array, Float, jaxtyped

from pytreekit import field, pytree_class


@jaxtyped(typechecker=beartype)
@pytree_class
class Affine:
    """jaxtyping around the generated ``__init__``: shapes agree, dtypes are floating."""

    weight: Float[Array, "n n"]
    bias: Float[Array, " n"]
    name: str = field(static=True, default="affine")

    @jaxtyped(typechecker=beartype)
    def __call__(self, x: Float[Array, " n"]) -> Float[Array, " n"]:
        out: Float[Array, " n"] = self.weight @ x + self.bias
        return out


@beartype
@pytree_class(frozen=True)
class Scale:
    """beartype on the whole class: the generated methods and the user's."""

    factor: jax.Array
    times: int = field(static=True, default=1)

    def twice(self, extra: float) -> Self:
        return Scale(self.factor * 2 * extra, self.times + 1)


@pytree_class(static=("size",))
class Written:
    """No field annotations: the user's own ``__init__``, checked by jaxtyping."""

    @jaxtyped(typechecker=beartype)
    def __init__(self, w: Float[Array, " size"], size: int) -> None:
        self.w = w
        self.size = size

    @beartype
    def grow(self, by: int) -> "Written":  # noqa: UP037 (quoted for the eager variant)
        return Written(self.w, self.size + by)
