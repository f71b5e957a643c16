"""Torch-backed classes that fresh processes import by module name (tests/test_interop.py)."""

from __future__ import annotations

import torch

from pytreekit import field, pytree_class


@pytree_class(backends=("torch",))
class TLinear:
    weight: torch.Tensor
    bias: torch.Tensor
    shape: tuple[int, int] = field(static=True, default=(3, 2))


@pytree_class(static=("scale",), backends=("torch",))
class TScaled:
    """No annotations: the aux data holds the layout too."""

    def __init__(self, scale: float, shift: torch.Tensor | None = None) -> None:
        self.scale = scale
        self.w = torch.ones(2)
        if shift is not None:
            self.shift = shift


class Net(torch.nn.Module):
    def forward(self, layer: TLinear, scaled: TScaled, x: torch.Tensor) -> torch.Tensor:
        out = x @ layer.weight + layer.bias
        out = out * scaled.scale * scaled.w
        return out + scaled.shift if hasattr(scaled, "shift") else out


def inputs() -> tuple[TLinear, TScaled, torch.Tensor]:
    layer = TLinear(torch.arange(6.0).reshape(3, 2), torch.tensor([0.5, -0.5]))
    return layer, TScaled(2.0, torch.tensor([1.0, 2.0])), torch.ones(4, 3)
