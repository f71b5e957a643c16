"""Registration with ``torch.utils._pytree`` (key paths are its ``GetAttrKey(name)``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._artifacts import is_namedtuple, leaves_of, torch_dumpable
from .._classes import Layout, NodeFunctions
from .._compat import guard_torch_namedtuple_contexts, torch_pytree, unregister_from_torch

KEY = torch_pytree().GetAttrKey


def register(cls: type, nodes: NodeFunctions) -> None:
    unflatten = nodes.unflatten
    # The leaves of the layout whose aux data is the static values alone (constant for as long as
    # the class lives), once an unflatten has asked; -1 before.
    plain = -1

    def unflatten_values_first(values: Iterable[Any], context: Any) -> Any:
        # torch passes (children, context), the children a list; jax and optree (aux, children).
        # A treespec read from text gives its node as many children as the text lists: as many
        # as the layout has leaves, or one is dropped (or a missing one a bare StopIteration).
        # Checked here, for one length test per node, as treespec_loads never shows the
        # children to the context's reader.
        nonlocal plain
        children: list[Any] = values if type(values) is list else list(values)
        try:
            head = context[0]
        except Exception:  # not aux data of the class: unflatten says so
            return unflatten(context, children)
        if len(children) != (len(head.child_names) if head.__class__ is Layout else plain):
            leaves = leaves_of(nodes, context, len(children), "torch tree_unflatten")
            if head.__class__ is not Layout:
                plain = leaves
        return unflatten(context, children)

    to_dumpable, from_dumpable = torch_dumpable(nodes)
    torch_pytree().register_pytree_node(
        cls,
        nodes.flatten,
        unflatten_values_first,
        serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
        to_dumpable_context=to_dumpable,
        from_dumpable_context=from_dumpable,
        flatten_with_keys_fn=nodes.flatten_with_keys("torch"),
    )
    guard_torch_namedtuple_contexts(_not_a_namedtuple)


def _not_a_namedtuple(cls: Any) -> str | None:
    """Why a namedtuple node's class is none (torch would call it with the node's children)."""
    if is_namedtuple(cls):
        return None
    return (
        f"{getattr(cls, '__qualname__', cls)!r:.120} is no namedtuple, which torch would build by "
        f"calling it with the node's children (a treespec pytreekit or torch wrote never names "
        f"one): do not load this treespec"
    )


def unregister(cls: type) -> None:
    unregister_from_torch(cls)
