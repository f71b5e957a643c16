"""Registration with ``torch.utils._pytree`` (key paths are its ``GetAttrKey(name)``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._artifacts import torch_dumpable
from .._classes import NodeFunctions
from .._compat import torch_pytree, unregister_from_torch

KEY = torch_pytree().GetAttrKey


def register(cls: type, nodes: NodeFunctions) -> None:
    unflatten = nodes.unflatten

    def unflatten_values_first(values: Iterable[Any], context: Any) -> Any:
        # torch passes (children, context); jax and optree pass (aux, children).
        return unflatten(context, list(values))

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


def unregister(cls: type) -> None:
    unregister_from_torch(cls)
