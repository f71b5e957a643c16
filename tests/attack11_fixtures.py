"""Classes the eleventh attack's tests export and load (in fresh processes too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pytreekit import field, pytree_class

try:
    import torch  # noqa: F401 - only whether it is there

    BACKENDS: tuple[str, ...] = ("jax", "torch")
except ImportError:  # pragma: no cover - CI installs torch
    BACKENDS = ("jax",)


@pytree_class
class Model:
    w: jax.Array
    act: Callable[..., Any] = field(static=True, default=jax.nn.relu)


@pytree_class(backends=BACKENDS)
class Cast:
    w: jax.Array
    cast: Callable[..., Any] = field(static=True, default=jnp.float32)


@pytree_class(static=("act",))
class Net:
    """Without annotations: its fields are what its instances hold (an optional bias)."""

    def __init__(self, w: Any, act: Any = None, bias: Any = None, **extra: Any) -> None:
        self.w = w
        self.act = act
        if bias is not None:
            self.bias = bias
        for name, value in extra.items():  # the attacker's made-up fields
            setattr(self, name, value)


@pytree_class
class Binary:
    """A model calls ``op(a, b)``: its field says so."""

    scale: float
    op: Callable[[jax.Array, jax.Array], jax.Array] = field(static=True, default=np.add)
