"""pytreekit: make your own classes JAX pytrees with one decorator.

``pytree_class`` registers a class with ``jax.tree_util`` (and optionally optree and torch);
annotated classes get a dataclass-like ``__init__``, others keep their own. ``field``,
``fields``, ``replace`` and ``is_pytree_class`` work with such classes; ``custom_jvp_method``,
``custom_vjp_method`` and ``custom_gradient_method`` put custom derivative rules on their
methods; ``linearize``,
``partition`` and ``combine`` handle trees that hold functions, ints or strings besides arrays;
``Static`` holds one such value as a pytree without leaves (a function in a list of layers).

>>> import jax
>>> import jax.numpy as jnp
>>> import pytreekit
>>> @pytreekit.pytree_class(static=("activation",))
... class Dense:
...     def __init__(self, weights, activation=jnp.tanh):
...         self.weights = weights
...         self.activation = activation
...
...     def __call__(self, x):
...         return self.activation(x @ self.weights)
>>> layer = Dense(jnp.ones((2, 3)))
>>> jax.tree_util.tree_leaves(layer)  # the static activation is not a leaf
[Array([[1., 1., 1.],
       [1., 1., 1.]], dtype=float32)]
>>> grads = jax.grad(lambda layer, x: layer(x).sum())(layer, jnp.zeros(2))
>>> type(grads).__name__, grads.weights.shape, grads.activation is jnp.tanh
('Dense', (2, 3), True)
"""

from __future__ import annotations

from ._artifacts import (
    ArtifactReference,
    add_safe_references,
    allow_pickled_artifacts,
    artifact_references,
    pickle_static_fields,
    register_static_codec,
    safe_references,
)
from ._backends import BackendNotInstalledError, register_backend
from ._classes import MISSING, Field, FrozenInstanceError, field, fields, is_pytree_class, replace
from ._decorator import pytree_class
from ._derivatives import (
    CustomGradientMethod,
    CustomJVPMethod,
    CustomVJPMethod,
    combine,
    custom_gradient_method,
    custom_jvp_method,
    custom_vjp_method,
    is_array,
    is_inexact_array,
    linearize,
    partition,
)
from ._static import Static

# The modules whose names pickles store (their functions' ``__module__``): imported, so that
# cloudpickle, which pickles by value a function whose module is not imported, names them.
from . import _layouts, _references, _wrappers  # noqa: F401  # isort: skip  # pyright: ignore[reportUnusedImport]

__all__ = [
    "MISSING",
    "ArtifactReference",
    "BackendNotInstalledError",
    "CustomGradientMethod",
    "CustomJVPMethod",
    "CustomVJPMethod",
    "Field",
    "FrozenInstanceError",
    "Static",
    "add_safe_references",
    "allow_pickled_artifacts",
    "artifact_references",
    "combine",
    "custom_gradient_method",
    "custom_jvp_method",
    "custom_vjp_method",
    "field",
    "fields",
    "is_array",
    "is_inexact_array",
    "is_pytree_class",
    "linearize",
    "partition",
    "pickle_static_fields",
    "pytree_class",
    "register_backend",
    "register_static_codec",
    "replace",
    "safe_references",
]

# Between releases, a development version of the next one: a wheel built from the tree is never
# taken for the last release (pip keeps an installed wheel of the same version).
__version__ = "0.5.0.dev0"

# For pdoc: docstrings use Google-style sections (Args:, Returns:, Raises:) over reST markup.
__docformat__ = "google"
