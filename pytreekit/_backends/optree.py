"""Registration with optree, in the ``"pytreekit"`` namespace (path entries are attribute names)."""

from __future__ import annotations

from typing import Any

import optree

from .._classes import Layout, NodeFunctions

NAMESPACE = "pytreekit"
KEY = str  # optree's path entries are the field names themselves


def register(cls: type, nodes: NodeFunctions) -> None:
    flatten = nodes.flatten
    # Aux data that is static values alone has the class's declared layout, which stays the same
    # for as long as the class lives: read once.
    declared: list[Layout] = []

    def flatten_with_names(obj: Any) -> tuple[Any, Any, tuple[str, ...]]:
        # optree's flatten: children, aux, entries (the field names, read off the layout).
        children, aux = flatten(obj)
        layout = aux[0]
        if layout.__class__ is not Layout:
            if not declared:
                declared.append(nodes.carrying(aux)[0])
            layout = declared[0]
        return children, aux, layout.child_names

    optree.register_pytree_node(
        cls,
        flatten_with_names,
        nodes.unflatten,
        namespace=NAMESPACE,
        path_entry_type=optree.GetAttrEntry,
    )


def unregister(cls: type) -> None:
    optree.unregister_pytree_node(cls, namespace=NAMESPACE)
