"""Validation of static field values.

Static values live in the treedef, which ``jax.jit`` hashes and compares on every call, so they
must be hashable. Checking once when a value is stored (``__init__``, assignment, ``replace``)
keeps that cost off the flatten hot path and reports the culprit by class and field name instead
of JAX's bare "unhashable type".
"""

from __future__ import annotations

from typing import Any


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    kind = type(value).__qualname__
    if type(value).__module__ != "builtins":
        kind = f"{type(value).__module__}.{kind}"
    if shape is not None and dtype is not None:
        return f"an array ({kind} of dtype {dtype} and shape {tuple(shape)})"
    return f"a {kind} ({value!r:.60})"


def check_static_value(cls: type, name: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``cls.name`` unless ``value`` can live in a treedef."""
    try:
        hash(value)
    except TypeError:
        pass
    else:
        return
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        advice = (
            "Arrays cannot be static: make the field non-static so it becomes a leaf, "
            "or store a hashable Python value (a tuple, an int)."
        )
    else:
        advice = (
            "Use a hashable value (a tuple instead of a list, a frozen pytree class instead of a "
            "mutable one), or make the field non-static so it becomes part of the leaves."
        )
    raise TypeError(
        f"{cls.__qualname__}.{name} is a static field, so its value must be hashable (it is "
        f"stored in the treedef that jax.jit hashes), but it holds {_describe(value)}. {advice}"
    )
