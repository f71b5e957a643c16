"""Values for tests/test_codec.py, found by references as ``codec_fixtures:<name>``.

Every method that loading static data must never run records its call in ``CALLS``: ``__new__``,
``__init__``, ``__post_init__``, ``__setstate__``, ``__eq__``, ``__hash__``, ``__del__``, a
property's setter, and this module's ``__getattr__``. Registered decoders may run; they record in
``DECODED``.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import typing
from typing import Any

import jax.numpy as jnp

from pytreekit import Static, add_safe_references, field, pytree_class, register_static_codec

CALLS: list[str] = []
DECODED: list[Any] = []


def __getattr__(name: str) -> Any:
    CALLS.append(f"module __getattr__({name!r})")
    raise AttributeError(name)


def relu(x: Any) -> Any:
    return jnp.maximum(x, 0)


class NoModule:
    """A callable naming no module, as numpy < 1.25's ufuncs (``numpy.add``) do."""

    def __init__(self, name: str) -> None:
        self.__name__ = name
        self.__module__: Any = None

    def __call__(self, x: Any) -> Any:
        return x


named_nowhere = NoModule("named_nowhere")


LAMBDA = lambda x: x  # noqa: E731 - a module-level lambda is still stored by no name


class Recorder:
    """A class (stored by reference) whose every hook records."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        CALLS.append("Recorder.__new__")
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        CALLS.append("Recorder.__init__")

    def __setstate__(self, state: Any) -> None:
        CALLS.append("Recorder.__setstate__")

    def __eq__(self, other: object) -> bool:
        CALLS.append("Recorder.__eq__")
        return self is other

    def __hash__(self) -> int:
        CALLS.append("Recorder.__hash__")
        return 0

    def __del__(self) -> None:
        CALLS.append("Recorder.__del__")


@dataclasses.dataclass(frozen=True)
class Frozen:
    size: int
    activation: Any = relu

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        CALLS.append("Frozen.__new__")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        CALLS.append("Frozen.__post_init__")

    def __eq__(self, other: object) -> bool:
        CALLS.append("Frozen.__eq__")
        return type(other) is Frozen and (self.size, self.activation) == (
            other.size,
            other.activation,
        )

    def __hash__(self) -> int:
        CALLS.append("Frozen.__hash__")
        return hash(self.size)

    @property
    def guarded(self) -> int:
        return 0

    @guarded.setter
    def guarded(self, value: int) -> None:
        CALLS.append("Frozen.guarded setter")


@dataclasses.dataclass(frozen=True, slots=True)
class Slotted:
    name: str
    dims: tuple[int, ...] = (1,)

    def __post_init__(self) -> None:
        CALLS.append("Slotted.__post_init__")


@dataclasses.dataclass
class Mutable:
    size: int


class Pair(collections.namedtuple("Pair", "left right")):
    __slots__ = ()

    def __new__(cls, left: Any, right: Any) -> Any:
        CALLS.append("Pair.__new__")
        return super().__new__(cls, left, right)

    def __eq__(self, other: object) -> bool:
        CALLS.append("Pair.__eq__")
        return tuple.__eq__(self, other)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        CALLS.append("Pair.__hash__")
        return tuple.__hash__(self)


class Point(typing.NamedTuple):
    x: float
    y: float = 0.0


class Color(enum.Enum):
    RED = 1
    GREEN = 2
    CRIMSON = 1  # an alias of RED


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    R = 4
    W = 2


class Loud(enum.Enum):
    A = "a"

    def __hash__(self) -> int:
        CALLS.append("Loud.__hash__")
        return hash(self._name_)


@pytree_class(frozen=True)
class Layer:
    """Annotated and frozen: a static int and a static function; records what it may not run."""

    weights: Any = None
    size: int = field(static=True, default=3)
    activation: Any = field(static=True, default=relu)

    def __post_init__(self) -> None:
        CALLS.append("Layer.__post_init__")

    def __eq__(self, other: object) -> bool:
        CALLS.append("Layer.__eq__")
        return type(other) is Layer and (self.size, self.activation) == (
            other.size,
            other.activation,
        )

    def __hash__(self) -> int:
        CALLS.append("Layer.__hash__")
        return hash(self.size)


@pytree_class(static=("size", "name"))
class Block:
    """No annotations: its fields are what its recording ``__init__`` sets."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        CALLS.append("Block.__new__")
        return super().__new__(cls)

    def __init__(self, size: int, name: str) -> None:
        CALLS.append("Block.__init__")
        self.size = size
        self.name = name

    @property
    def mode(self) -> str:
        return "train"

    @mode.setter
    def mode(self, value: str) -> None:
        CALLS.append("Block.mode setter")


@pytree_class
class OwnState:
    """A pytree class whose pickling methods are the user's: static data refuses it."""

    size: int = field(static=True, default=1)

    def __getstate__(self) -> Any:
        return {"size": self.size}

    def __setstate__(self, state: Any) -> None:
        CALLS.append("OwnState.__setstate__")


@pytree_class
class Finalized:
    """A pytree class with ``__del__``: an object built from data would run it."""

    size: int = field(static=True, default=1)

    def __del__(self) -> None:
        CALLS.append("Finalized.__del__")


class Interval:
    """A type of the user's own, stored through a registered codec."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def __eq__(self, other: object) -> bool:
        return type(other) is Interval and (self.low, self.high) == (other.low, other.high)

    def __hash__(self) -> int:
        return hash((self.low, self.high))


def _decode_interval(data: Any) -> Interval:
    DECODED.append(data)
    low, high = data
    return Interval(low, high)


register_static_codec(Interval, lambda i: (i.low, i.high), _decode_interval)


STATIC_RELU = Static(relu)

# An instance built at import, so Block's first layout is its own whatever the tests load later.
BLOCK = Block(3, "b")
CALLS.clear()


class Tools:
    @staticmethod
    def helper(x: Any) -> Any:
        return x


@dataclasses.dataclass(frozen=True)
class Cached:
    """A frozen dataclass with a field ``__post_init__`` sets (or not: ``derived=None``), and a
    cached property (not stored)."""

    size: int
    derived: dataclasses.InitVar[int | None] = None
    # an init=False field without a default: set in __post_init__, where given
    derived_value: int = dataclasses.field(init=False)

    def __post_init__(self, derived: int | None) -> None:
        if derived is not None:
            object.__setattr__(self, "derived_value", derived)

    @functools.cached_property
    def double(self) -> int:
        return 2 * self.size


class Impostor:
    """Claims to be a frozen dataclass, with no place to store its field (no ``__dict__``)."""

    __slots__ = ()
    __dataclass_params__ = Frozen.__dataclass_params__  # type: ignore[attr-defined]
    __dataclass_fields__: typing.ClassVar = {"size": Frozen.__dataclass_fields__["size"]}


class BadFields:
    """Claims to be a frozen dataclass, with fields that are not a dict."""

    __dataclass_params__ = Frozen.__dataclass_params__  # type: ignore[attr-defined]
    __dataclass_fields__ = ("size",)


# Artifacts these tests write name this module's functions and classes: the tests trust them
# (issue 33: loading accepts only references the process allows).
add_safe_references(
    [
        value
        for value in list(globals().values())
        if callable(value) and getattr(value, "__module__", None) == __name__
    ]
    + [named_nowhere, Recorder.__init__, Tools.helper]
)
