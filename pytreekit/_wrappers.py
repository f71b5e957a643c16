"""``pytreekit._wrappers.Static``: the name instances pickled by pytreekit 0.3.0 store. ``Static``
lives in ``pytreekit._static``; this alias keeps those pickles loading."""

from __future__ import annotations

from ._static import Static

__all__ = ["Static"]
