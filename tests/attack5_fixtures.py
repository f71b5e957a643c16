"""Classes for tests/test_artifacts_attack5.py (the fifth attacker pass), which fresh processes
import by module name: an artifact names a class by module and name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from pytreekit import field, pytree_class


@pytree_class
class Head:
    """Applies ``pre`` on the host to the caller's own NumPy array."""

    w: jax.Array
    pre: Callable[[np.ndarray], np.ndarray] = field(static=True, default=np.tanh)

    def predict(self, features: np.ndarray) -> Any:
        return self.pre(features)


def example(cls: type) -> Any:
    """The honest instance of ``cls`` the attacker exports."""
    return cls(jax.numpy.ones(2))


def use(model: Any) -> str:
    """What the victim's own code does with a loaded model, and what became of its data."""
    features = np.ones((1, 2))
    out = model.predict(features)
    return f"features after the call: {features.tolist()}, output: {np.asarray(out).tolist()}"
