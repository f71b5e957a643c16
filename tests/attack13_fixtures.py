"""The victim's module for tests/test_artifacts_attack13.py: a torch pytree class whose checkpoints
fresh processes write by hand and load weights-only."""

from __future__ import annotations

from typing import Protocol

import torch

from pytreekit import field, pytree_class


@pytree_class(backends=("torch",))
class Lin:
    w: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w


class Activation(Protocol):
    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


@pytree_class(frozen=True, backends=("torch",))
class Swish(Activation):
    beta: float = field(static=True, default=1.0)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)


@pytree_class(backends=("torch",))
class Layer:
    """A callback protocol's field: a ``Swish()`` in it, never the class ``Swish``."""

    w: torch.Tensor
    act: Activation = field(static=True, default=Swish())
