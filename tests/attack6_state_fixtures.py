"""Torch pytree classes whose checkpoints fresh processes write and load
(tests/test_artifacts_attack6_state.py): the victim's modules."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pytreekit import field, pytree_class


def gelu(x: torch.Tensor) -> torch.Tensor:
    """The model's own activation: pickled by name (a function of torch itself pickles through
    ``getattr``, which ``weights_only`` refuses); no safe reference until the victim allows it."""
    return torch.nn.functional.gelu(x)


@pytree_class(backends=("torch",))
class Linear:
    weight: torch.Tensor
    act: Callable[[torch.Tensor], torch.Tensor] = field(static=True, default=gelu)
    scale: float = field(static=True, default=1.0)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x @ self.weight) * self.scale


@pytree_class(backends=("torch",), static=("act",))
class Plain:
    """No annotations: the fields are what ``__init__`` sets."""

    def __init__(self, weight: torch.Tensor, act: Callable[..., torch.Tensor] = gelu):
        self.weight = weight
        self.act = act

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x @ self.weight)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self(x).argmax(-1)


class Net(torch.nn.Module):
    def forward(self, linear: Linear, x: torch.Tensor) -> torch.Tensor:
        return (x @ linear.weight) * linear.scale


@pytree_class(backends=("torch",))
class Lazy:
    """A field set after construction (a cache): an honest checkpoint may hold it unset."""

    weight: torch.Tensor
    cache: torch.Tensor = field(init=False)


class Delegating(Linear):
    """A pytree subclass whose own ``__setstate__`` hands the state to pytreekit's."""

    def __setstate__(self, state: object) -> None:
        super().__setstate__(state)  # type: ignore[misc]
