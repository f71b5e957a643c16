"""Classes and values for tests/test_artifacts.py and tests/test_pickling.py, which fresh
processes import by module name: an artifact or a pickle names a class by module and name.

``KINDS`` holds one static value of every kind static data stores; ``describe`` writes any of
them as plain JSON-able data (types by name, floats by repr, functions by module and name), so a
process can say what it read without trusting the format under test.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import typing
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pytreekit import add_safe_references, field, pytree_class, register_static_codec

try:
    import torch  # noqa: F401 - only whether it is there

    BACKENDS: tuple[str, ...] = ("jax", "torch")
except ImportError:  # pragma: no cover - CI installs torch
    BACKENDS = ("jax",)


def relu(x: Any) -> Any:
    return jnp.maximum(x, 0.0)


class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"


class Config(typing.NamedTuple):
    activation: Any
    width: int = 4


@dataclasses.dataclass(frozen=True)
class Settings:
    activation: Any
    name: str = "s"


@dataclasses.dataclass(frozen=True, eq=False)
class Bag:
    """Hashable by identity, so it can hold a list and a dict in a static field."""

    items: list[Any]
    table: dict[Any, Any]


class Interval:
    """A type of the user's own, stored through a registered codec."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def __eq__(self, other: object) -> bool:
        return type(other) is Interval and (self.low, self.high) == (other.low, other.high)

    def __hash__(self) -> int:
        return hash((self.low, self.high))


register_static_codec(Interval, lambda i: [i.low, i.high], lambda data: Interval(*data))


@pytree_class(frozen=True)
class Inner:
    """A frozen pytree class as a static value."""

    scale: float = 1.0
    activation: Any = field(static=True, default=jnp.tanh)


@dataclasses.dataclass(frozen=True, slots=True)
class SlottedSettings:
    activation: Any
    depth: int = 2


@dataclasses.dataclass(frozen=True)
class Reduced:
    """A frozen dataclass that says itself how pickle rebuilds it."""

    activation: Any

    def __reduce__(self) -> tuple[Any, ...]:
        return (Reduced, (self.activation,))


class Opaque:
    """A value static data does not store (no codec registered)."""


@pytree_class(static=("value",), backends=BACKENDS)
class Holder:
    """One static value beside one leaf (a JAX array, or what ``w`` is)."""

    def __init__(self, value: Any, w: Any = None) -> None:
        self.value = value
        self.w = jnp.ones(2) if w is None else w


CALLS: list[str] = []


@pytree_class(static=("size",), backends=BACKENDS)
class Guarded:
    """No annotations: its fields are learned from names, which a property of the class must
    never become (storing one runs its recording setter)."""

    def __init__(self, size: int, w: Any) -> None:
        self.size = size
        self.w = w

    @property
    def mode(self) -> str:
        return "train"

    @mode.setter
    def mode(self, value: str) -> None:
        CALLS.append("Guarded.mode setter")


@pytree_class(backends=BACKENDS)
class Victim:
    """What the tampered artifacts are written from: its long static string leaves room for the
    payloads that replace its static data."""

    weight: Any
    note: str = field(static=True, default="x" * 200)


KINDS: dict[str, Any] = {
    "none": None,
    "bools": (True, False),
    "ints": (0, -7, 2**80),
    "floats": (1.5, -0.0, math.inf, -math.inf, math.nan),
    "complex": complex(1.0, -2.5),
    "str": "dense_0 ünïcode",
    "bytes": b"\x00\xffbytes",
    "tuple": (1, ("nested", 2.0)),
    "frozenset": frozenset({1, "a", (2, 3)}),
    "numpy-dtype": np.dtype("float32"),
    "jax-dtype": jnp.dtype(jnp.bfloat16),
    "enum": Mode.EVAL,
    "namedtuple": Config(jnp.tanh, 8),
    "frozen-dataclass": Settings(jax.nn.relu, "settings"),
    "slotted-dataclass": SlottedSettings(jnp.tanh),
    "list-and-dict": Bag([1, relu], {"a": 1, 2: (3,)}),
    "pytree-instance": Inner(2.0),
    "partial": functools.partial(jax.nn.leaky_relu, negative_slope=0.2),
    "function": relu,
    "jax-function": jax.nn.relu,
    "class": Settings,
    "codec": Interval(0.0, 1.5),
    # Refused or broken before issue 33:
    "long-int": -(10**5000),
    "none-type": type(None),
    "surrogate-pair": "\ud83d\ude00",
    "dict-fromkeys": dict.fromkeys,
}
try:
    import torch as _torch

    KINDS.update(
        {
            "torch-dtype": _torch.float32,
            "torch-device": _torch.device("cpu"),
            "torch-function": _torch.tanh,
        }
    )
except ImportError:  # pragma: no cover - CI installs torch
    pass


def holders(leaf: Any = None) -> list[Holder]:
    return [Holder(value, leaf) for value in KINDS.values()]


def describe(value: Any) -> Any:
    """``value`` as plain data, recursively: what a reader must get back."""
    kind = type(value)
    if kind is int and value.bit_length() > 10_000:  # more digits than str() converts
        return ["int", format(value, "x")]
    if value is None or kind in (bool, int, str):
        return [kind.__name__, value]
    if kind.__module__ == "torch" and kind.__name__ in ("dtype", "device"):
        return ["torch", str(value)]
    if isinstance(value, float):  # a NaN reads back as LoadedNaN (issue 33)
        return ["float", repr(value)]
    if kind is complex:
        return ["complex", repr(value.real), repr(value.imag)]
    if kind is bytes:
        return ["bytes", value.hex()]
    if kind in (tuple, list):
        return [kind.__name__, [describe(item) for item in value]]
    if kind is frozenset:
        return ["frozenset", sorted(json.dumps(describe(item)) for item in value)]
    if kind is dict:
        return ["dict", [[describe(k), describe(v)] for k, v in value.items()]]
    if isinstance(value, np.dtype):
        return ["dtype", str(value)]
    if isinstance(value, enum.Enum):
        return ["enum", _name(kind), value.name]
    if isinstance(value, functools.partial):  # read back as LoadedPartial (issue 33)
        return ["partial", describe(value.func), describe(value.args), describe(value.keywords)]
    if kind is Interval:
        return ["Interval", value.low, value.high]
    if isinstance(value, tuple):  # a NamedTuple
        return [_name(kind), [describe(item) for item in value]]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [_name(kind), {f.name: describe(getattr(value, f.name)) for f in _fields(value)}]
    if callable(value):
        return ["by name", _name(value), _same(value)]
    raise AssertionError(f"no description for {value!r}")  # pragma: no cover


def _fields(value: Any) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(value)


def _name(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _same(value: Any) -> bool:
    """Whether ``value`` is the very object its module holds under its name (jax.nn.relu comes
    back as jax.nn.relu, not a copy)."""
    known = (relu, jax.nn.relu, jax.nn.gelu, jnp.tanh, jax.nn.leaky_relu, Settings, Opaque)
    known += (
        type(None),
        *(KINDS[name] for name in ("dict-fromkeys", "torch-function") if name in KINDS),
    )
    # dict.fromkeys is a new object at each lookup, equal to the last
    return any(
        value is obj or (type(value) is type(dict.fromkeys) and value == obj) for obj in known
    )


# Artifacts these tests write name this module's functions and classes: the tests trust them
# (issue 33: loading accepts only references the process allows).
add_safe_references(
    [
        value
        for value in list(globals().values())
        if callable(value) and getattr(value, "__module__", None) == __name__
    ]
    + [dict.fromkeys]
)
