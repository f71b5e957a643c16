"""``replace``: an updated copy of an instance, made without calling ``__init__``."""

from __future__ import annotations

from typing import Any, TypeVar

from ._spec import own_slots, spec_of
from ._static import check_static_value

T = TypeVar("T")


def replace(obj: T, /, **changes: Any) -> T:
    """A new instance of ``obj``'s class with ``changes`` applied, other fields shared.

    Never calls ``__init__``, ``__post_init__`` or converters, so it works on frozen classes,
    on classes whose ``__init__`` takes other arguments, and inside ``jit`` with tracers.

    >>> linear = pytreekit.replace(linear, weights=linear.weights * 0.5)
    """
    spec = spec_of(obj, "replace()")
    cls = type(obj)
    names = spec.field_names(obj)
    for name in changes:
        if name not in names:
            raise TypeError(
                f"replace(): {cls.__qualname__} has no field {name!r}; its fields are {names}."
            )
    new = object.__new__(cls)
    if hasattr(obj, "__dict__"):
        new.__dict__.update(obj.__dict__)
    for klass in cls.__mro__:
        for slot in own_slots(klass):
            if hasattr(obj, slot):
                object.__setattr__(new, slot, getattr(obj, slot))
    for name, value in changes.items():
        if name in spec.static_names:
            check_static_value(cls, name, value)
        object.__setattr__(new, name, value)
    return new
