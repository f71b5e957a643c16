"""Registration with optree, in the ``"pytreekit"`` namespace (path entries are attribute names)."""

from __future__ import annotations

import optree

from .._nodes import NodeFunctions

NAMESPACE = "pytreekit"
KEY = str  # optree's path entries are the field names themselves


def register(cls: type, nodes: NodeFunctions) -> None:
    optree.register_pytree_node(
        cls,
        nodes.flatten_with_names,
        nodes.unflatten,
        namespace=NAMESPACE,
        path_entry_type=optree.GetAttrEntry,
    )


def unregister(cls: type) -> None:
    optree.unregister_pytree_node(cls, namespace=NAMESPACE)
