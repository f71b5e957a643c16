"""The kinds of class pytreekit must handle alike, each with a way to build an example.

Tests of behaviours every class shares (round trips, pickle, copy, export, replace, threads)
parametrise over ``CATALOGUE``. Module level, so that pickle finds the classes by name.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from pytreekit import field, pytree_class


@pytree_class
class Annotated:
    w: jax.Array
    b: jax.Array
    scale: float = 1.0


@pytree_class
class AnnotatedStatic:
    w: jax.Array
    activation: Any = field(static=True, default=jnp.tanh)
    name: str = field(static=True, default="layer")


@pytree_class(frozen=True)
class Frozen:
    w: jax.Array
    n: int = field(static=True, default=3)


@pytree_class
class AnnotatedSub(AnnotatedStatic):
    extra: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros(1))


@pytree_class(static=("size",))
class Unannotated:
    def __init__(self, w, size=2):
        self.w = w
        self.size = size


class UnannotatedSub(Unannotated):  # a pytree class through the parent, with one more field
    def __init__(self, w, size=2):
        super().__init__(w, size)
        self.bias = jnp.zeros(size)


@pytree_class(static=("size",))
class Slotted:
    __slots__ = ("w", "size")

    def __init__(self, w, size=2):
        self.w = w
        self.size = size


@pytree_class(frozen=True, static=("tag",))
class FrozenUnannotated:
    def __init__(self, w, tag="t"):
        self.w = w
        self.tag = tag


@pytree_class
class Empty:
    def __init__(self):
        pass


@pytree_class
class Nested:
    inner: Annotated
    layers: list


@pytree_class(static=("size",))
class Varied:
    """Instances of two layouts: with a bias and without (the first built is the primary)."""

    def __init__(self, size, bias):
        self.size = size
        self.w = jnp.ones(size)
        if bias:
            self.b = jnp.zeros(size)


def _second_layout():
    Varied(2, bias=False)  # the primary layout, in a process that had none yet
    return Varied(2, bias=True)


@pytree_class
class Converted:
    w: jax.Array = field(converter=jnp.asarray)
    scale: float = field(static=True, default=2.0)
    scaled: jax.Array = field(init=False)

    def __post_init__(self):
        self.scaled = self.w * self.scale


@dataclasses.dataclass
class PlainBase:
    w: jax.Array


@pytree_class
class OnDataclass(PlainBase):
    b: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros(1))


@pytree_class
class AnnotatedOwnInit:
    w: jax.Array
    n: int = field(static=True)

    def __init__(self, size):
        self.w = jnp.ones(size)
        self.n = size


CATALOGUE: dict[str, Callable[[], Any]] = {
    "annotated": lambda: Annotated(jnp.ones((2, 2)), jnp.zeros(2), 0.5),
    "annotated-static": lambda: AnnotatedStatic(jnp.ones(2), jax.nn.relu, "first"),
    "frozen": lambda: Frozen(jnp.arange(3.0), 4),
    "annotated-subclass": lambda: AnnotatedSub(jnp.ones(2), jnp.tanh, "sub", jnp.ones(1)),
    "unannotated": lambda: Unannotated(jnp.ones(3), 3),
    "unannotated-subclass": lambda: UnannotatedSub(jnp.ones(2)),
    "slotted": lambda: Slotted(jnp.ones(2)),
    "frozen-unannotated": lambda: FrozenUnannotated(jnp.ones(2), "u"),
    "empty": Empty,
    "nested": lambda: Nested(Annotated(jnp.ones(1), jnp.ones(1)), [Frozen(jnp.ones(1)), 2.0]),
    "varied": _second_layout,
    "post-init-converter": lambda: Converted([1.0, 2.0]),
    "dataclass-base": lambda: OnDataclass(jnp.ones(2), jnp.ones(1)),
    "annotated-own-init": lambda: AnnotatedOwnInit(3),
}


def same(a: Any, b: Any) -> bool:
    """Same class, same treedef, equal leaves: what a round trip must keep."""
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    return (
        type(a) is type(b)
        and tree_a == tree_b
        and all(jnp.array_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True))
    )


def unpickled_elsewhere(obj: Any, expression: str, folder: Path) -> str:
    """Pickle ``obj``, load it as ``obj`` in a fresh interpreter (with ``jax``, ``jnp`` and
    tests/ importable) and return the ``repr`` of ``expression`` there (for ``eval`` here)."""
    path = folder / "pickled.bin"
    path.write_bytes(pickle.dumps(obj))
    code = (
        "import pickle, sys; sys.path.insert(0, sys.argv[2]);"
        "import jax, jax.numpy as jnp;"
        "obj = pickle.loads(open(sys.argv[1], 'rb').read());"
        f"print(repr(({expression})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), os.path.dirname(__file__)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        check=True,
    )
    return out.stdout.strip()
