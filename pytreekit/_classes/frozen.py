"""Frozen instances: the error, the frozen ``__setattr__``/``__delattr__``, and which instances
are still being initialised (those may assign).

A user's own ``__init__`` in a frozen class may assign ``self.x = ...``, and so may
``__post_init__``: the instance counts as initialising while they run. Rebuilding (unflatten,
``replace``, copy, pickle) writes storage directly and never comes through here.
"""

# No postponed annotations: these functions become methods of user classes, and checkers such as
# beartype resolve a method's string annotations in the class's module, not in pytreekit.

import dataclasses
from typing import Any

# ids of instances whose __init__ is running; an id is only reused after its object is freed,
# and an object cannot be freed while its own __init__ runs.
_initialising: set[int] = set()


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


# Functions, not the set itself, are what generated methods call: a class pickled by value takes
# its methods along, and these are found by reference where it arrives.
def begin_init(obj: object) -> None:
    _initialising.add(id(obj))


def end_init(obj: object) -> None:
    _initialising.discard(id(obj))


def initialising(obj: object) -> bool:
    return id(obj) in _initialising


def frozen_setattr(self: object, name: str, value: Any) -> None:
    if not initialising(self):
        cls = type(self).__qualname__
        if not _holds(self, name):  # replace() would refuse it too: say what works
            raise FrozenInstanceError(
                f"cannot assign to {name!r} of frozen {cls} instance: {_why(self, name)}"
            )
        raise FrozenInstanceError(
            f"cannot assign to field {name!r} of frozen {cls} instance; "
            f"use pytreekit.replace(obj, {name}=...) to get an updated copy."
        )
    object.__setattr__(self, name, value)


def _holds(obj: object, name: str) -> bool:
    """Whether ``name`` is a field of ``obj`` (on the error path only): a dataclass field, or an
    attribute the instance itself holds (the field rule)."""
    if dataclasses.is_dataclass(obj):
        return any(f.name == name for f in dataclasses.fields(obj))
    if name in getattr(obj, "__dict__", ()):
        return True
    slots = (getattr(k, "__slots__", ()) for k in type(obj).__mro__)
    return any(name in ((s,) if isinstance(s, str) else s) for s in slots)


def _why(obj: object, name: str) -> str:
    """Why ``name``, which is no field of ``obj``, takes no assignment, and what works."""
    bound = next((k.__dict__[name] for k in type(obj).__mro__ if name in k.__dict__), None)
    if hasattr(type(bound), "__get__") and not callable(bound):  # a property, cached_property
        return (
            f"the class binds it to a {type(bound).__name__}, which is not a field, and a frozen "
            f"instance takes no assignment through it. Read it; its value follows the fields."
        )
    if dataclasses.is_dataclass(obj):
        return (
            f"it is not a field, and a frozen instance takes no new attributes. Declare "
            f"{name!r} as a field, or compute it with a functools.cached_property."
        )
    return (
        f"it is not a field of this instance (the fields of a class without annotations are the "
        f"attributes its __init__ set, each instance its own), and a frozen instance takes no "
        f"new attributes. Set {name!r} in __init__, or compute it with a "
        f"functools.cached_property."
    )


def frozen_delattr(self: object, name: str) -> None:
    cls = type(self).__qualname__
    if not _holds(self, name):
        raise FrozenInstanceError(
            f"cannot delete {name!r} of frozen {cls} instance: it is no field of it (a frozen "
            f"instance has no attribute but its fields to delete)."
        )
    raise FrozenInstanceError(f"cannot delete field {name!r} of frozen {cls} instance.")


def is_frozen_setattr(method: object) -> bool:
    """Whether ``method`` is (a class's copy of) ``frozen_setattr``."""
    return getattr(method, "__code__", None) is frozen_setattr.__code__
