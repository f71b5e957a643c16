"""Functions and classes by module and qualified name, found without running code, for pickle's
stand-ins and static data. ``public_name`` prefers a public module of the package
(``jax.nn.relu`` says it lives in ``jax._src.nn.functions``, which a later JAX need not keep).
Lookups read ``__dict__``s only: no module ``__getattr__``, property or metaclass runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import types
import weakref
from typing import Any

# The C descriptors behind ``module.__dict__``, ``cls.__dict__`` and ``cls.__mro__``: read through
# them, no class or metaclass can substitute a property of its own.
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"]
_TYPE_DICT: Any = vars(type)["__dict__"]
_CLASSMETHOD_FUNC: Any = vars(classmethod)["__func__"]
_TYPE_MRO: Any = vars(type)["__mro__"]
# What ``lookup`` and ``find_in`` return for a name that holds nothing: pytreekit's one sentinel.
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
    """The object ``module:qualname`` names in an imported module (``MISSING``: none), the
    namespace holding it and its key there; each dotted step but the last a class."""
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
        found = _bound(found, owner)
        if found is MISSING:
            return MISSING, None, ""
    return found, namespace, key


def _bound(method: Any, owner: type) -> Any:
    """A classmethod found in ``owner``'s namespace, bound to it, running no code of theirs."""
    if type(method) is types.ClassMethodDescriptorType:
        return method.__get__(None, owner)  # C code: dict.fromkeys
    # By hand: ``classmethod.__get__`` calls the ``__get__`` of what it wraps before 3.13 (a
    # ``@classmethod @property``'s getter would run). Only a function is bound.
    func = _CLASSMETHOD_FUNC.__get__(method)
    return types.MethodType(func, owner) if type(func) is types.FunctionType else MISSING


def class_bound(value: Any) -> bool:
    """Whether ``value`` is a method bound to a class (``dict.fromkeys``, a classmethod)."""
    kind = type(value)
    return (kind is types.MethodType or kind is types.BuiltinMethodType) and is_class(
        getattr(value, "__self__", None)
    )


def private_module(name: str) -> bool:
    return name.startswith("_") or "._" in name


# value -> its name and where it was found (checked again at each use: a module attribute may be
# rebound), or None: found nowhere, remembered too (searching every module of its package again
# each time it is pickled would be slow). Weak, so that a class or function is freed with its
# module; builtins live as long anyway.
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
    modules; ``None`` when there is none (a lambda, say)."""
    known = _remembered(value)
    if known is None:
        return None
    if known is not MISSING and known[1].get(known[2], MISSING) is value:
        name: tuple[str, str] = known[0]
        return name
    bound = class_bound(value)
    # dict.fromkeys names no module: its class does.
    module = getattr(value.__self__ if bound else value, "__module__", None)
    names = _qualnames(value)
    if names is None or not (module is None or isinstance(module, str)):
        return None
    found = _first_found(value, bound, _modules_to_search(module), names)
    if not bound:  # a new object at each lookup: nothing to remember it by
        _remember(value, found)
    return None if found is None else found[0]


def _qualnames(value: Any) -> list[str] | None:
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(qualname, str) or "<" in qualname:
        return None
    # torch.tanh says its qualified name is "_VariableFunctionsClass.tanh", its module holds it
    # as "tanh": its plain name is tried too.
    plain = getattr(value, "__name__", None)
    return [qualname] if plain == qualname or not isinstance(plain, str) else [qualname, plain]


def _modules_to_search(module: str | None) -> list[str]:
    """Its module if public, its package's public modules (shortest name first), its module; for
    a value naming no module (numpy < 1.25's ufuncs) every public module, as pickle does."""
    if module is None:
        return _public_modules("", module)
    first = [] if private_module(module) else [module]
    last = [module, "types"] if module == "builtins" else [module]  # types names NoneType...
    return [*first, *_public_modules(module.partition(".")[0] + ".", module), *last]


def _public_modules(prefix: str, module: str | None) -> list[str]:
    """The public modules imported in ``prefix`` (a package and its modules), but ``module``."""
    named = (name for name in list(sys.modules) if (name + ".").startswith(prefix))
    return sorted((name for name in named if not private_module(name) and name != module), key=len)


def _first_found(value: Any, bound: bool, modules: list[str], names: list[str]) -> _Found:
    for module in modules:
        for name in names:
            found, namespace, key = find_in(module, name)
            if found is value or (bound and found == value):
                return (module, name), namespace, key
    return None


# Pickle stores these by name itself (and fails loudly where it cannot).
_NATIVELY_BY_NAME = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)


def by_reference(value: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` for a callable pickle would not store by name (``jnp.tanh``)."""
    if isinstance(value, _NATIVELY_BY_NAME) or not callable(value):
        return None
    return public_name(value)


def import_by_name(module: str, qualname: str) -> Any:
    """What unpickling a function stored by name runs: import its module, then its attribute."""
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


# Pickles name import_by_name where pytreekit 0.3.0 defined it (pytreekit/_references.py, now an
# alias of this function): new pickles keep that name, so every stand-in names one path.
import_by_name.__module__ = "pytreekit._references"
