"""The derivatives wing: custom derivative rules on methods, ``linearize``, ``partition`` and
``combine``. It knows nothing of decorated classes: it splits any pytree into differentiable
leaves and the rest (``split``), so it never imports ``pytreekit._classes``. Map: README.md."""

from __future__ import annotations

from .custom_gradient import CustomGradientMethod, custom_gradient_method
from .custom_jvp import CustomJVPMethod, custom_jvp_method
from .custom_vjp import CustomVJPMethod, custom_vjp_method
from .filters import combine, is_array, is_inexact_array, partition
from .linearize import linearize
from .method import inherit_rules

__all__ = [
    "CustomGradientMethod",
    "CustomJVPMethod",
    "CustomVJPMethod",
    "combine",
    "custom_gradient_method",
    "custom_jvp_method",
    "custom_vjp_method",
    "inherit_rules",
    "is_array",
    "is_inexact_array",
    "linearize",
    "partition",
]
