"""Griffe extension: show the docstrings' doctest examples as code in the API reference.

pytreekit's docstrings end with bare doctest examples (``>>>`` lines, then the output), which
tests/test_docstrings.py runs. Markdown would read ``>>>`` as nested block quotes, ``__init__`` as
bold "init" and an output such as ``[('weights', False)]`` as a link; this wraps each example
(from its first ``>>>`` line to the next blank line) in a ``pycon`` code fence before mkdocstrings
renders it.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    lines, out, inside_fence, in_example = text.splitlines(), [], False, False
    indent = ""
    for line in lines:
        stripped = line.strip()
        if not in_example and stripped.startswith("```"):
            inside_fence = not inside_fence
        if not inside_fence and not in_example and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            in_example = True
        elif in_example and not stripped:
            out.append(f"{indent}```")
            in_example = False
        out.append(line)
    if in_example:
        out.append(f"{indent}```")
    return "\n".join(out)


def _fence(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        obj.docstring.value = fence_doctests(obj.docstring.value)


class DoctestFences(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        # on_object fires for the members of the loaded package, never for the package itself:
        # the package docstring (the first thing the API page shows) needs this event.
        _fence(pkg)

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        _fence(obj)
