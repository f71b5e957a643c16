"""``pytreekit._layouts.layout_for``: the name every pickled layout stores (instances and treedefs
pickled since 0.2.0). Layouts live in ``pytreekit._classes.layouts``; this alias keeps those
pickles loading."""

from __future__ import annotations

from ._classes import layout_for

__all__ = ["layout_for"]
