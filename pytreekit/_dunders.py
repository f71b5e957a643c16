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


def values_equal(a: Any, b: Any) -> Any:
    """Equality that is safe for arrays: a Python bool, or a traced bool under a JAX transform."""
    if a is b:
        return True
    if _is_array(a) or _is_array(b):
        return _arrays_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        return _all_equal(zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        return _all_equal((a[k], b[k]) for k in a)
    result = a == b
    if isinstance(result, bool):
        return result
    if _is_array(result):
        return result.all()
    return bool(result)


def _all_equal(pairs: Any) -> Any:
    traced = []
    for a, b in pairs:
        result = values_equal(a, b)
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
    spec = _spec(self)
    names = spec.field_names(self)
    if spec.fields is None and set(spec.field_names(other)) != set(names):  # any order
        return False
    return _all_equal((getattr(self, n), getattr(other, n)) for n in names)


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


def summarise(value: Any) -> str:
    """A short repr: arrays as ``f32[3,2]``, containers element-wise, anything else by ``repr``."""
    if _is_array(value):
        return f"{_dtype_name(value.dtype)}[{','.join(str(d) for d in value.shape)}]"
    if isinstance(value, list):
        return "[" + ", ".join(summarise(v) for v in value) + "]"
    if isinstance(value, tuple) and type(value) is tuple:
        inner = ", ".join(summarise(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict) and type(value) is dict:
        return "{" + ", ".join(f"{k!r}: {summarise(v)}" for k, v in value.items()) + "}"
    if callable(value) and hasattr(value, "__qualname__") and not isinstance(value, type):
        return f"<function {value.__qualname__}>"
    return repr(value)


@reprlib.recursive_repr()
def pytree_repr(self: object) -> str:
    spec = _spec(self)
    parts = []
    for field in spec.instance_fields(self):
        if not field.repr:
            continue
        try:
            value = getattr(self, field.name)
        except AttributeError:
            parts.append(f"{field.name}=<unset>")
            continue
        parts.append(f"{field.name}={summarise(value)}")
    return f"{type(self).__qualname__}({', '.join(parts)})"


def eq_for(cls: type, fields: Sequence[dataclasses.Field[Any]]) -> types.FunctionType:
    """``__eq__`` over the fields with ``compare=True``, arrays compared as arrays."""
    pairs = "".join(f"(self.{f.name}, other.{f.name}), " for f in fields if f.compare)
    body = [
        "if other.__class__ is self.__class__:",
        f"    return __pytreekit_all_equal__(({pairs}))",
        "return NotImplemented",
    ]
    helpers = {"__pytreekit_all_equal__": _all_equal}
    return method_for(cls, "__eq__", "self, other", body, helpers, {"other": object})


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
    helpers = {"__pytreekit_repr__": _repr_fields}
    body = [f"return __pytreekit_repr__(self, {names!r})"]
    method = method_for(cls, "__repr__", "self", body, helpers, {"return": str})
    guarded: Any = reprlib.recursive_repr()(method)
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


def _repr_fields(obj: object, names: tuple[str, ...]) -> str:
    parts = []
    for name in names:
        try:
            value = getattr(obj, name)
        except AttributeError:
            parts.append(f"{name}=<unset>")
            continue
        parts.append(f"{name}={summarise(value)}")
    return f"{type(obj).__qualname__}({', '.join(parts)})"
