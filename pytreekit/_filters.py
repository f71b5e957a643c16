"""Leaf predicates, and ``partition``/``combine`` for splitting a tree into two and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic)


def is_array(x: Any) -> bool:
    """Whether ``x`` is a JAX array (tracers included) or a NumPy array or scalar.

    Python numbers are not arrays. A predicate for ``partition``; never raises.

    >>> import jax.numpy as jnp
    >>> import numpy as np
    >>> from pytreekit import is_array
    >>> is_array(jnp.ones(2)), is_array(np.float32(1.0)), is_array(1.0), is_array(jnp.tanh)
    (True, True, False, False)
    """
    return isinstance(x, _ARRAY_TYPES)


def is_inexact_array(x: Any) -> bool:
    """Whether ``x`` is an array of floating-point or complex dtype: what can be differentiated.

    An array as ``is_array`` defines it; Python floats are not arrays, so they are ``False``.
    A predicate for ``partition``; never raises.

    >>> import jax.numpy as jnp
    >>> from pytreekit import is_inexact_array
    >>> is_inexact_array(jnp.ones(2)), is_inexact_array(jnp.arange(2)), is_inexact_array(1.0)
    (True, False, False)
    """
    return isinstance(x, _ARRAY_TYPES) and bool(jnp.issubdtype(x.dtype, jnp.inexact))


def partition(
    tree: Any, filter_spec: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[Any, Any]:
    """Split ``tree`` into ``(kept, rest)``, each with ``None`` where the other has the leaf.

    Both halves have ``tree``'s structure (its pytree classes and static fields included), so
    ``combine(kept, rest)`` rebuilds ``tree``. The usual use: differentiate, optimise or
    ``jit`` only the arrays of a model that also holds functions, ints or strings.

    Args:
        tree: Any pytree.
        filter_spec: Which leaves go to ``kept``: a predicate called on each leaf (such as
            ``is_inexact_array``), a bool for every leaf, or a tree prefix of ``tree`` whose
            leaves are predicates or bools, each applied to the subtree it covers.
        is_leaf: Passed on to ``jax.tree_util``: subtrees it accepts are treated as leaves.

    Returns:
        ``(kept, rest)``: two trees of ``tree``'s structure with ``None`` in place of the leaves
        that went to the other one.

    Raises:
        TypeError: A leaf of ``filter_spec`` is neither a bool nor callable.
        ValueError: ``filter_spec`` is a tree that is not a prefix of ``tree`` (raised by JAX).

    >>> import jax.numpy as jnp
    >>> from pytreekit import combine, is_inexact_array, partition
    >>> tree = {"weights": jnp.ones(2), "steps": 3, "activation": jnp.tanh}
    >>> params, rest = partition(tree, is_inexact_array)
    >>> params
    {'activation': None, 'steps': None, 'weights': Array([1., 1.], dtype=float32)}
    >>> rest["steps"], rest["weights"]
    (3, None)
    >>> combine(params, rest)["weights"]
    Array([1., 1.], dtype=float32)
    """
    mask = _mask(tree, filter_spec, is_leaf)
    kept = jax.tree_util.tree_map(lambda m, x: x if m else None, mask, tree, is_leaf=is_leaf)
    rest = jax.tree_util.tree_map(lambda m, x: None if m else x, mask, tree, is_leaf=is_leaf)
    return kept, rest


def combine(*trees: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Merge trees of one structure leaf-wise, taking the first leaf that is not ``None``.

    The inverse of ``partition``: ``combine(*partition(tree, spec))`` has ``tree``'s leaves.

    Args:
        *trees: Pytrees of one structure, with ``None`` for missing leaves.
        is_leaf: Passed on to ``jax.tree_util``: subtrees it accepts are treated as leaves.

    Returns:
        A tree of that structure; ``None`` where every tree has ``None``.

    Raises:
        ValueError: The trees do not have one structure (raised by JAX).
        TypeError: No tree is given.

    >>> from pytreekit import combine
    >>> combine({"a": 1, "b": None}, {"a": None, "b": 2})
    {'a': 1, 'b': 2}
    """

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
