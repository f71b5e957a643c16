"""Splitting arguments into the array leaves JAX transforms see and everything else, and back:
JAX's differentiation APIs take arrays only, pytreekit's any tree, so the user never lists
``nondiff_argnums``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeAlias

import jax

# jaxlib's PyTreeDef is a compiled class without stubs: mypy reads it as Any, pyright as a
# variable it refuses in annotations. pytreekit annotates treedefs with this alias.
PyTreeDef: TypeAlias = Any


class Split:
    """A flattened tree with its dynamic leaves (at ``dynamic``) taken out."""

    __slots__ = ("dynamic", "leaves", "residuals", "treedef")

    def __init__(self, treedef: PyTreeDef, leaves: list[Any], dynamic: tuple[int, ...]) -> None:
        self.treedef = treedef
        self.leaves = leaves
        self.dynamic = dynamic
        self.residuals: Split | None = None  # custom_vjp: what fwd saved, for bwd

    def rebuild(self, dynamic_leaves: Sequence[Any]) -> Any:
        leaves = list(self.leaves)
        for position, leaf in zip(self.dynamic, dynamic_leaves, strict=True):
            leaves[position] = leaf
        return self.treedef.unflatten(leaves)

    def rebuild_sparse(self, values: dict[int, Any]) -> Any:
        """The tree with ``values`` at some leaf positions and ``None`` everywhere else."""
        return self.treedef.unflatten([values.get(i) for i in range(len(self.leaves))])


class Shaped(NamedTuple):
    """What a Split keeps of a dynamic leaf when asked to: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: Any


def split(
    tree: Any, is_dynamic: Callable[[Any], bool], *, keep_shapes: bool = False
) -> tuple[list[Any], Split]:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    dynamic = tuple(i for i, leaf in enumerate(leaves) if is_dynamic(leaf))
    held = list(leaves)
    for i in dynamic:
        # The Split outlives the call (JAX keeps it as a static argument): holding the call's
        # tracers would leak them, so at most their shape and dtype stay.
        held[i] = Shaped(tuple(leaves[i].shape), leaves[i].dtype) if keep_shapes else None
    return [leaves[i] for i in dynamic], Split(treedef, held, dynamic)


def leaves_by_position(
    arguments_split: Split,
    per_argument: Sequence[Any],
    mismatch: Callable[[int, PyTreeDef, Any], Exception],
) -> dict[int, Any]:
    """Trees given per argument (tangents, cotangents; ``None`` or of its structure) by the split's
    leaf positions; ``mismatch(index, expected, given)`` makes the error."""
    by_position: dict[int, Any] = {}
    start = 0  # the leaf position where the argument's leaves begin
    for index, (tree, treedef) in enumerate(
        zip(per_argument, arguments_split.treedef.children(), strict=True)
    ):
        leaf_range = range(start, start + treedef.num_leaves)
        start += treedef.num_leaves
        if tree is None:
            continue
        try:
            leaves = treedef.flatten_up_to(tree)
        except (ValueError, TypeError):
            leaves = _flatten_up_to_nones(treedef, tree)
            if leaves is None:
                raise mismatch(index, treedef, tree) from None
        by_position.update(zip(leaf_range, leaves, strict=True))
    return by_position


def _flatten_up_to_nones(treedef: PyTreeDef, tree: Any) -> list[Any] | None:
    """``tree``'s leaves up to ``treedef``, a ``None`` standing for a whole sub-tree meaning
    ``None`` at each of its leaves (as ``jax.custom_vjp`` reads a bwd's cotangents); ``None``
    if ``tree`` is not of that structure."""
    slots = [object() for _ in range(treedef.num_leaves)]
    position = {id(slot): i for i, slot in enumerate(slots)}
    leaves: list[Any] = [None] * len(slots)

    def place(given: Any, slot: Any) -> None:
        if given is None:
            return  # None over a leaf or a whole sub-tree: no value anywhere in it
        if id(slot) not in position:  # a leaf given where the argument has a sub-tree
            raise ValueError
        leaves[position[id(slot)]] = given

    try:  # a node refusing placeholders as its leaves cannot be matched: a mismatch
        dummy = treedef.unflatten(slots)
        jax.tree_util.tree_map(place, tree, dummy, is_leaf=lambda x: x is None)
    except Exception:
        return None
    return leaves
