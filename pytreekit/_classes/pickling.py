"""What pickle cannot store of an instance's fields but finds by name: ``picklable`` replaces it by
a ``StandIn`` (``__getstate__``), ``restored`` puts it back (``copy.copy`` hands ``__getstate__``'s
values to ``__setstate__`` unpickled). Both are one walk through the containers pickle rebuilds.

Pickles written with a ``StandIn`` name ``new_object`` and ``import_by_name`` of
``pytreekit._references``: that module and those names are part of those pickles' format.
"""

from __future__ import annotations

import copyreg
import functools
import weakref
from collections.abc import Callable
from typing import Any

from .. import _markers as markers
from .._compat import dataclass_frozen
from .._names import MISSING, by_reference, import_by_name, lookup


class StandIn:
    """What ``__getstate__`` gives pickle in place of ``value``: it pickles as ``reduction``
    (functions by name, ``jnp.tanh`` among them), so it unpickles as the value again."""

    __slots__ = ("reduction", "value")

    def __init__(self, value: Any, reduction: tuple[Any, ...]) -> None:
        self.value = value
        self.reduction = reduction

    def __reduce__(self) -> tuple[Any, ...]:
        return self.reduction


def new_object(cls: type, *args: Any) -> Any:
    """``copyreg.__newobj__`` under another name: pickle checks that an object reduced by
    ``__newobj__`` is of the class it names, which a ``StandIn`` is not."""
    return cls.__new__(cls, *args)


# Pickles name new_object where pytreekit 0.3.0 defined it (pytreekit/_references.py, now an alias
# of this function): new pickles keep that name.
new_object.__module__ = "pytreekit._references"


def _dict_parts(value: dict[Any, Any]) -> list[Any]:
    return [part for entry in value.items() for part in entry]


def _dict_of(parts: list[Any]) -> dict[Any, Any]:
    return dict(zip(parts[::2], parts[1::2], strict=True))


# The containers the walk enters (exactly these types): how each is taken apart and rebuilt.
_CONTAINERS: dict[type, tuple[Callable[[Any], list[Any]], Callable[[list[Any]], Any]]] = {
    list: (list, list),
    tuple: (list, tuple),
    frozenset: (list, frozenset),
    dict: (_dict_parts, _dict_of),
}


def _walk(
    value: Any, each: Callable[[Any], Any], memo: dict[int, tuple[Any, Any]] | None = None
) -> Any:
    """``value`` with ``each`` applied to what its containers hold (dict keys too); ``value``
    itself where nothing changed. A container held twice (a tuple of the same tuple, 60 deep: a
    few bytes of pickle) is walked once; ``memo`` keeps what it saw alive, so no id is reused."""
    container = _CONTAINERS.get(type(value))
    if container is None:
        return each(value)
    if memo is None:
        memo = {}
    seen = memo.get(id(value))
    if seen is not None:
        return seen[1]
    parts_of, rebuild = container
    parts = parts_of(value)
    new = [_walk(part, each, memo) for part in parts]
    walked = value if all(a is b for a, b in zip(new, parts, strict=True)) else rebuild(new)
    memo[id(value)] = (value, walked)
    return walked


def picklable(value: Any) -> Any:
    """``value`` with what pickle cannot store by itself, but can find by name, replaced by a
    ``StandIn`` (inside lists, tuples, dicts, frozensets, ``functools.partial``, NamedTuples and
    frozen dataclasses; ``value`` itself where nothing is replaced)."""
    return _walk(value, _stand_in)


def restored(value: Any) -> Any:
    """``value`` with the stand-ins ``picklable`` put in it replaced by what they stand for."""
    return _walk(value, _stood_for)


def _stood_for(value: Any) -> Any:
    return value.value if type(value) is StandIn else value


def _stand_in(value: Any) -> Any:
    kind = type(value)
    if kind is functools.partial or lookup(kind, markers.PLAIN_PARTIAL) is True:
        return _partial(value)
    if _rebuilt_kind(kind):
        return _rebuilt(value)
    name = by_reference(value)
    return value if name is None else StandIn(value, (import_by_name, name))


_NEWOBJ = vars(copyreg)["__newobj__"]  # not in typeshed's copyreg
# Per type: whether its instances are values pickle rebuilds from what they hold (a NamedTuple, a
# frozen dataclass), where a function pickle cannot store may hide.
_rebuilt_kinds: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _rebuilt_kind(kind: type) -> bool:
    known = _rebuilt_kinds.get(kind)
    if known is None:
        known = (
            (issubclass(kind, tuple) and type(lookup(kind, "_fields")) is tuple)
            or dataclass_frozen(kind)
        ) and lookup(kind, markers.SPEC) is MISSING  # a pytree class has its own state
        _rebuilt_kinds[kind] = known
    return known


def _partial(value: functools.partial[Any]) -> Any:
    func, args, keywords = value.func, picklable(value.args), picklable(value.keywords)
    new_func = picklable(func)
    if new_func is func and args is value.args and keywords is value.keywords:
        return value
    # What partial's own __reduce__ gives, with the parts replaced.
    state = (new_func, args, keywords or None, getattr(value, "__dict__", None) or None)
    return StandIn(value, (functools.partial, (new_func,), state))


def _rebuilt(value: Any) -> Any:
    """A NamedTuple or frozen dataclass: what pickle would store, with the parts replaced."""
    reduction = value.__reduce_ex__(4)
    if type(reduction) is not tuple or any(part is not None for part in reduction[3:]):
        return value  # a reduction of its own making, or items pickle would iterate over
    func, *parts = reduction
    new_parts = [picklable(part) for part in parts]
    if all(new is old for new, old in zip(new_parts, parts, strict=True)):
        return value
    if func is _NEWOBJ:
        func = new_object
    return StandIn(value, (func, *new_parts))
