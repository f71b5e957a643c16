"""Decorating a class: ``@pytree_class`` against what it stands in for, side by side.

An annotated class against ``dataclasses.dataclass`` on the same class body; a class without
annotations against defining the same class undecorated (what the decorator adds is then the
whole cost). Each class is defined fresh outside the timed part, since a class is decorated once.
Each comes from the same source, so what pytreekit keeps per function's code (the proof of an
``__init__``, its one-frame version: about 100 µs more for a class whose code is new) is made
once.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax

from pytreekit import pytree_class


def _annotated() -> type:
    class Linear:
        weights: jax.Array
        biases: jax.Array
        features: int = 3

        def __call__(self, x: jax.Array) -> jax.Array:
            return x @ self.weights + self.biases

    return Linear


def _unannotated() -> type:
    class Linear:
        def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
            self.weights = weights
            self.biases = biases
            self.features = features

        def __call__(self, x: jax.Array) -> jax.Array:
            return x @ self.weights + self.biases

    return Linear


def _decorate_ns(make: Callable[[], type], decorate: Callable[[type], Any], number: int) -> float:
    """ns per decoration of ``number`` fresh classes (their definition is not timed)."""
    classes = [make() for _ in range(number)]
    start = time.perf_counter_ns()
    for cls in classes:
        decorate(cls)
    return (time.perf_counter_ns() - start) / number


def _define_ns(make: Callable[[], type], number: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(number):
        make()
    return (time.perf_counter_ns() - start) / number


def run(repeats: int, number: int) -> dict[str, dict[str, float]]:
    """Median ns per class of each pair, measured in turn within each repeat."""
    pairs: dict[str, tuple[Callable[[], float], Callable[[], float]]] = {
        "annotated: @pytree_class vs @dataclass": (
            lambda: _decorate_ns(_annotated, pytree_class, number),
            lambda: _decorate_ns(_annotated, dataclasses.dataclass, number),
        ),
        # Defining plus decorating, against defining: the unannotated class's whole cost.
        "unannotated: defined and decorated vs defined": (
            lambda: (
                _define_ns(_unannotated, number) + _decorate_ns(_unannotated, pytree_class, number)
            ),
            lambda: _define_ns(_unannotated, number),
        ),
    }
    results = {}
    for name, (ours, theirs) in pairs.items():
        a, c = [], []
        for _ in range(repeats):
            a.append(ours())
            c.append(theirs())
        ours_ns, theirs_ns = statistics.median(a), statistics.median(c)
        results[name] = {"pytreekit": ours_ns, "reference": theirs_ns, "ratio": ours_ns / theirs_ns}
    return results
