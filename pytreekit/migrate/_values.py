"""The vocabulary of the symbolic evaluations: what a value in flatten, unflatten or
``__init__`` is known to be, and ``Refusal``, the reason a registration is left as it is.

A value is a place in the flattened form (``Slot``: ``children[i]``, ``aux[i]``, the aux value),
an ``__init__`` parameter followed symbolically (``Param``), one of those passed through a
conversion (``Converted``: ``jnp.asarray(x)``), a tuple of values (``Seq``), or anything else,
named by its source (``Opaque``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

# Conversions that leave a value of their own result type unchanged: rebuilding through them
# gives back the value flatten read. Anything else transforms (PTK109).
IDEMPOTENT = {
    "jax.numpy.asarray",
    "jax.numpy.array",
    "numpy.asarray",
    "numpy.array",
    "builtins.float",
    "builtins.int",
    "builtins.bool",
    "builtins.complex",
    "builtins.str",
    "builtins.tuple",
}


class Refusal(Exception):
    """Why a registration is left as it is: a code and a reason naming the culprit."""

    def __init__(self, code: str, reason: str, node: cst.CSTNode | None = None) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.node = node  # the code it names, for the report's file:line:col and excerpt
        # where to look for the node: (module, top-level statement) pairs the analysis knows
        self.where: list[tuple[Any, cst.CSTNode]] = []
        self.partial: Any = None  # what flatten carries, when the refusal leaves it known


@dataclass(frozen=True)
class Slot:
    """A place in the flattened form: ``children[i]``, ``aux[i]``, or the aux value itself."""

    kind: str  # "child", "aux", "aux_whole"
    index: int = 0

    def __str__(self) -> str:
        return {"child": f"children[{self.index}]", "aux": f"aux[{self.index}]"}.get(
            self.kind, "aux"
        )


@dataclass(frozen=True)
class Param:
    """An ``__init__`` parameter, followed symbolically (for the field order)."""

    name: str


@dataclass(frozen=True)
class Converted:
    """A value passed through a conversion (``jnp.asarray(x)``)."""

    function: str  # as written
    inner: Value


@dataclass(frozen=True)
class Opaque:
    """Anything else: a computed value, named by its source."""

    text: str


@dataclass(frozen=True)
class Seq:
    """A tuple or list literal, or ``children`` / ``aux`` as a whole in unflatten."""

    items: tuple[Value, ...]


Value = Slot | Param | Converted | Opaque | Seq


def strip(value: Value) -> tuple[Value, list[str]]:
    """The value under its conversions, and their names (outermost first)."""
    functions: list[str] = []
    while isinstance(value, Converted):
        functions.append(value.function)
        value = value.inner
    return value, functions


def describe_value(value: Value) -> str:
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, Param):
        return f"parameter {value.name}"
    if isinstance(value, Converted):
        return f"{value.function}({describe_value(value.inner)})"
    if isinstance(value, Seq):
        return "a sequence"
    return str(value)


# -- reading a function body ----------------------------------------------------------------


def is_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.Expr) and isinstance(
        statement.value, (cst.SimpleString, cst.ConcatenatedString)
    )
