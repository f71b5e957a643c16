"""Registration with ``jax.tree_util`` (key paths are ``GetAttrKey(name)``), and with
``jax.export``'s serialization registry so exported signatures may hold the class."""

from __future__ import annotations

from jax.tree_util import GetAttrKey, register_pytree_with_keys

from .._artifacts import register_jax_export
from .._classes import NodeFunctions

KEY = GetAttrKey


def register(cls: type, nodes: NodeFunctions) -> None:
    register_pytree_with_keys(
        cls, nodes.flatten_with_keys("jax"), nodes.unflatten, flatten_func=nodes.flatten
    )
    register_jax_export(cls, nodes)


def unregister(cls: type) -> None:  # pragma: no cover - JAX registers last, so never undone
    raise AssertionError("jax registrations are never undone: jax registers last")
