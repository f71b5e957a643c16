"""Compiling generated source, and re-pointing already-registered functions at new code.

Methods a class exposes (``__init__``, ``__eq__``, ...) are compiled with the class's module as
their home (``method_for``): their globals resolve the user's annotations and their
``__module__``/``__qualname__`` are the class's, as for methods dataclasses writes. The helpers
they call reach them through a closure under dunder names, so no field name can shadow them.

Pytree registries (jax, optree, torch) hold on to the function objects they were given and
refuse a second registration of the same class. When pytreekit learns more about a class after
registering it (the layout of an unannotated class, or a subclass decorated again with its own
options), it therefore swaps the code inside those same function objects. Every generated
function of a class lives in one namespace and has no closure, which is what makes the swap valid.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping
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


def method_for(
    cls: type,
    name: str,
    params: str,
    body: list[str],
    helpers: Mapping[str, Any],
    annotations: dict[str, Any] | None = None,
) -> types.FunctionType:
    """Compile ``def name(params): body`` as a method of ``cls``, in ``cls``'s module.

    ``helpers`` (names that must be dunders, as ``__pytreekit_x__``) are closed over, not put
    in the module's globals.
    """
    assert all(h.startswith("__pytreekit_") and h.endswith("__") for h in helpers)
    module = sys.modules.get(cls.__module__)
    module_globals = module.__dict__ if module is not None else {"__name__": cls.__module__}
    inner = f"def {name}({params}):\n" + "\n".join(indent(body or ["pass"])) + "\n"
    source = (
        f"def __pytreekit_make__({', '.join(helpers)}):\n"
        + "\n".join(indent(inner.splitlines()))
        + f"\n    return {name}\n"
    )
    namespace: dict[str, Any] = {}
    exec(
        compile(source, f"<pytreekit {cls.__qualname__}.{name}>", "exec"), module_globals, namespace
    )
    function: types.FunctionType = namespace["__pytreekit_make__"](**helpers)
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    function.__module__ = cls.__module__
    if annotations is not None:
        function.__annotations__ = annotations
    return function
