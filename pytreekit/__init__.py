"""pytreekit: make your own classes JAX pytrees with one decorator.

>>> @pytreekit.pytree_class(static=("in_features", "out_features"))
... class Linear:
...     def __init__(self, key, in_features, out_features): ...
"""

from __future__ import annotations

from ._backends import BackendNotInstalledError, register_backend
from ._custom_jvp import CustomJVPMethod, custom_jvp_method
from ._custom_vjp import CustomVJPMethod, custom_vjp_method
from ._decorator import pytree_class
from ._fields import MISSING, Field, field
from ._filters import combine, is_array, is_inexact_array, partition
from ._frozen import FrozenInstanceError
from ._linearize import linearize
from ._replace import replace
from ._spec import fields, is_pytree_class

__all__ = [
    "MISSING",
    "BackendNotInstalledError",
    "CustomJVPMethod",
    "CustomVJPMethod",
    "Field",
    "FrozenInstanceError",
    "combine",
    "custom_jvp_method",
    "custom_vjp_method",
    "field",
    "fields",
    "is_array",
    "is_inexact_array",
    "is_pytree_class",
    "linearize",
    "partition",
    "pytree_class",
    "register_backend",
    "replace",
]

__version__ = "0.1.0"
