"""pytreekit: make your own classes JAX pytrees with one decorator.

>>> @pytreekit.pytree_class(static=("in_features", "out_features"))
... class Linear:
...     def __init__(self, key, in_features, out_features): ...
"""

from __future__ import annotations

from ._backends import BackendNotInstalledError, register_backend
from ._decorator import pytree_class
from ._fields import MISSING, Field, field
from ._frozen import FrozenInstanceError
from ._replace import replace
from ._spec import fields, is_pytree_class

__all__ = [
    "MISSING",
    "BackendNotInstalledError",
    "Field",
    "FrozenInstanceError",
    "field",
    "fields",
    "is_pytree_class",
    "pytree_class",
    "register_backend",
    "replace",
]

__version__ = "0.1.0"
