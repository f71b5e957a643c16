"""The victim's module for tests/test_artifacts_attack13.py: a torch pytree class whose checkpoints
fresh processes write by hand and load weights-only."""

from __future__ import annotations

import torch

from pytreekit import pytree_class


@pytree_class(backends=("torch",))
class Lin:
    w: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w
