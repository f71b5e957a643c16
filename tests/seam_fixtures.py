"""Classes for tests/test_artifacts_seams.py, which fresh processes import by module name: a
treespec names a class by module and name."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from pytreekit import field, pytree_class

try:
    import torch  # noqa: F401 - only whether it is there

    BACKENDS: tuple[str, ...] = ("jax", "torch")
except ImportError:  # pragma: no cover - CI installs torch
    BACKENDS = ("jax",)


class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


@pytree_class(backends=BACKENDS)
class Pair:
    """Its aux data is its static values alone (the layout it declares)."""

    a: Any
    b: Any = None
    scale: float = field(static=True, default=1.0)


@pytree_class(backends=BACKENDS)
class Bare:
    """No static field: its aux data is the one ``NodeData`` of the class."""

    a: Any
    b: Any = None


@pytree_class(static=("scale",), backends=BACKENDS)
class Learned:
    """No annotations: its aux data carries its layout."""

    def __init__(self, a: Any, b: Any = None, scale: float = 1.0) -> None:
        self.a = a
        self.b = b
        self.scale = scale


@pytree_class(backends=BACKENDS)
class Linear:
    """Static values that name a class (``Mode``) and a function (``act``)."""

    weight: Any
    mode: Mode = field(static=True, default=Mode.EVAL)
    act: Callable[..., Any] = field(static=True, default=jnp.tanh)
