"""``replace``: an updated copy of an instance, made without calling ``__init__``."""

from __future__ import annotations

from typing import Any, TypeVar

from .. import _markers as markers
from .spec import ClassSpec, spec_of

T = TypeVar("T")


def replace(obj: T, /, **changes: Any) -> T:
    """A new instance of ``obj``'s class with ``changes`` applied, the other fields shared.

    Never calls ``__init__``, ``__post_init__`` or converters, so it works on frozen classes,
    on classes whose ``__init__`` takes other arguments, and inside ``jit`` with tracers. Only
    fields are copied: attributes that are not fields (a ``functools.cached_property`` value,
    say) are left behind, so nothing derived from the old values survives.

    Args:
        obj: An instance of a pytree class.
        **changes: New values by field name. Static values are checked for hashability.

    Returns:
        The new instance; ``obj`` is unchanged.

    Raises:
        TypeError: ``obj`` is not a pytree class instance (a pytree class itself included), a
            name is not one of its fields, or a static value is unhashable. The message names
            the class and the field.

    >>> import jax.numpy as jnp
    >>> from pytreekit import pytree_class, replace
    >>> @pytree_class
    ... class Linear:
    ...     weights: jnp.ndarray
    >>> replace(Linear(jnp.ones(2)), weights=jnp.zeros(2)).weights
    Array([0., 0.], dtype=float32)
    """
    spec = type(obj).__dict__.get(markers.SPEC)
    if not isinstance(spec, ClassSpec):
        # Raises, naming what it got (a pytree class itself has the spec: refused below).
        spec = spec_of(obj, "replace()", "an instance of a @pytree_class class")
        raise TypeError(
            f"replace() takes an instance of a pytree class, got the class "
            f"{spec.cls.__qualname__} itself; pass an instance: replace(obj, name=value)."
        )
    new: T = spec.nodes.replace(obj, changes)
    return new
