"""Compiling generated source, and re-pointing already-registered functions at new code.

Pytree registries (jax, optree, torch) hold on to the function objects they were given and
refuse a second registration of the same class. When pytreekit learns more about a class after
registering it (the layout of an unannotated class, or a subclass decorated again with its own
options), it therefore swaps the code inside those same function objects. Every generated
function of a class lives in one namespace and has no closure, which is what makes the swap valid.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


def compile_function(
    name: str, source: str, namespace: dict[str, Any], qualname: str
) -> types.FunctionType:
    """Execute ``source`` (which defines ``name``) in ``namespace`` and return the function."""
    code = compile(source, f"<pytreekit generated {qualname}>", "exec")
    exec(code, namespace)
    function = namespace[name]
    function.__qualname__ = qualname
    return function  # type: ignore[no-any-return]


def retarget(target: Callable[..., Any], replacement: types.FunctionType) -> None:
    """Make ``target`` run ``replacement``'s code from now on (both live in one namespace)."""
    assert isinstance(target, types.FunctionType)
    assert target.__globals__ is replacement.__globals__
    target.__code__ = replacement.__code__
    target.__defaults__ = replacement.__defaults__


def indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]
