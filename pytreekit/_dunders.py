"""``__eq__``, ``__hash__`` and ``__repr__`` of pytree classes.

Annotated classes get methods generated for their fields (``eq_for``, ``hash_for``,
``repr_for``), compiled in the class's module as dataclasses' are, and with dataclasses' choice of
fields (``compare``, ``hash``, ``repr``); they differ from dataclasses' in comparing arrays as
arrays and summarising them in the repr. Classes without annotations, whose fields are found per
instance, share the generic ``pytree_eq``, ``pytree_hash`` and ``pytree_repr``.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import reprlib
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._codegen import method_for
from ._spec import SPEC_ATTR, ClassSpec
from ._static import _describe


def _spec(obj: object) -> ClassSpec:
    spec: ClassSpec = getattr(type(obj), SPEC_ATTR)
    return spec


def _is_array(value: Any) -> bool:
    return (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, (int, float, complex, bool))
    )


def _arrays_equal(a: Any, b: Any) -> Any:
    if not (_is_array(a) and _is_array(b)):
        return False
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        # Tracers cannot become NumPy arrays: answer with a traced boolean, as JAX code expects.
        return (a == b).all()


def _truth(result: Any) -> Any:
    """The truth of a comparison's result that is not a ``bool`` (a NumPy or JAX boolean, an
    elementwise array, a user's truthy value): a Python bool, or a traced bool under a JAX
    transform."""
    if not _is_array(result):
        return bool(result)
    try:
        return bool(np.asarray(result).all())
    except Exception:
        # Tracers cannot become NumPy arrays: answer with a traced boolean, as JAX code expects.
        return result.all()


def _compared_fields(a: Any, b: Any) -> tuple[str, ...] | bool | None:
    """The fields pytreekit's ``__eq__`` would compare for ``a == b``; ``False`` when it would
    answer ``False`` at once (instances without annotations holding different fields); ``None``
    when it would not be pytreekit's ``__eq__`` that decides (another class, a user's)."""
    if a.__class__ is not b.__class__:
        return None
    eq = getattr(type(a), "__eq__", None)
    names: tuple[str, ...] | None = getattr(eq, "__pytreekit_compare__", None)
    if names is not None:
        return names
    if eq is pytree_eq:
        spec = _spec(a)
        names = spec.field_names(a)
        return names if set(spec.field_names(b)) == set(names) else False
    return None


def _all_equal(pairs: Any) -> Any:
    """Whether every pair is equal: a Python bool, or a traced bool under a JAX transform.

    Containers and pytree instances are walked with an explicit stack rather than by recursion,
    so nesting as deep as JAX flattens compares without a ``RecursionError``.
    """
    stack = list(pairs)
    traced = []
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        if _is_array(a) or _is_array(b):
            result = _arrays_equal(a, b)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if type(a) is not type(b) or len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
            continue
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            stack.extend((a[k], b[k]) for k in a)
            continue
        else:
            names = _compared_fields(a, b)
            if names is False:
                return False
            if isinstance(names, tuple):
                stack.extend((getattr(a, n), getattr(b, n)) for n in names)
                continue
            result = a == b
            if not isinstance(result, bool):
                result = _truth(result)
        if result is False:
            return False
        if result is not True:
            traced.append(result)
    if not traced:
        return True
    return functools.reduce(operator.and_, traced)


def pytree_eq(self: object, other: object) -> Any:
    """Same type, same static fields, same leaves (compared as arrays where they are arrays)."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _all_equal([(self, other)])


def pytree_hash(self: object) -> int:
    """Hash of type and field values; arrays are unhashable, so instances holding them are too."""
    values = []
    for name in _spec(self).field_names(self):
        value = getattr(self, name)
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"{type(self).__qualname__} instances are hashable only when every field is, "
                f"but field {name!r} holds {_describe(value)}. Define __hash__ on the class to "
                f"hash by identity or by selected fields."
            ) from None
        values.append(value)
    return hash((type(self), tuple(values)))


def _dtype_name(dtype: Any) -> str:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if dt.kind in "fiuc":
        return f"{dt.kind}{dt.itemsize * 8}"
    if dt.kind == "b":
        return "bool"
    return str(dt.name)


class _Text(str):
    """Output of ``summarise``'s walk, as opposed to a value still to summarise."""


class _Leave(int):
    """Marks the end of an instance in ``summarise``'s walk (its id)."""


def _repr_fields_of(value: Any) -> tuple[str, ...] | None:
    """The fields pytreekit's ``__repr__`` shows for ``value``, or ``None`` if it is not that
    ``__repr__``."""
    method = getattr(type(value), "__repr__", None)
    names: tuple[str, ...] | None = getattr(method, "__pytreekit_repr__", None)
    if names is None and method is pytree_repr:
        names = tuple(f.name for f in _spec(value).instance_fields(value) if f.repr)
    return names


def summarise(value: Any) -> str:
    """A short repr: arrays as ``f32[3,2]``, containers and pytree instances element-wise,
    anything else by ``repr``.

    Walked with an explicit stack (nesting as deep as JAX flattens works); an instance met again
    inside itself shows as ``...``.
    """
    out: list[str] = []
    inside: set[int] = set()
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Text:
            out.append(item)
            continue
        if type(item) is _Leave:
            inside.discard(item)
            continue
        stack.extend(reversed(_expand(item, inside)))
    return "".join(out)


def _expand(value: Any, inside: set[int]) -> list[Any]:
    """``value`` as text and values still to summarise, in order."""
    if _is_array(value):
        return [_Text(f"{_dtype_name(value.dtype)}[{','.join(str(d) for d in value.shape)}]")]
    if type(value) is list:
        return [_Text("["), *_joined(value), _Text("]")]
    if type(value) is tuple:
        return [_Text("("), *_joined(value), _Text(",)" if len(value) == 1 else ")")]
    if type(value) is dict:
        items = [[_Text(f"{k!r}: "), v] for k, v in value.items()]
        return [_Text("{"), *_joined(items, flat=True), _Text("}")]
    if callable(value) and hasattr(value, "__qualname__") and not isinstance(value, type):
        return [_Text(f"<function {value.__qualname__}>")]
    names = _repr_fields_of(value)
    if names is None:
        return [_Text(repr(value))]
    if id(value) in inside:
        return [_Text("...")]
    inside.add(id(value))
    parts = []
    for name in names:
        try:
            parts.append([_Text(f"{name}="), getattr(value, name)])
        except AttributeError:
            parts.append([_Text(f"{name}=<unset>")])
    return [
        _Text(f"{type(value).__qualname__}("),
        *_joined(parts, flat=True),
        _Text(")"),
        _Leave(id(value)),
    ]


def _joined(items: Sequence[Any], flat: bool = False) -> list[Any]:
    result: list[Any] = []
    for index, item in enumerate(items):
        if index:
            result.append(_Text(", "))
        if flat:
            result.extend(item)
        else:
            result.append(item)
    return result


@reprlib.recursive_repr()
def pytree_repr(self: object) -> str:
    return summarise(self)


def eq_for(cls: type, fields: Sequence[dataclasses.Field[Any]]) -> types.FunctionType:
    """``__eq__`` over the fields with ``compare=True``, arrays compared as arrays."""
    pairs = "".join(f"(self.{f.name}, other.{f.name}), " for f in fields if f.compare)
    body = [
        "if other.__class__ is self.__class__:",
        f"    return __pytreekit_all_equal__(({pairs}))",
        "return NotImplemented",
    ]
    helpers = {"__pytreekit_all_equal__": _all_equal}
    method = method_for(cls, "__eq__", "self, other", body, helpers, {"other": object})
    # Lets a comparison of nested instances walk them instead of recursing into __eq__.
    method.__pytreekit_compare__ = tuple(f.name for f in fields if f.compare)  # type: ignore[attr-defined]
    return method


def hash_for(cls: type, fields: Sequence[dataclasses.Field[Any]]) -> types.FunctionType:
    """``__hash__`` of the values of the fields dataclasses would hash; an unhashable value is
    reported by field name."""
    names = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    values = "".join(f"self.{name}, " for name in names)
    body = [
        "try:",
        f"    return __pytreekit_hash__(({values}))",
        "except TypeError:",
        f"    __pytreekit_unhashable__(self, {tuple(names)!r})",
        "    raise",
    ]
    helpers = {"__pytreekit_hash__": hash, "__pytreekit_unhashable__": _unhashable}
    return method_for(cls, "__hash__", "self", body, helpers, {"return": int})


def repr_for(cls: type, fields: Sequence[dataclasses.Field[Any]]) -> types.FunctionType:
    """``__repr__`` with arrays summarised (``f32[3,2]``), recursion-safe like dataclasses'."""
    names = tuple(f.name for f in fields if f.repr)
    helpers = {"__pytreekit_summarise__": summarise}
    method = method_for(cls, "__repr__", "self", ["return __pytreekit_summarise__(self)"], helpers)
    method.__annotations__ = {"return": str}
    guarded: Any = reprlib.recursive_repr()(method)
    guarded.__pytreekit_repr__ = names
    return guarded  # type: ignore[no-any-return]


def _unhashable(obj: object, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(obj, name)
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"{type(obj).__qualname__} instances are hashable only when the fields they "
                f"compare are, but field {name!r} holds {_describe(value)}, which is not. To "
                f"compile with an instance, pass it to the jitted function as an argument (not as "
                f"the function or a static argument); to hash by the other fields, declare this "
                f"one with field(hash=False)."
            ) from None
