"""The victim's modules for tests/test_artifacts_attack8.py: torch pytree classes whose checkpoints
fresh processes write and load, and a class whose classmethod wraps a descriptor."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from pytreekit import field, pytree_class

CALLED: list[str] = []  # what ran of the victim's code that only an attacker would run


def gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


class Spy:
    """A descriptor whose ``__get__`` notes each call: a classmethod wrapping it passes
    ``classmethod.__get__`` on to it before Python 3.13."""

    def __get__(self, obj: object, owner: type | None = None) -> object:
        CALLED.append("Spy.__get__")
        return 0


class Holder:
    spied = classmethod(Spy())  # type: ignore[arg-type]

    @classmethod
    def make(cls) -> Holder:
        return cls()


def logged(method: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator as a user writes one: a frame named ``wrapper`` between torch and pytreekit."""

    @functools.wraps(method)
    def wrapper(self: object, state: object) -> object:
        CALLED.append(f"{type(self).__name__}.__setstate__")
        return method(self, state)

    return wrapper


@pytree_class(backends=("torch",))
class Base:
    weight: torch.Tensor
    act: Callable[[torch.Tensor], torch.Tensor] = field(static=True, default=gelu)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x @ self.weight)


@pytree_class(backends=("torch",))
class Logged(Base):
    """A subclass whose own decorated ``__setstate__`` hands the state on with ``super()``."""

    @logged
    def __setstate__(self, state: object) -> None:
        super().__setstate__(state)  # type: ignore[misc]


@pytree_class(backends=("torch",))
class GradFree(Base):
    """The same through torch's own decorator, whose frame is ``decorate_context``."""

    @torch.no_grad()
    def __setstate__(self, state: object) -> None:
        super().__setstate__(state)  # type: ignore[misc]


@dataclasses.dataclass(frozen=True)
class Cfg:
    fn: Callable[[Any], Any] | None = None
    width: int = 1


@pytree_class(backends=("torch",))
class Configured:
    weight: torch.Tensor
    cfg: Cfg = field(static=True, default=Cfg())


@pytree_class(backends=("torch",))
class Encoder:
    weight: torch.Tensor
    act: Callable[[torch.Tensor], torch.Tensor] = field(static=True, default=gelu)


@pytree_class(backends=("torch",))
class Net:
    """A child the model calls: ``self.encoder(x)``."""

    encoder: Encoder
    extra: Any = None


class Pair(NamedTuple):
    """A namedtuple torch serializes by name: its nodes still load."""

    a: Any
    b: Any


torch.utils._pytree._register_namedtuple(Pair, serialized_type_name="attack8_fixtures.Pair")
