"""``Static``: one value kept in the treedef, so a list of layers can hold a function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from ._backends import follow_every_backend
from ._classes import field
from ._decorator import pytree_class

T = TypeVar("T")


@pytree_class(frozen=True)
class Static(Generic[T]):
    """A pytree with no leaves that holds ``value`` (hashable) in its treedef; calling it calls
    ``value``. For a function among layers, where ``field(static=True)`` cannot mark one element:

    >>> import jax
    >>> import jax.numpy as jnp
    >>> from pytreekit import Static
    >>> layers = [jnp.ones(2), Static(jax.nn.relu)]
    >>> len(jax.tree_util.tree_leaves(layers)), layers[1](jnp.array([-1.0, 2.0])).tolist()
    (1, [0.0, 2.0])

    It is a node (without leaves) in every registry pytreekit registers a class with: optree's
    and torch's too, once a class is registered there.
    """

    value: T = field(static=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return cast(Callable[..., Any], self.value)(*args, **kwargs)


# A model registered with optree or torch holds Static values too: they must be nodes there.
follow_every_backend(Static)
