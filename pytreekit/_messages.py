"""How errors describe values and suggest names: the vocabulary every message of pytreekit uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def looks_like_array(value: Any) -> bool:
    """An array of any library (JAX, NumPy, torch, a tracer), not a Python number."""
    return (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, (int, float, complex, bool))
    )


def type_name(value: Any) -> str:
    """The name of ``value``'s type as error messages give it: with its module, unless builtin."""
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def describe(value: Any) -> str:
    """A value as an error message names it: arrays by kind, dtype and shape, others by repr."""
    kind = type_name(value)
    if looks_like_array(value):
        return f"an array ({kind} of dtype {value.dtype} and shape {tuple(value.shape)})"
    return f"a {kind} ({value!r:.60})"


# How alike two names must be (difflib's ratio) for one to be taken for a misspelling of the other:
# loosely to suggest a name in an error raised anyway, strictly to raise an error because of it
# (``x1`` is no misspelling of ``x10``; ``widht`` is one of ``width``, 0.8 alike).
SUGGEST = 0.6
ACCUSE = 0.85


def close_match(name: str, candidates: Iterable[str], cutoff: float) -> str | None:
    """The candidate ``name`` is most likely a misspelling of, if any is ``cutoff`` alike."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def unhashable_error(cls: type, name: str, value: Any, role: str) -> TypeError:
    """Why ``cls.name``'s value must be hashable and is not (``role``: static or hash)."""
    owner = cls.__qualname__
    if role == "static":
        why = (
            f"{owner}.{name} is a static field, so its value must be hashable (it is stored in "
            f"the treedef that jax.jit hashes), but it holds"
        )
        if looks_like_array(value):
            advice = (
                "Arrays cannot be static: make the field non-static so it becomes a leaf, or "
                "store a hashable Python value (a tuple, an int)."
            )
        else:
            advice = (
                "Use a hashable value (a tuple instead of a list, a frozen pytree class instead "
                "of a mutable one), or make the field non-static so it becomes part of the "
                "leaves."
            )
    else:
        why = (
            f"{owner} instances are hashable only when the fields they compare are, but field "
            f"{name!r} holds"
        )
        advice = (
            "To compile with an instance, pass it to the jitted function as an argument (not as "
            "the function or a static argument); to hash by the other fields, declare this one "
            "with field(hash=False), or define __hash__ on the class."
        )
    return TypeError(f"{why} {describe(value)}. {advice}")
