"""Leaf predicates, and ``partition``/``combine`` for splitting a tree into two and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic)


def is_array(x: Any) -> bool:
    """Whether ``x`` is a JAX array (tracers included) or a NumPy array or scalar."""
    return isinstance(x, _ARRAY_TYPES)


def is_inexact_array(x: Any) -> bool:
    """Whether ``x`` is an array of floating-point or complex dtype: what can be differentiated."""
    return isinstance(x, _ARRAY_TYPES) and bool(jnp.issubdtype(x.dtype, jnp.inexact))


def partition(
    tree: Any, filter_spec: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[Any, Any]:
    """Split ``tree`` into ``(kept, rest)``, each with ``None`` where the other has the leaf.

    ``filter_spec`` is a predicate applied to each leaf, a bool, or a tree prefix of those.

    >>> params, static = partition(model, is_inexact_array)
    >>> model == combine(params, static)
    """
    mask = _mask(tree, filter_spec, is_leaf)
    kept = jax.tree_util.tree_map(lambda m, x: x if m else None, mask, tree, is_leaf=is_leaf)
    rest = jax.tree_util.tree_map(lambda m, x: None if m else x, mask, tree, is_leaf=is_leaf)
    return kept, rest


def combine(*trees: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Merge trees of one structure leaf-wise, taking the first leaf that is not ``None``."""

    def first(*leaves: Any) -> Any:
        return next((leaf for leaf in leaves if leaf is not None), None)

    def none_or_leaf(x: Any) -> bool:
        return x is None or (is_leaf is not None and is_leaf(x))

    return jax.tree_util.tree_map(first, *trees, is_leaf=none_or_leaf)


def _mask(tree: Any, filter_spec: Any, is_leaf: Callable[[Any], bool] | None) -> Any:
    def apply(spec: Any, subtree: Any) -> Any:
        if isinstance(spec, bool):
            return jax.tree_util.tree_map(lambda _: spec, subtree, is_leaf=is_leaf)
        if callable(spec):
            return jax.tree_util.tree_map(lambda x: bool(spec(x)), subtree, is_leaf=is_leaf)
        raise TypeError(
            f"partition(): filter_spec leaves must be bools or predicates, got {spec!r}"
        )

    return jax.tree_util.tree_map(apply, filter_spec, tree, is_leaf=lambda x: x is None)
