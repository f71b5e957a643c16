"""Classes for tests/test_artifacts_attack5.py (the fifth attacker pass), which fresh processes
import by module name: an artifact names a class by module and name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit
from pytreekit import Static, field, pytree_class

CALLS: list[str] = []  # what the victim's own code ran
T = TypeVar("T")


@pytree_class
class Head:
    """Applies ``pre`` on the host to the caller's own NumPy array."""

    w: jax.Array
    pre: Callable[[np.ndarray], np.ndarray] = field(static=True, default=np.tanh)

    def predict(self, features: np.ndarray) -> Any:
        return self.pre(features)


def example(cls: type) -> Any:
    """The honest instance of ``cls`` the attacker exports."""
    return EXAMPLES.get(cls.__name__, cls)(jax.numpy.ones(2))


def use(model: Any) -> str:
    """What the victim's own code does with a loaded model, and what became of its data."""
    features = np.ones((1, 2))
    out = model.predict(features)
    held = (sorted(vars(model)), CALLS)
    return (
        f"features after the call: {features.tolist()}, output: {np.asarray(out).tolist()}, {held}"
    )


@pytree_class(static=("act",))
class Layer:
    """No annotations: the class binds a default (``scale = 1.0``) an instance may override."""

    scale = 1.0
    shift = np.tanh  # a callable class attribute: what the class's code may call

    def __init__(self, w: Any, act: Any = jnp.tanh, scale: Any = None) -> None:
        self.w = w
        self.act = act
        if scale is not None:
            self.scale = scale

    def predict(self, features: Any) -> Any:
        return self.act(features @ self.w) * self.scale


@pytree_class(static=("conf",))
class Holder:
    """Holds a pytree instance of a class without annotations as a static value."""

    def __init__(self, w: Any, conf: Any = None) -> None:
        self.w = w
        self.conf = conf

    def predict(self, features: Any) -> Any:
        return features.sum() * self.conf.rate


@pytree_class
class Conf:
    """No annotations either; its class default is overridden (``rate``)."""

    rate = 0.1
    shift = np.tanh  # a callable class attribute: what the class's code may call

    def __init__(self, rate: Any = None) -> None:
        if rate is not None:
            self.rate = rate

    def __hash__(self) -> int:
        return hash(self.rate)

    def __eq__(self, other: object) -> bool:
        return type(other) is Conf and other.rate == self.rate

    def scaled(self, x: Any) -> Any:
        return x * self.rate


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
class Box(Generic[T]):
    item: T


@pytree_class
class Generics:
    """Fields declared as generic aliases: their arguments apply to what the instance holds."""

    w: jax.Array
    act: Static[Callable[[Any], Any]] = field(static=True, default=Static(jnp.tanh))
    box: Box[int] = field(static=True, default=Box(2))

    def predict(self, features: Any) -> Any:
        return self.act(features) * self.box.item


pytreekit.add_safe_references([Conf])  # in the writer and the victim: both import this module

EXAMPLES: dict[str, Callable[[Any], Any]] = {
    "Layer": lambda w: Layer(jnp.ones((2, 2)), scale=3.0),
    "Holder": lambda w: Holder(w, Conf(rate=0.5)),
}
