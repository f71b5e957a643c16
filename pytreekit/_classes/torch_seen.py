"""Whether torch has been imported. Generated ``__init__`` and ``observe`` code asks
torch.compile whether it is tracing only then, so until then that guard costs one attribute
read, not a lookup in ``sys.modules`` (0.15x a construction). An import hook sets ``imported``
when torch is first imported.

Generated code holds this module itself: torch.compile's tracer can hold a module (not an
object of a class of ours) among a function's closure cells, and pickle sends it by name.
"""

from __future__ import annotations

import sys

imported = "torch" in sys.modules


def compiling() -> bool:
    """Whether torch.compile is tracing the caller: asked once torch was imported, through an
    import, which the tracer follows (not ``sys.modules``, a dict it would try to copy whole)."""
    global imported
    try:
        import torch
    except ImportError:  # the import the hook saw failed: torch is not installed
        imported = "torch" in sys.modules
        return False
    return bool(torch.compiler.is_compiling())


class _Watch:
    """On ``sys.meta_path``: asked first for every module not imported yet, it finds none."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        global imported
        if name == "torch":
            imported = True


if not imported:
    sys.meta_path.insert(0, _Watch())
