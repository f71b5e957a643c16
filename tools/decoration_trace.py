"""How decorating one class travels through pytreekit: calls, modules, and returns to a module the
call chain had already left (A -> B -> A counts one return to A). The figures of issue 35.

    JAX_PLATFORMS=cpu python tools/decoration_trace.py
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

import jax  # noqa: F401  (imported before tracing: only decoration is measured)

import pytreekit

ROOT = Path(pytreekit.__file__).resolve().parent


def _module(frame: types.FrameType) -> str | None:
    filename = frame.f_code.co_filename
    if filename.startswith(str(ROOT)):
        return str(Path(filename).resolve().relative_to(ROOT.parent))
    if filename.startswith("<pytreekit"):
        return "<generated>"
    return None


def trace(make: Any) -> tuple[int, Counter[str], int, int]:
    """Calls into pytreekit's modules, per module, and the returns to a module left before:
    each time control comes back (by a call or a return) to a module other than the current
    one that the decoration had already visited and left."""
    calls = 0
    modules: Counter[str] = Counter()
    revisits = 0
    stack: list[str] = []
    path: list[str] = []
    crossings = [0]

    def arrive(module: str) -> None:
        nonlocal revisits
        if path and path[-1] != module and module in path:
            revisits += 1
        if not path or path[-1] != module:
            path.append(module)

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event not in ("call", "return"):
            return
        module = _module(frame)
        if module is None:
            return
        if event == "call":
            calls += 1
            modules[module] += 1
            stack.append(module)
            arrive(module)
        elif stack:
            stack.pop()
            if stack:
                arrive(stack[-1])
                crossings[0] += stack[-1] != module

    sys.setprofile(profile)
    try:
        make()
    finally:
        sys.setprofile(None)
    return calls, modules, revisits, crossings[0]


def _annotated() -> None:
    @pytreekit.pytree_class
    class Linear:
        weight: Any
        bias: Any
        size: int = pytreekit.field(static=True, default=1)


if __name__ == "__main__":
    _annotated()  # warm: first-use imports and caches are not decoration's
    calls, modules, revisits, crossings = trace(_annotated)
    print(
        f"decorating a 3-field annotated class: {calls} calls in {len(modules)} modules; "
        f"{crossings} returns into another module, {revisits} arrivals back in a module left "
        "before"
    )
    for module, count in modules.most_common():
        print(f"  {count:4d}  {module}")
