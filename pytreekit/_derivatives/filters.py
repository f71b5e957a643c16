"""Leaf predicates, and ``partition``/``combine`` for splitting a tree into two and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._messages import type_name
from .split import PyTreeDef

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic)


def is_array(x: Any) -> bool:
    """Whether ``x`` is a JAX array (tracers included) or a NumPy array or scalar; Python
    numbers are not. A predicate for ``partition``; never raises.

    >>> import jax.numpy as jnp
    >>> import numpy as np
    >>> from pytreekit import is_array
    >>> is_array(jnp.ones(2)), is_array(np.float32(1.0)), is_array(1.0), is_array(jnp.tanh)
    (True, True, False, False)
    """
    return isinstance(x, _ARRAY_TYPES)


def is_inexact_array(x: Any) -> bool:
    """Whether ``x`` is an array (as ``is_array`` says) of floating-point or complex dtype: what
    can be differentiated. A predicate for ``partition``; never raises.

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

    Both halves have ``tree``'s structure (its pytree classes and static fields included), and
    ``combine(kept, rest)`` rebuilds it: differentiate, optimise or ``jit`` only the arrays of a
    model that also holds functions, ints or strings (pass ``kept`` to a jitted function and
    close over ``rest``).

    Args:
        tree: Any pytree.
        filter_spec: Which leaves go to ``kept``: a predicate called on each leaf (such as
            ``is_inexact_array``), a bool for every leaf, or a tree prefix of ``tree`` whose
            leaves are predicates or bools, each applied to the subtree it covers; ``None``
            where ``tree`` has ``None`` (as ``jax.tree_util.tree_map`` leaves it).
        is_leaf: Passed on to ``jax.tree_util``: subtrees it accepts are treated as leaves.

    Raises:
        TypeError: A leaf of ``filter_spec`` is neither a bool nor callable (nor a ``None``
            where ``tree`` has ``None``), or ``is_leaf`` is not callable.
        ValueError: ``filter_spec`` is not a prefix of ``tree``.

    >>> import jax, jax.numpy as jnp
    >>> from pytreekit import combine, is_inexact_array, partition
    >>> tree = {"weights": jnp.ones(2), "steps": 3, "activation": jnp.tanh}
    >>> params, rest = partition(tree, is_inexact_array)
    >>> params, rest["steps"]
    ({'activation': None, 'steps': None, 'weights': Array([1., 1.], dtype=float32)}, 3)
    >>> step = jax.jit(lambda params: combine(params, rest)["activation"](params["weights"]))
    >>> step(params)  # rest is closed over, not passed
    Array([0.7615942, 0.7615942], dtype=float32)
    """
    _check_is_leaf("partition()", is_leaf)
    mask = _mask(tree, filter_spec, is_leaf)
    # mask has a bool wherever is_leaf stopped, so tree is cut at the same subtrees.
    kept = jax.tree_util.tree_map(lambda m, x: x if m else None, mask, tree)
    rest = jax.tree_util.tree_map(lambda m, x: None if m else x, mask, tree)
    return kept, rest


def combine(*trees: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Merge trees of one structure leaf-wise, taking the first leaf that is not ``None``
    (``None`` where every tree has ``None``): the inverse of ``partition``.

    Args:
        *trees: Pytrees of one structure, with ``None`` for missing leaves.
        is_leaf: Passed on to ``jax.tree_util``: subtrees it accepts are treated as leaves.

    Raises:
        TypeError: No tree is given, or ``is_leaf`` is not callable.
        ValueError: A tree does not have the first one's structure.

    >>> from pytreekit import combine
    >>> combine({"a": 1, "b": None}, {"a": None, "b": 2})
    {'a': 1, 'b': 2}
    """
    if not trees:
        raise TypeError(
            "combine() needs at least one tree, got none: pass the trees to merge, as in "
            "combine(kept, rest)."
        )
    _check_is_leaf("combine()", is_leaf)

    def none_or_leaf(x: Any) -> bool:
        return x is None or (is_leaf is not None and is_leaf(x))

    # tree_map(first, *trees) spelled out, so that a structure mismatch can be explained.
    treedef: PyTreeDef
    leaves, treedef = jax.tree_util.tree_flatten(trees[0], is_leaf=none_or_leaf)
    all_leaves = [leaves]
    for index, tree in enumerate(trees[1:], start=1):
        try:
            all_leaves.append(treedef.flatten_up_to(tree))
        except (ValueError, TypeError) as error:
            names = ("trees[0]", f"trees[{index}]")
            where = _where_not_prefix(trees[0], tree, names, none_or_leaf, error)
            raise ValueError(
                f"combine(): every tree must have the structure of the first (None in the first "
                f"may stand for any subtree); {where}"
            ) from None
    columns = zip(*all_leaves, strict=True)
    return treedef.unflatten(
        [next((x for x in column if x is not None), None) for column in columns]
    )


def _mask(tree: Any, filter_spec: Any, is_leaf: Callable[[Any], bool] | None) -> Any:
    # tree_map(apply, filter_spec, tree) spelled out, so that only a structure mismatch (not an
    # error raised by a user's predicate) becomes the error about filter_spec's shape.
    spec_def: PyTreeDef
    specs, spec_def = jax.tree_util.tree_flatten(filter_spec, is_leaf=_is_none)
    try:
        subtrees = spec_def.flatten_up_to(tree)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"partition(): filter_spec must be a bool, a predicate, or a tree prefix of tree "
            f"(tree's structure down to some depth, with bools or predicates as leaves); "
            f"{_where_not_prefix(filter_spec, tree, ('filter_spec', 'tree'), _is_none, error)}"
        ) from None
    masks: list[Any] = []
    for index, (spec, subtree) in enumerate(zip(specs, subtrees, strict=True)):
        if spec is None and subtree is None:
            # None against tree's own None (an empty node), as a spec built with
            # tree_map(lambda _: False, tree) has: nothing to mask there.
            masks.append(None)
        elif isinstance(spec, bool) or callable(spec):
            masks.append(jax.tree_util.tree_map(_as_mask(spec), subtree, is_leaf=is_leaf))
        else:
            raise _not_a_spec(filter_spec, index, spec)
    return spec_def.unflatten(masks)


def _not_a_spec(filter_spec: Any, index: int, spec: Any) -> TypeError:
    """The error for the ``index``-th leaf of ``filter_spec``, ``spec``, no bool or predicate."""
    path = jax.tree_util.tree_flatten_with_path(filter_spec, is_leaf=_is_none)[0][index][0]
    advice = (
        " Convert it with bool(...)."
        if spec is not None and is_array(spec) and spec.shape == () and spec.dtype == np.bool_
        else " Use True or False for a whole subtree, or a predicate."
    )
    return TypeError(
        f"partition(): filter_spec{jax.tree_util.keystr(path)} is {spec!r} "
        f"({type_name(spec)}), but the leaves of filter_spec must be Python bools or "
        f"predicates (functions of a leaf returning a bool, such as "
        f"pytreekit.is_inexact_array).{advice}"
    )


def _as_mask(spec: bool | Callable[[Any], Any]) -> Callable[[Any], bool]:
    if isinstance(spec, bool):
        return lambda _: spec
    return lambda leaf: bool(spec(leaf))


def _is_none(x: Any) -> bool:
    return x is None


def _check_is_leaf(caller: str, is_leaf: Any) -> None:
    if is_leaf is not None and not callable(is_leaf):
        raise TypeError(
            f"{caller}: is_leaf must be None or a function of a subtree returning a bool, got "
            f"{is_leaf!r} ({type_name(is_leaf)})."
        )


def _where_not_prefix(
    prefix: Any, tree: Any, names: tuple[str, str], stop: Callable[[Any], bool], error: Exception
) -> str:
    """The first key path where ``prefix`` stops being a prefix of ``tree``, both nodes described
    (``stop`` tells the prefix's leaves)."""
    prefix_name, tree_name = names
    stack: list[tuple[tuple[Any, ...], Any, Any]] = [((), prefix, tree)]
    while stack:
        path, prefix_node, tree_node = stack.pop()
        if stop(prefix_node) or _is_leaf_node(prefix_node):
            continue
        prefix_children, prefix_def = _one_level(prefix_node)
        tree_children, tree_def = _one_level(tree_node)
        where = jax.tree_util.keystr(path)
        if prefix_def != tree_def:  # a leaf of tree too: its one level is a bare leaf
            return (
                f"at {tree_name}{where}, {prefix_name} has {_describe(prefix_node, prefix_def)} "
                f"where {tree_name} has {_describe(tree_node, tree_def)}."
            )
        pairs = zip(prefix_children, tree_children, strict=True)
        stack.extend(
            ((*path, *key), prefix_child, tree_child)
            for (key, prefix_child), (_, tree_child) in reversed(list(pairs))
        )
    return f"{prefix_name} is not a prefix of {tree_name} ({error})."


def _is_leaf_node(x: Any) -> bool:
    return jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(x)) and x is not None


def _one_level(node: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """The children of ``node`` with their keys, and the treedef of that one level."""
    return jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda child: child is not node)


def _describe(node: Any, one_level: Any) -> str:
    if node is None:
        return "None"
    if _is_leaf_node(node):
        return f"a leaf ({type(node).__name__})"
    return f"a {type(node).__name__} node {one_level}"
