"""Building instances: pytreekit classes against the classes they replace, side by side.

Annotated classes against a plain ``@dataclass`` with the same fields (frozen against frozen,
``__post_init__`` against ``__post_init__``); a class with its own ``__init__`` (annotated or not)
against the same class undecorated; ``pytreekit.replace`` against ``dataclasses.replace``; ``==``
and ``hash`` of a class without annotations against an annotated one.

Which path each class with its own ``__init__`` takes (``Cls.__pytreekit_spec__.init_proof``):
``KitExistingLinear``, ``FrozenKitExistingLinear`` and ``KitAnnotatedOwnInit`` are proven at
decoration (their ``__init__`` only stores attributes of ``self``: only static values are
checked per instance); ``KitUnprovenLinear`` and ``KitAnnotatedUnproven`` call a method of
``self``, which keeps them on the general path: the instance is checked when ``__init__``
returns, from the ``__init__``'s own frame (its code compiled again with the check appended),
by reading its ``__dict__``'s order, or, for the annotated class (whose order is declared), by
counting its attributes;
``KitPostInit``'s ``__post_init__`` is proven. Branches that choose values, not what is
stored (``b if b is not None else w``), are proven.
"""

from __future__ import annotations

import dataclasses
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import pytreekit
from pytreekit import field, pytree_class


@dataclasses.dataclass
class PlainLinear:
    weights: jax.Array
    biases: jax.Array
    features: int = 3


@pytree_class
class KitLinear:
    weights: jax.Array
    biases: jax.Array
    features: int = field(static=True, default=3)


@dataclasses.dataclass(frozen=True)
class FrozenPlainLinear:
    weights: jax.Array
    biases: jax.Array
    features: int = 3


@pytree_class(frozen=True)
class FrozenKitLinear:
    weights: jax.Array
    biases: jax.Array
    features: int = field(static=True, default=3)


class ExistingLinear:
    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = features


@pytree_class(static=("features",))
class KitExistingLinear:
    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = features


class UnprovenLinear:
    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = self.checked(features)

    @staticmethod
    def checked(features: int) -> int:
        return features


@pytree_class(static=("features",))
class KitUnprovenLinear:
    """As ``UnprovenLinear``: calling a method of ``self`` may do anything to it, so no proof."""

    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = self.checked(features)

    @staticmethod
    def checked(features: int) -> int:
        return features


@pytree_class(frozen=True, static=("features",))
class FrozenKitExistingLinear:
    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = features


@pytree_class
class KitAnnotatedOwnInit:
    """Annotated fields and an __init__ of its own (which takes other arguments, typically)."""

    weights: jax.Array
    biases: jax.Array
    features: int = field(static=True)

    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = features


@pytree_class
class KitAnnotatedUnproven:
    """As ``KitAnnotatedOwnInit``, its ``__init__`` calling a method of ``self``: not proven."""

    weights: jax.Array
    biases: jax.Array
    features: int = field(static=True)

    def __init__(self, weights: jax.Array, biases: jax.Array, features: int = 3) -> None:
        self.weights = weights
        self.biases = biases
        self.features = self.checked(features)

    @staticmethod
    def checked(features: int) -> int:
        return features


@dataclasses.dataclass
class PlainPostInit:
    weights: jax.Array
    biases: jax.Array
    features: int = 3

    def __post_init__(self) -> None:
        self.features = int(self.features)


@pytree_class
class KitPostInit:
    weights: jax.Array
    biases: jax.Array
    features: int = field(static=True, default=3)

    def __post_init__(self) -> None:
        self.features = int(self.features)


def _best_ns(fn: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e9


def _builder(cls: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: cls(*args)


def run(repeats: int, number: int) -> dict[str, dict[str, float]]:
    """Median ns per construction of each pair, measured in turn within each repeat."""
    w, b = jnp.ones((3, 2)), jnp.zeros(2)
    pairs = {
        "annotated vs @dataclass": (KitLinear, PlainLinear),
        "frozen annotated vs frozen @dataclass": (FrozenKitLinear, FrozenPlainLinear),
        "annotated with __post_init__ vs @dataclass": (KitPostInit, PlainPostInit),
        "annotated with its own __init__ vs undecorated": (KitAnnotatedOwnInit, ExistingLinear),
        "existing class vs undecorated": (KitExistingLinear, ExistingLinear),
        "existing class, __init__ not proven vs undecorated": (
            KitUnprovenLinear,
            UnprovenLinear,
        ),
        "annotated, its own __init__ not proven vs undecorated": (
            KitAnnotatedUnproven,
            UnprovenLinear,
        ),
    }
    builders = {
        name: (_builder(ours, w, b), _builder(theirs, w, b))
        for name, (ours, theirs) in pairs.items()
    }
    # replace: one array changed, on instances as built (dataclasses.replace calls __init__).
    kit, plain, existing = KitLinear(w, b), PlainLinear(w, b), KitExistingLinear(w, b)
    frozen_kit, frozen_plain = FrozenKitLinear(w, b), FrozenPlainLinear(w, b)
    builders["replace vs dataclasses.replace"] = (
        lambda: pytreekit.replace(kit, biases=w),
        lambda: dataclasses.replace(plain, biases=w),
    )
    builders["frozen replace vs dataclasses.replace"] = (
        lambda: pytreekit.replace(frozen_kit, biases=w),
        lambda: dataclasses.replace(frozen_plain, biases=w),
    )
    builders["replace, existing class vs dataclasses.replace"] = (
        lambda: pytreekit.replace(existing, biases=w),
        lambda: dataclasses.replace(plain, biases=w),
    )
    # ==, and hash on frozen classes: an existing class (its fields found on the instance)
    # against an annotated one (fields declared), with the same values.
    other, other_existing = KitLinear(w, b), KitExistingLinear(w, b)
    builders["==, existing class vs annotated"] = (
        lambda: existing == other_existing,
        lambda: kit == other,
    )
    # (hashable values: arrays are not)
    frozen_existing, frozen_values = FrozenKitExistingLinear(1.0, 2.0), FrozenKitLinear(1.0, 2.0)
    builders["hash, frozen existing class vs frozen annotated"] = (
        lambda: hash(frozen_existing),
        lambda: hash(frozen_values),
    )
    results = {}
    for name, (ours, theirs) in builders.items():
        a, c = [], []
        for _ in range(repeats):
            a.append(_best_ns(ours, number))
            c.append(_best_ns(theirs, number))
        ours_ns, theirs_ns = statistics.median(a), statistics.median(c)
        results[name] = {"pytreekit": ours_ns, "reference": theirs_ns, "ratio": ours_ns / theirs_ns}
    return results
