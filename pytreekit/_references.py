"""Functions and classes by module and qualified name, for the two formats that store them so:
pickle (``__getstate__`` hands pickle a ``StandIn`` where pickle would fail) and static data
(``_artifacts``, which writes ``"module:qualname"`` and reads it back without running code).

Both ask ``public_name`` under which name an object can be found again: its own module, else the
public module of its package that holds it under its qualified name (``jax.nn.relu`` says it
lives in ``jax._src.nn.functions``, which a later JAX need not keep). Lookups go through the
``__dict__`` of modules and classes (``find_in``): no module ``__getattr__``, no property and no
metaclass runs, and a module is found only if it is imported already.

Pickles written with a ``StandIn`` name ``import_by_name`` and ``new_object`` of this module:
their module and names are part of those pickles' format, so they stay here.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import importlib
import sys
import types
import weakref
from typing import Any

from . import _markers as markers
from ._compat import dataclass_frozen

# The C descriptors behind ``module.__dict__``, ``cls.__dict__`` and ``cls.__mro__``: read through
# them, no class or metaclass can substitute a property of its own.
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"]
_TYPE_DICT: Any = vars(type)["__dict__"]
_TYPE_MRO: Any = vars(type)["__mro__"]
# What ``lookup`` and ``find_in`` return for a name that holds nothing: the one sentinel pytreekit
# uses, the standard library's (a field without a default is ``MISSING`` too).
MISSING: Any = dataclasses.MISSING


def own_dict(cls: type) -> Any:
    """``cls.__dict__``, read without calling anything of the class's."""
    return _TYPE_DICT.__get__(cls)


def module_dict(module: types.ModuleType) -> dict[str, Any]:
    """``module.__dict__``, read without calling anything of the module's."""
    namespace: dict[str, Any] = _MODULE_DICT.__get__(module)
    return namespace


def mro(cls: type) -> tuple[type, ...]:
    """``cls.__mro__``, read without calling anything of the class's."""
    line: tuple[type, ...] = _TYPE_MRO.__get__(cls)
    return line


def lookup(cls: type, name: str) -> Any:
    """What ``cls.name`` finds in the class line, without calling anything (``MISSING``)."""
    for klass in _TYPE_MRO.__get__(cls):
        namespace = _TYPE_DICT.__get__(klass)
        if name in namespace:
            return namespace[name]
    return MISSING


def is_class(obj: Any) -> bool:
    # Not isinstance(obj, type): for other types it reads obj.__class__, which a property can be.
    return issubclass(type(obj), type)


def find_in(module: str, qualname: str) -> tuple[Any, Any, str]:
    """The object ``module:qualname`` names in this process (``MISSING``: none), the namespace
    holding it and its key there, through ``__dict__``s only: the module must be imported
    already, and each dotted step but the last must be a class."""
    found: Any = sys.modules.get(module)
    if found is None or not issubclass(type(found), types.ModuleType):
        return MISSING, None, ""
    namespace = _MODULE_DICT.__get__(found)
    parts = qualname.split(".")
    owner = None
    for part in parts[:-1]:
        owner = namespace.get(part, MISSING)
        if not is_class(owner):
            return MISSING, None, ""
        namespace = _TYPE_DICT.__get__(owner)
    key = parts[-1]
    found = namespace.get(key, MISSING)
    kind = type(found)
    if kind is staticmethod:
        found = found.__func__
    elif owner is not None and (kind is classmethod or kind is types.ClassMethodDescriptorType):
        found = found.__get__(None, owner)  # C code: dict.fromkeys, a classmethod, bound
    return found, namespace, key


def class_bound(value: Any) -> bool:
    """Whether ``value`` is a method bound to a class (``dict.fromkeys``, a classmethod): a new
    object at each lookup, found again as an equal one."""
    kind = type(value)
    return (kind is types.MethodType or kind is types.BuiltinMethodType) and is_class(
        getattr(value, "__self__", None)
    )


def private_module(name: str) -> bool:
    return name.startswith("_") or "._" in name


# value -> its name and where it was found: checked again at each use (a module attribute may be
# rebound), with one dict lookup. A value found nowhere is remembered too (searching every module
# of its package again each time it is pickled would be slow). Weak, so that a class or function
# is freed with its module; values that cannot be weakly referenced (builtins) live as long anyway.
_Found = tuple[tuple[str, str], Any, str] | None
_names: weakref.WeakKeyDictionary[Any, _Found] = weakref.WeakKeyDictionary()
_builtin_names: dict[Any, _Found] = {}


def _remembered(value: Any) -> Any:
    try:
        return _names.get(value, MISSING)
    except TypeError:  # not weakly referenceable, or unhashable
        try:
            return _builtin_names.get(value, MISSING)
        except TypeError:  # unhashable: not a module-level object either
            return None


def _remember(value: Any, found: _Found) -> None:
    try:
        _names[value] = found
    except TypeError:
        _builtin_names[value] = found


def public_name(value: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` under which ``find_in`` finds ``value`` itself, preferring public
    modules; ``None`` when there is none (a lambda, a function defined inside another, an object
    its module does not hold under its name)."""
    known = _remembered(value)
    if known is None:
        return None
    if known is not MISSING and known[1].get(known[2], MISSING) is value:
        found: tuple[str, str] = known[0]
        return found
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(qualname, str) or "<" in qualname:
        return None
    bound = class_bound(value)
    if bound:  # dict.fromkeys names no module: its class does
        module = getattr(value.__self__, "__module__", None)
    # Searched: its module if public, its package's public modules (shortest name first), then
    # its module. A value naming no module (numpy < 1.25's ufuncs): every public module, as
    # pickle.whichmodule searches them.
    if isinstance(module, str):
        package: str | None = module.partition(".")[0]
        first, last = ([] if private_module(module) else [module]), [module]
        if module == "builtins":  # NoneType, FunctionType...: the types module names them
            last.append("types")
    elif module is None:
        package, first, last = None, [], []
    else:
        return None
    public = sorted(
        (
            other
            for other in list(sys.modules)
            if (package is None or other == package or other.startswith(package + "."))
            and not private_module(other)
            and other != module
        ),
        key=len,
    )
    # torch.tanh says its qualified name is "_VariableFunctionsClass.tanh", its module holds it
    # as "tanh": its plain name is tried too.
    plain = getattr(value, "__name__", None)
    names = [qualname] if plain == qualname or not isinstance(plain, str) else [qualname, plain]
    for candidate in (*first, *public, *last):
        for each in names:
            found, namespace, key = find_in(candidate, each)
            if found is value or (bound and found == value):
                name = (candidate, each)
                if not bound:
                    _remember(value, (name, namespace, key))
                return name
    if not bound:
        _remember(value, None)
    return None


# -- pickling by reference ----------------------------------------------------------------------


class StandIn:
    """What ``__getstate__`` gives pickle in place of ``value`` when pickle could not store it
    itself: it pickles as ``reduction`` (functions by name, ``jnp.tanh`` among them), so it
    unpickles as the value again. ``copy.copy`` hands it to ``__setstate__`` as is, which puts
    ``value`` back (``restored``)."""

    __slots__ = ("reduction", "value")

    def __init__(self, value: Any, reduction: tuple[Any, ...]) -> None:
        self.value = value
        self.reduction = reduction

    def __reduce__(self) -> tuple[Any, ...]:
        return self.reduction


def import_by_name(module: str, qualname: str) -> Any:
    """What unpickling a function stored by name runs: import its module, then its attribute."""
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def new_object(cls: type, *args: Any) -> Any:
    """``copyreg.__newobj__`` under another name: pickle checks that an object reduced by
    ``__newobj__`` is of the class it names, which a ``StandIn`` is not."""
    return cls.__new__(cls, *args)


_NEWOBJ = vars(copyreg)["__newobj__"]  # not in typeshed's copyreg
# Pickle stores these by name itself (and fails loudly where it cannot).
_NATIVELY_BY_NAME = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)
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


def picklable(value: Any) -> Any:
    """``value`` with what pickle cannot store by itself, but can find by name, replaced by a
    ``StandIn`` (inside lists, tuples, dicts, frozensets, ``functools.partial``, NamedTuples and
    frozen dataclasses; ``value`` itself where nothing is replaced)."""
    kind = type(value)
    if kind is list or kind is tuple:
        items = [picklable(item) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return kind(items) if changed else value
    if kind is dict:
        entries = [(picklable(key), picklable(item)) for key, item in value.items()]
        changed = any(
            new_key is not key or new is not item
            for (new_key, new), (key, item) in zip(entries, value.items(), strict=True)
        )
        return dict(entries) if changed else value
    if kind is frozenset:
        members = [picklable(item) for item in value]
        changed = any(new is not old for new, old in zip(members, value, strict=True))
        return frozenset(members) if changed else value
    if kind is functools.partial:
        return _partial(value)
    if _rebuilt_kind(kind):
        return _rebuilt(value)
    name = by_reference(value)
    return value if name is None else StandIn(value, (import_by_name, name))


def by_reference(value: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` to store ``value`` under, for a callable pickle would not store by
    name itself (it does so for classes and functions, and fails on ``jnp.tanh``); ``None``
    otherwise."""
    if isinstance(value, _NATIVELY_BY_NAME) or not callable(value):
        return None
    return public_name(value)


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


def restored(value: Any) -> Any:
    """``value`` with the stand-ins ``picklable`` put in it replaced by what they stand for
    (``copy.copy`` passes ``__getstate__``'s values to ``__setstate__`` unpickled)."""
    kind = type(value)
    if kind is StandIn:
        return value.value
    if kind is list or kind is tuple:
        items = [restored(item) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return kind(items) if changed else value
    if kind is dict:
        entries = [(restored(key), restored(item)) for key, item in value.items()]
        changed = any(
            new_key is not key or new is not item
            for (new_key, new), (key, item) in zip(entries, value.items(), strict=True)
        )
        return dict(entries) if changed else value
    if kind is frozenset:
        members = [restored(item) for item in value]
        changed = any(new is not old for new, old in zip(members, value, strict=True))
        return frozenset(members) if changed else value
    return value
