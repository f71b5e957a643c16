"""Frozen instances: assignment raises once ``__init__`` (and ``__post_init__``) have returned.

A user's own ``__init__`` in a frozen class may still assign ``self.x = ...``: the instance counts
as initialising while it runs (see ``_init.wrap_user_init``). Rebuilding (unflatten, ``replace``,
copy, pickle) writes storage directly and never comes through here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

# ids of instances whose __init__ is running; an id is only reused after its object is freed,
# and an object cannot be freed while its own __init__ runs.
initialising: set[int] = set()


class FrozenInstanceError(dataclasses.FrozenInstanceError):
    """Raised on assignment to, or deletion of, an attribute of a frozen pytree class instance.

    A subclass of ``dataclasses.FrozenInstanceError`` (so of ``AttributeError``): code written
    for frozen dataclasses catches it.

    >>> from pytreekit import FrozenInstanceError, pytree_class
    >>> @pytree_class(frozen=True)
    ... class Point:
    ...     x: float
    >>> try:
    ...     Point(1.0).x = 2.0
    ... except FrozenInstanceError as error:
    ...     print(str(error).split(";")[0])
    cannot assign to field 'x' of frozen Point instance
    """


def frozen_setattr(self: object, name: str, value: Any) -> None:
    if id(self) not in initialising:
        cls = type(self).__qualname__
        raise FrozenInstanceError(
            f"cannot assign to field {name!r} of frozen {cls} instance; "
            f"use pytreekit.replace(obj, {name}=...) to get an updated copy."
        )
    object.__setattr__(self, name, value)


def frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(
        f"cannot delete field {name!r} of frozen {type(self).__qualname__} instance."
    )


def restore_state(self: object, state: Any) -> None:
    """``__setstate__`` for frozen classes: pickle and copy would otherwise call ``__setattr__``
    for slot values."""
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    if dict_state:
        self.__dict__.update(dict_state)
    for name, value in (slot_state or {}).items():
        object.__setattr__(self, name, value)
