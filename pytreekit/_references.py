"""``pytreekit._references.import_by_name`` and ``new_object``: the names stand-ins pickled since
pytreekit 0.3.0 store. They live in ``pytreekit._names`` and ``pytreekit._classes.pickling``; this
alias keeps those pickles loading."""

from __future__ import annotations

from ._classes import new_object
from ._names import import_by_name

__all__ = ["import_by_name", "new_object"]
