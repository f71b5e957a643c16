"""Static values as data: an encoding whose reader runs no code (issue #29).

Artifacts that users treat as data (``jax.export``, torch treespecs) store a class's static
values. ``dumps`` writes them as tagged JSON; ``loads`` reads them back. It never imports a module
because the data says so, finds what the data names through modules' and classes' ``__dict__``s
(no ``getattr``: no module ``__getattr__``, no property runs), and calls nothing but the
constructors of the kinds below (never a class's ``__new__``, ``__init__`` or
``__post_init__``), pytreekit's own ``__setstate__`` and the decoders registered with
``register_static_codec``. Dict keys and frozenset elements are only values whose ``__hash__``
and ``__eq__`` are not Python code.

Wire format: ``b"PTK1"`` then ASCII JSON. Strings, finite floats, ints, bools and ``None`` are
JSON's own; a JSON object is a dict whose keys are all strings; every other value is an array
whose first element is a tag:

=========================  ==============================================================
``["t", *items]``          tuple
``["l", *items]``          list
``["d", k, v, k, v, ...]`` dict with a key that is not a string (order kept)
``["s", *items]``          frozenset
``["b", base64]``          bytes
``["f", "nan"]``           float ``nan``, ``"inf"``, ``"-inf"``
``["c", re, im]``          complex
``["r", "mod:qualname"]``  a function or other callable, by reference
``["k", "mod:qualname"]``  a class, by reference
``["dt", spec]``           a NumPy dtype: ``dtype.str`` (``"<f4"``), or an ml_dtypes name
``["e", cls, name]``       an enum member, by name
``["n", cls, *items]``     a NamedTuple
``["dc", cls, {fields}]``  a frozen dataclass
``["p", cls, {state}]``    a pytree class instance: what pytreekit's ``__getstate__`` gives
``["fp", f, args, kw]``    ``functools.partial``
``["x", cls, data]``       a value of a type with a registered codec
=========================  ==============================================================

JSON because it is the standard library's (no dependency), its C parser builds only dicts,
lists, strings, numbers, bools and ``None``, and a torch treespec (itself JSON) can hold it as
text. A reference resolves only in a module already in ``sys.modules`` (or one the caller allows
by name), walking ``__dict__``s, to a function or class, never a module.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import importlib
import json
import re
import sys
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from . import _markers as markers
from ._compat import is_field
from ._messages import looks_like_array, type_name
from ._references import (
    MISSING,
    StandIn,
    find_in,
    is_class,
    lookup,
    mro,
    own_dict,
    public_name,
)

MAGIC = b"PTK1"
# How deeply values may nest, at both ends: deeper data is refused before Python's recursion
# limit is near, and a value that contains itself is refused at export.
MAX_DEPTH = 100
# The key pytreekit's __getstate__ adds for the layout (``_dunders.markers.FIELDS``; _dunders sits
# above this module, tests/test_codec.py checks the two agree).


class StaticDataError(ValueError):
    """Static data that cannot be read: malformed, truncated, from another format, too deep, or
    naming something this process does not have or will not rebuild."""


class UnencodableError(TypeError):
    """A value static data cannot hold. ``path`` says where it is inside the value encoded
    (``"[1].activation"``, ``""`` at the top); ``reason`` and ``advice`` are the two halves of the
    message, for a caller that names the class and field first."""

    def __init__(self, path: str, value: Any, reason: str) -> None:
        self.path = path
        self.value_type = type_name(value)
        self.reason = reason
        kind = type(value)
        codec = (
            ""
            if kind in _BUILT_IN or kind is types.MethodType or looks_like_array(value)
            else f"register a codec for {self.value_type} with pytreekit.register_static_codec"
            f"({kind.__qualname__}, encode, decode), "
        )
        self.advice = (
            f"Store a plain value (numbers, strings, bytes, None; tuples, lists, dicts and "
            f"frozensets of them; dtypes, enum members, NamedTuples, frozen dataclasses and "
            f"pytree classes of them; functools.partial; functions and classes defined at module "
            f"level), {codec}or opt the pytree class in to pickle with "
            f"pytreekit.pickle_static_fields "
            f"(unsafe: loading its artifacts then runs whatever code they name)."
        )
        where = f" at {path}" if path else ""
        super().__init__(f"cannot store {self.value_type}{where}: {reason}. {self.advice}")


class _Refused(Exception):
    """Raised inside ``dumps``; each container on the way out adds its part of the path."""

    def __init__(self, value: Any, reason: str) -> None:
        self.value = value
        self.reason = reason
        self.path: list[str] = []


class _Bad(Exception):
    """Raised inside ``loads``; each container on the way out adds its part of the path."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path: list[str] = []


# -- what loading may run ------------------------------------------------------------------------


def _ours(method: Any) -> bool:
    """Whether a ``__getstate__``/``__setstate__`` found on a class is pytreekit's own."""
    return type(method) is types.FunctionType and method.__dict__.get(markers.STATE) is True


# A dict key or frozenset element is hashed (and maybe compared) as the container is rebuilt:
# only hashable values whose __hash__ and __eq__ are no one's Python code (or the standard
# library's enum hash) may be one.
_TRUSTED_METHODS = {id(enum.Enum.__dict__["__hash__"])}
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})
# By id, not by the type: hashing a type runs its metaclass's __hash__. The type is kept, so the
# id stays its own.
_hash_safe_types: dict[int, tuple[type, bool]] = {}


def _hash_safe(value: Any) -> bool:
    kind = type(value)
    if kind in _ATOMS:
        return True
    known = _hash_safe_types.get(id(kind))
    if known is not None:
        safe = known[1]
    else:
        safe = lookup(kind, "__hash__") is not None
        for name in ("__hash__", "__eq__"):
            method = lookup(kind, name)
            if type(method) is types.FunctionType and id(method) not in _TRUSTED_METHODS:
                safe = False
        _hash_safe_types[id(kind)] = (kind, safe)
    if safe and (kind is frozenset or issubclass(kind, tuple)):
        return all(_hash_safe(item) for item in value)
    return safe


def _unsafe_key(value: Any) -> str:
    return (
        f"{type_name(value)} cannot be a dict key or frozenset element in static data: it is "
        f"unhashable, or rebuilding the container would run its Python __hash__ or __eq__"
    )


_OBJECT_NEW = vars(object)["__new__"]


def _written_in_c(klass: type, name: str) -> bool:
    method = own_dict(klass).get(name)
    return method is not None and type(method) is not staticmethod


def _rebuildable(cls: type) -> str | None:
    """Why an instance of ``cls`` cannot be made by ``object.__new__`` and stores (``None``: it
    can). As ``object.__new__`` decides: past the ``__new__`` methods written in Python (which it
    skips), the nearest one must be ``object``'s."""
    if lookup(cls, "__del__") is not MISSING:
        return f"{cls.__qualname__} defines __del__, which would run on an object built from data"
    # object's own __new__ ends the search at the latest.
    owner = next(klass for klass in mro(cls) if _written_in_c(klass, "__new__"))
    if own_dict(owner)["__new__"] is not _OBJECT_NEW:
        return (
            f"{cls.__qualname__} is built on {owner.__qualname__}, which object.__new__ cannot make"
        )
    return None


def _store_check(cls: type, name: str) -> str | None:
    """Why ``name`` cannot be stored on an instance of ``cls`` without running code."""
    attribute = lookup(cls, name)
    if attribute is MISSING or type(attribute) is types.MemberDescriptorType:  # a slot
        return None
    kind = type(attribute)
    if lookup(kind, "__set__") is not MISSING or lookup(kind, "__delete__") is not MISSING:
        return f"{cls.__qualname__}.{name} is a {type_name(attribute)}, which storing would run"
    return None


# -- dtypes -------------------------------------------------------------------------------------

# ml_dtypes' types (bfloat16, float8_*, int4, ...) by name: their dtype.str ("<V2") loses them.
_ML_DTYPES: dict[str, np.dtype[Any]] = {
    np.dtype(kind).name: np.dtype(kind)
    for kind in vars(ml_dtypes).values()
    if isinstance(kind, type) and issubclass(kind, np.generic)
}
_ML_NAMES = {dtype.type: name for name, dtype in _ML_DTYPES.items()}
# What dtype.str gives for NumPy's own dtypes (what np.dtype parses without a warning).
_DTYPE_STR = re.compile(r"[<>|][biufcmMOSUV][0-9]{0,9}(\[[0-9]{0,9}[A-Za-z]{1,7}\])?\Z")


def _dtype_spec(dtype: np.dtype[Any]) -> str | None:
    name = _ML_NAMES.get(dtype.type)
    if name is not None:
        return name
    spec = dtype.str
    if dtype.fields is None and _DTYPE_STR.match(spec) and np.dtype(spec) == dtype:
        return spec
    return None


def _dtype(spec: Any) -> np.dtype[Any]:
    if type(spec) is str:
        dtype = _ML_DTYPES.get(spec)
        if dtype is not None:
            return dtype
        if _DTYPE_STR.match(spec):
            dtype = np.dtype(spec)
            if dtype.str == spec:
                return dtype
    raise _Bad(f"{spec!r:.40} is not a dtype this version writes")


# -- registered codecs --------------------------------------------------------------------------


class _Codec(NamedTuple):
    cls: type
    name: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


_codecs_by_type: dict[type, _Codec] = {}
_codecs_by_name: dict[str, _Codec] = {}
_codecs_lock = threading.Lock()
# Kinds the encoding has its own form for: a codec would never be reached, or would change them.
_BUILT_IN = {
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    tuple,
    list,
    dict,
    frozenset,
    type,
    functools.partial,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.ModuleType,
    np.dtype,
    StandIn,
}


def register_static_codec(
    cls: type, encode: Callable[[Any], Any], decode: Callable[[Any], Any]
) -> None:
    """Let static fields hold instances of ``cls`` in artifacts (``jax.export``,
    ``torch.export``): ``encode(value)`` turns one into what static data holds already (numbers,
    strings, tuples, ...), and ``decode(data)`` gets that data back and returns an instance of
    ``cls``. Loading an artifact runs no code but such decoders, on the data they are given.

    Values whose type is exactly ``cls`` use the codec (not its subclasses). The artifact names
    the codec by ``cls``'s module and qualified name; a class defined again under that name (a
    notebook cell run twice) takes the name over.

    Args:
        cls: The class whose instances the codec stores.
        encode: Called with an instance; returns a value static data can hold.
        decode: Called with what ``encode`` returned, as read back; returns an instance of
            ``cls``.

    Raises:
        TypeError: ``cls`` is not a class, or one static data stores already (``int``, ``tuple``,
            a dtype, ...), or ``encode`` or ``decode`` is not callable.
        ValueError: ``cls`` has a codec already.

    >>> import pytreekit
    >>> class Interval:
    ...     def __init__(self, low, high):
    ...         self.low, self.high = low, high
    >>> pytreekit.register_static_codec(
    ...     Interval, lambda i: (i.low, i.high), lambda pair: Interval(*pair)
    ... )
    """
    if not is_class(cls):
        raise TypeError(
            f"register_static_codec(cls=...) takes the class whose instances the codec stores, "
            f"got {cls!r:.60}."
        )
    if cls in _BUILT_IN or issubclass(cls, (np.dtype, type, types.ModuleType)):
        raise TypeError(
            f"register_static_codec(cls=...): static data stores {cls.__qualname__} values "
            f"itself; register a codec for a class of your own."
        )
    for role, function in (("encode", encode), ("decode", decode)):
        if not callable(function):
            raise TypeError(
                f"register_static_codec({role}=...) for {cls.__qualname__} must be callable, got "
                f"{function!r:.60}."
            )
    name = f"{cls.__module__}:{cls.__qualname__}"
    with _codecs_lock:
        if cls in _codecs_by_type:
            raise ValueError(
                f"register_static_codec(cls=...): {cls.__qualname__} has a codec already "
                f"(registered as {name!r}); register each class once."
            )
        previous = _codecs_by_name.get(name)
        if previous is not None:  # a class of the same name defined earlier: re-pointed
            del _codecs_by_type[previous.cls]
        codec = _Codec(cls, name, encode, decode)
        _codecs_by_type[cls] = codec
        _codecs_by_name[name] = codec


# -- encoding -----------------------------------------------------------------------------------
#
# Each value becomes JSON text directly (no tree handed to json.dumps afterwards): the C string
# quoting and int/float reprs are JSON's, and a model's statics cost about what pickle's did.

_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii
# "module:qualname" as JSON text, per name found.
_texts: dict[tuple[str, str], str] = {}


def _reference(value: Any) -> str:
    """The JSON text of ``"module:qualname"``, under which ``find_in`` finds ``value`` itself."""
    name = public_name(value)
    if name is not None:
        text = _texts.get(name)
        if text is None:
            text = _texts[name] = _quote(":".join(name))
        return text
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        what = (
            "has no name"
            if not isinstance(qualname, str)
            else "names no module"
            if not isinstance(module, str)
            else "is a lambda"
            if "<lambda>" in qualname
            else "is defined inside a function"
        )
        raise _Refused(
            value,
            f"functions and classes are stored by module and name, and {value!r:.60} {what}; "
            f"define it at module level",
        )
    raise _Refused(
        value,
        f"functions and classes are stored by module and name, and {module}.{qualname} is not "
        f"{value!r:.60} (nor is any public module of {module.partition('.')[0]} holding it "
        f"under that name)",
    )


def _class_reference(value: Any) -> str:
    """``_reference`` of ``value``'s class, refused as ``value`` (what the user stored)."""
    try:
        return _reference(type(value))
    except _Refused as refused:
        raise _Refused(value, f"its class is stored by name: {refused.reason}") from None


def _encode(value: Any, depth: int) -> str:
    kind = type(value)
    if kind is str:
        return _quote(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is float:
        return float.__repr__(value) if value - value == 0 else f'["f","{value!r}"]'
    if depth >= MAX_DEPTH:
        raise _Refused(value, f"it is nested deeper than {MAX_DEPTH} levels (or contains itself)")
    if kind is tuple:
        return _encode_items('["t"', value, depth + 1)
    codec = _codecs_by_type.get(kind)  # before the kinds below: a codec of an enum, say, wins
    if codec is not None:
        return _encode_codec(codec, value, depth + 1)
    encoder = _encoders.get(kind) or _encoder_for(value)
    return encoder(value, depth + 1)


def _encoder_for(value: Any) -> Encoder:
    """The encoder of ``value``'s type, decided once per type (``_Refused``: none)."""
    kind = type(value)
    encoder: Encoder
    if issubclass(kind, np.dtype):
        encoder = _encode_dtype
    elif issubclass(kind, enum.Enum):
        encoder = _encode_member
    elif issubclass(kind, type):
        encoder = _encode_class
    elif markers.SPEC in own_dict(kind):
        encoder = _encode_pytree
    elif issubclass(kind, tuple) and type(lookup(kind, "_fields")) is tuple:
        encoder = _encode_namedtuple
    elif lookup(kind, "__dataclass_params__") is not MISSING:
        encoder = _encode_dataclass
    elif issubclass(kind, np.generic):
        raise _Refused(value, "a NumPy scalar is not stored; convert it with .item()")
    elif looks_like_array(value):
        raise _Refused(value, "arrays are leaves, not static values; make the field non-static")
    elif kind is types.MethodType:
        raise _Refused(
            value,
            "a bound method is not stored; store a functools.partial of the function with the "
            "object instead",
        )
    elif callable(value):
        encoder = _encode_function
    else:
        raise _Refused(value, "static data does not store this kind of value")
    _encoders[kind] = encoder
    return encoder


def _encode_items(head: str, items: tuple[Any, ...] | list[Any], depth: int) -> str:
    """``head`` (an array's opening and tag), then the items, then ``]``."""
    parts = [head]
    try:
        for item in items:
            kind = type(item)  # the common cases inline: a model's statics are mostly these
            if kind is str:
                parts.append(_quote(item))
            elif kind is int:
                parts.append(int.__repr__(item))
            elif kind is bool:
                parts.append("true" if item else "false")
            else:
                parts.append(_encode(item, depth))
    except _Refused as refused:
        refused.path.append(f"[{len(parts) - 1}]")
        raise
    return ",".join(parts) + "]"


def _encode_list(value: list[Any], depth: int) -> str:
    return _encode_items('["l"', value, depth)


def _encode_bytes(value: bytes, depth: int) -> str:
    return f'["b","{base64.b64encode(value).decode("ascii")}"]'


def _encode_complex(value: complex, depth: int) -> str:
    return f'["c",{_encode(value.real, depth)},{_encode(value.imag, depth)}]'


def _encode_stand_in(value: StandIn, depth: int) -> str:
    """What pytreekit's ``__getstate__`` gives for ``jnp.tanh`` and the like: the value itself."""
    return _encode(value.value, depth)


def _encode_dtype(value: np.dtype[Any], depth: int) -> str:
    spec = _dtype_spec(value)
    if spec is None:
        raise _Refused(value, "only NumPy's own and ml_dtypes' dtypes are stored")
    return f'["dt",{_quote(spec)}]'


def _encode_class(value: type, depth: int) -> str:
    return f'["k",{_reference(value)}]'


def _encode_function(value: Any, depth: int) -> str:
    return f'["r",{_reference(value)}]'


def _encode_frozenset(value: frozenset[Any], depth: int) -> str:
    parts = []
    for item in value:
        try:
            parts.append(_encode(item, depth))
        except _Refused as refused:
            refused.path.append("<an element>")
            raise
        if not _hash_safe(item):
            raise _Refused(item, _unsafe_key(item))
    parts.sort()  # iteration order varies between processes; the bytes should not
    return ",".join(['["s"', *parts]) + "]"


def _encode_dict(value: dict[Any, Any], depth: int) -> str:
    if all(type(key) is str for key in value):
        return _encode_fields(value, depth, "[{!r:.40}]")
    parts = ['["d"']
    for index, (key, item) in enumerate(value.items()):
        try:
            parts.append(_encode(key, depth))
            if not _hash_safe(key):
                raise _Refused(key, _unsafe_key(key))
        except _Refused as refused:
            refused.path.append(f"<key {index}>")
            raise
        try:
            parts.append(_encode(item, depth))
        except _Refused as refused:
            refused.path.append(f"[{key!r:.40}]")
            raise
    return ",".join(parts) + "]"


def _encode_fields(state: dict[str, Any], depth: int, where: str = ".{}") -> str:
    """A JSON object: the entries of a dict whose keys are strings, or an object's fields."""
    parts = []
    for name, item in state.items():
        try:
            parts.append(f"{_quote(name)}:{_encode(item, depth)}")
        except _Refused as refused:
            refused.path.append("" if name == markers.FIELDS else where.format(name))
            raise
    return "{" + ",".join(parts) + "}"


def _encode_codec(codec: _Codec, value: Any, depth: int) -> str:
    try:
        data = codec.encode(value)
    except Exception as error:
        raise _Refused(
            value, f"its registered codec's encode raised {type(error).__name__}: {error}"
        ) from error
    try:
        return f'["x",{_quote(codec.name)},{_encode(data, depth)}]'
    except _Refused as refused:
        refused.path.append(f"<{codec.cls.__qualname__} codec>")
        raise


def _encode_partial(value: functools.partial[Any], depth: int) -> str:
    if getattr(value, "__dict__", None):
        raise _Refused(value, "a functools.partial with attributes set on it is not stored")
    parts = ['["fp"']
    for part, item in (
        (".func", value.func),
        (".args", value.args),
        (".keywords", value.keywords),
    ):
        try:
            parts.append(_encode(item, depth))
        except _Refused as refused:
            refused.path.append(part)
            raise
    return ",".join(parts) + "]"


def _encode_member(value: enum.Enum, depth: int) -> str:
    cls = type(value)
    members = own_dict(cls).get("_member_map_")
    name = value._name_
    if type(members) is not dict or members.get(name) is not value:
        raise _Refused(
            value,
            "an enum value that is not one member (a Flag combination) is not stored; store its "
            "members in a tuple",
        )
    return f'["e",{_class_reference(value)},{_quote(name)}]'


def _encode_pytree(value: Any, depth: int) -> str:
    cls = type(value)
    if not (_ours(lookup(cls, "__getstate__")) and _ours(lookup(cls, "__setstate__"))):
        raise _Refused(
            value,
            f"{cls.__qualname__} defines its own __getstate__, __setstate__ or __reduce__, which "
            f"loading static data never runs",
        )
    why = _rebuildable(cls)
    if why is not None:
        raise _Refused(value, why)
    name = _class_reference(value)
    return f'["p",{name},{_encode_fields(value.__getstate__(), depth)}]'


def _encode_namedtuple(value: tuple[Any, ...], depth: int) -> str:
    cls = type(value)
    names = lookup(cls, "_fields")
    if len(names) != len(value) or getattr(value, "__dict__", None):
        raise _Refused(value, f"this {cls.__qualname__} holds more than its fields {names}")
    parts = ['["n"', _class_reference(value)]
    try:
        for item in value:
            parts.append(_encode(item, depth))
    except _Refused as refused:
        refused.path.append(f".{names[len(parts) - 2]}")
        raise
    return ",".join(parts) + "]"


def _encode_dataclass(value: Any, depth: int) -> str:
    cls = type(value)
    if getattr(lookup(cls, "__dataclass_params__"), "frozen", False) is not True:
        raise _Refused(
            value,
            f"{cls.__qualname__} is a dataclass that is not frozen (static values must not "
            f"change); declare it with frozen=True",
        )
    names = [f.name for f in dataclasses.fields(cls)]
    why = _rebuildable(cls) or next(filter(None, (_store_check(cls, n) for n in names)), None)
    if why is not None:
        raise _Refused(value, why)
    state: dict[str, Any] = {}
    for name in names:
        try:
            state[name] = getattr(value, name)
        except AttributeError:
            continue  # an unset field stays unset
    extra = [
        key
        for key in getattr(value, "__dict__", {})
        if key not in state and type(lookup(cls, key)) is not functools.cached_property
    ]
    if extra:
        raise _Refused(value, f"it holds {extra[0]!r}, which is not a field of {cls.__qualname__}")
    return f'["dc",{_class_reference(value)},{_encode_fields(state, depth)}]'


Encoder = Callable[[Any, int], str]
# Each type's encoder: the containers and other built-in kinds here; the rest decided once per
# type by _encoder_for (a registered codec is looked up first).
_encoders: dict[type, Encoder] = {
    list: _encode_list,
    dict: _encode_dict,
    bytes: _encode_bytes,
    complex: _encode_complex,
    frozenset: _encode_frozenset,
    functools.partial: _encode_partial,
    StandIn: _encode_stand_in,
}


def dumps(value: Any) -> bytes:
    """``value`` as static data (``MAGIC`` and JSON).

    Raises ``UnencodableError`` (a ``TypeError``) naming where in ``value`` an unstorable part
    is, its type, and what to do."""
    try:
        text = _encode(value, 0)
    except _Refused as refused:
        path = "".join(reversed(refused.path))
        raise UnencodableError(path, refused.value, refused.reason) from None
    except ValueError as error:  # an int of more digits than Python converts to text
        raise UnencodableError("", value, str(error)) from None
    return MAGIC + text.encode("ascii")


# -- decoding -----------------------------------------------------------------------------------


def loads(data: bytes | bytearray | memoryview, *, allow_import: Iterable[str] = ()) -> Any:
    """The value ``dumps`` wrote.

    A function or class comes from a module already imported; ``allow_import`` names modules
    (exactly) that may be imported to find one. Raises ``StaticDataError`` (a ``ValueError``) for
    anything else: bytes of another format, malformed or truncated data, nesting deeper than
    ``MAX_DEPTH``, or a name this process does not have or will not rebuild."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads() takes bytes, got {type_name(data)}.")
    allowed = frozenset(allow_import)
    raw = bytes(data)
    if not raw.startswith(MAGIC):
        kind = "pickle" if is_pickle(raw) else f"unknown (starting {raw[:8]!r})"
        raise StaticDataError(
            f"cannot read static data: the format is {kind}, not pytreekit's ({MAGIC!r})."
        )
    try:
        text = raw[len(MAGIC) :].decode("ascii")
        try:
            tree, end = _scan(text, 0)  # json.loads without its Python wrapper
        except StopIteration:
            raise _Bad("no JSON value at character 0") from None
        if end != len(text):
            raise _Bad(f"extra data after the value, at character {end}")
        return _decode(tree, 0, allowed)
    except _Bad as bad:
        path = "".join(reversed(bad.path))
        where = f" at {path}" if path else ""
        raise StaticDataError(f"cannot read static data{where}: {bad.reason}.") from None
    except Exception as error:  # RecursionError, MemoryError, UnicodeDecodeError, a decoder's...
        raise StaticDataError(
            f"cannot read static data: {type(error).__name__}: {error!s:.200}."
        ) from error


def is_pickle(data: bytes) -> bool:
    """Whether ``data`` starts as pickle protocol 2 or later does (what pytreekit wrote before)."""
    return len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5


Decoder = Callable[[list[Any], int, frozenset[str]], Any]


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
# The C scanner json.loads runs: (text, index) -> (value, end); StopIteration where no value
# starts (json.loads raises JSONDecodeError then).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode(node: Any, depth: int, allowed: frozenset[str]) -> Any:
    kind = type(node)
    if kind in _JSON_SCALARS:
        return node
    if depth >= MAX_DEPTH:
        raise _Bad(f"values nest deeper than {MAX_DEPTH} levels")
    depth += 1
    if kind is dict:
        return _decode_object(node, depth, allowed)
    tag = node[0] if node else None
    if tag == "t":  # the commonest, inline; names and flags are all scalars, checked in C
        items = node[1:]
        if _JSON_SCALARS.issuperset(map(type, items)):
            return tuple(items)
        return tuple(_decode_items(items, depth, allowed))
    if type(tag) is not str:
        raise _Bad("an array must start with a tag")
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise _Bad(f"unknown tag {node[0]!r:.20}")
    return decoder(node, depth, allowed)


def _decode_object(node: dict[str, Any], depth: int, allowed: frozenset[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in node.items():
        try:
            out[key] = _decode(item, depth, allowed)
        except _Bad as bad:
            bad.path.append(f"[{key!r:.40}]")
            raise
    return out


def _decode_items(items: list[Any], depth: int, allowed: frozenset[str]) -> list[Any]:
    out: list[Any] = []
    try:
        for item in items:
            out.append(item if type(item) in _JSON_SCALARS else _decode(item, depth, allowed))
    except _Bad as bad:
        bad.path.append(f"[{len(out)}]")
        raise
    return out


def _arity(node: list[Any], count: int) -> None:
    if len(node) != count:
        raise _Bad(f"{node[0]!r} takes {count - 1} parts, got {len(node) - 1}")


def _decode_list(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    return _decode_items(node[1:], depth, allowed)


def _decode_frozenset(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    items = _decode_items(node[1:], depth, allowed)
    for item in items:
        if not _hash_safe(item):
            raise _Bad(_unsafe_key(item))
    return frozenset(items)


def _decode_dict(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    if len(node) % 2 != 1:
        raise _Bad("'d' takes keys and values in pairs")
    items = _decode_items(node[1:], depth, allowed)
    keys = items[::2]
    for key in keys:
        if not _hash_safe(key):
            raise _Bad(_unsafe_key(key))
    return dict(zip(keys, items[1::2], strict=True))


def _decode_bytes(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 2)
    if type(node[1]) is not str:
        raise _Bad("'b' takes base64 text")
    return base64.b64decode(node[1].encode("ascii"), validate=True)


_SPECIAL_FLOATS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _decode_float(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 2)
    number = _SPECIAL_FLOATS.get(node[1]) if type(node[1]) is str else None
    if number is None:
        raise _Bad("'f' takes 'nan', 'inf' or '-inf'")
    return number


def _decode_complex(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 3)
    real, imag = _decode_items(node[1:], depth, allowed)
    if type(real) is not float or type(imag) is not float:
        raise _Bad("'c' takes two floats")
    return complex(real, imag)


# name -> (object, module, namespace, key) of the references resolved so far (only ever objects
# that exist), checked again at each use: the module still imported, the name still the object's.
_resolved: dict[str, tuple[Any, str, Any, str]] = {}


def _resolve(name: Any, allowed: frozenset[str]) -> Any:
    if type(name) is not str:
        raise _Bad("a reference is a 'module:qualname' string")
    known = _resolved.get(name)
    if (
        known is not None
        and known[1] in sys.modules
        and known[2].get(known[3], MISSING) is known[0]
    ):
        return known[0]
    module, colon, qualname = name.partition(":")
    if not (colon and _dotted(module) and _dotted(qualname)):
        raise _Bad(f"{name!r:.80} is not a 'module:qualname' reference")
    if module not in sys.modules:
        if module not in allowed:
            raise _Bad(
                f"{name!r} is in module {module!r}, which is not imported: import it before "
                f"loading (loading never imports a module an artifact names)"
            )
        importlib.import_module(module)
    found, namespace, key = find_in(module, qualname)
    if found is MISSING:
        raise _Bad(f"module {module!r} has no {qualname!r} (looked up without __getattr__)")
    if namespace.get(key) is found:  # not a staticmethod's function: one lookup checks it
        _resolved[name] = (found, module, namespace, key)
    return found


def _dotted(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _resolve_class(name: Any, allowed: frozenset[str]) -> type:
    found = _resolve(name, allowed)
    if not is_class(found):
        raise _Bad(f"{name!r:.80} is not a class")
    cls: type = found
    return cls


def _decode_function(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    if len(node) != 2:
        _arity(node, 2)
    found = _resolve(node[1], allowed)
    if not callable(found) or issubclass(type(found), (type, types.ModuleType)):
        raise _Bad(f"{node[1]!r:.80} is not a function")
    return found


def _decode_class(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 2)
    return _resolve_class(node[1], allowed)


def _decode_dtype(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 2)
    return _dtype(node[1])


def _decode_member(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 3)
    cls = _resolve_class(node[1], allowed)
    if not issubclass(cls, enum.Enum):
        raise _Bad(f"{node[1]!r:.80} is not an enum")
    members = own_dict(cls).get("_member_map_")
    member = MISSING
    if type(members) is dict and type(node[2]) is str:
        member = members.get(node[2], MISSING)
    if type(member) is not cls:
        raise _Bad(f"{cls.__qualname__} has no member {node[2]!r:.40}")
    return member


def _decode_namedtuple(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    if len(node) < 2:
        raise _Bad("'n' takes a class and the items")
    cls = _resolve_class(node[1], allowed)
    names = lookup(cls, "_fields")
    if not issubclass(cls, tuple) or type(names) is not tuple:
        raise _Bad(f"{node[1]!r:.80} is not a NamedTuple")
    if len(names) != len(node) - 2:
        raise _Bad(f"{cls.__qualname__} has {len(names)} fields, the data {len(node) - 2}")
    return tuple.__new__(cls, _decode_items(node[2:], depth, allowed))


def _fields_of(node: list[Any], depth: int, allowed: frozenset[str]) -> tuple[type, dict[str, Any]]:
    _arity(node, 3)
    cls = _resolve_class(node[1], allowed)
    if type(node[2]) is not dict:
        raise _Bad(f"{node[0]!r} takes its fields as an object")
    why = _rebuildable(cls)
    if why is not None:
        raise _Bad(why)
    return cls, _decode_object(node[2], depth, allowed)


def _check_names(cls: type, names: Iterable[Any], allowed_names: Any) -> None:
    for name in names:
        if type(name) is not str:  # no repr: a decoded object's repr is its class's code
            raise _Bad(f"a {type_name(name)} is not a field name")
        if not name.isidentifier() or name.startswith("__"):
            raise _Bad(f"{name!r:.40} is not a field name")
        if allowed_names is not None and name not in allowed_names:
            raise _Bad(f"{cls.__qualname__} has no field {name!r}")
        why = _store_check(cls, name)
        if why is not None:
            raise _Bad(why)


def _dataclass_names(cls: type) -> frozenset[str] | None:
    """The fields of a dataclass (not its InitVars or ClassVars); ``None`` for other classes."""
    found = lookup(cls, "__dataclass_fields__")
    if found is MISSING:
        return None
    if type(found) is not dict:
        raise _Bad(f"{cls.__qualname__}.__dataclass_fields__ is not a dict")
    return frozenset(
        name for name, f in found.items() if issubclass(type(f), dataclasses.Field) and is_field(f)
    )


def _decode_dataclass(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    cls, state = _fields_of(node, depth, allowed)
    names = _dataclass_names(cls)
    params = lookup(cls, "__dataclass_params__")
    if names is None or getattr(params, "frozen", False) is not True:
        raise _Bad(f"{cls.__qualname__} is not a frozen dataclass")
    _check_names(cls, state, names)
    instance_dict = lookup(cls, "__dict__")
    obj: Any = object.__new__(cls)
    for name, value in state.items():
        slot = lookup(cls, name)
        if type(slot) is types.MemberDescriptorType:
            slot.__set__(obj, value)
        elif type(instance_dict) is types.GetSetDescriptorType:
            instance_dict.__get__(obj, cls)[name] = value
        else:
            raise _Bad(f"{cls.__qualname__} has no place for {name!r}")
    return obj


def _decode_pytree(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    cls, state = _fields_of(node, depth, allowed)
    setstate = lookup(cls, "__setstate__")
    if markers.SPEC not in own_dict(cls) or not _ours(setstate):
        raise _Bad(f"{cls.__qualname__} is not a pytree class that pytreekit rebuilds")
    layout = state.get(markers.FIELDS)
    if not (
        type(layout) is tuple
        and len(layout) == 2
        and type(layout[0]) is tuple
        and type(layout[1]) is tuple
        and len(layout[0]) == len(layout[1])
        and all(type(flag) is bool for flag in layout[1])
    ):
        raise _Bad(f"{markers.FIELDS!r} must be (names, static flags)")
    names = layout[0]
    _check_names(cls, names, _dataclass_names(cls))  # strings from here on
    if len(set(names)) != len(names):
        raise _Bad(f"the layout of {cls.__qualname__} names a field twice")
    if not {key for key in state if key != markers.FIELDS} <= set(names):
        raise _Bad(f"the state of {cls.__qualname__} holds a value that is not a field")
    obj: Any = object.__new__(cls)
    setstate(obj, state)
    return obj


def _decode_partial(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 4)
    func, args, keywords = _decode_items(node[1:], depth, allowed)
    if not callable(func) or type(args) is not tuple or type(keywords) is not dict:
        raise _Bad("'fp' takes a callable, a tuple and a dict of keywords")
    if not all(type(key) is str for key in keywords):
        raise _Bad("the keywords of a functools.partial are strings")
    return functools.partial(func, *args, **keywords)


def _decode_codec(node: list[Any], depth: int, allowed: frozenset[str]) -> Any:
    _arity(node, 3)
    codec = _codecs_by_name.get(node[1]) if type(node[1]) is str else None
    if codec is None:
        raise _Bad(
            f"no codec is registered for {node[1]!r:.80} in this process (register it with "
            f"pytreekit.register_static_codec before loading)"
        )
    data = _decode(node[2], depth, allowed)
    try:
        value = codec.decode(data)
    except Exception as error:
        raise _Bad(
            f"the decoder registered for {codec.cls.__qualname__} raised "
            f"{type(error).__name__}: {error}"
        ) from error
    if type(value) is not codec.cls:
        raise _Bad(
            f"the decoder registered for {codec.cls.__qualname__} returned a {type_name(value)}"
        )
    return value


_DECODERS: dict[str, Decoder] = {
    "l": _decode_list,
    "d": _decode_dict,
    "s": _decode_frozenset,
    "b": _decode_bytes,
    "f": _decode_float,
    "c": _decode_complex,
    "r": _decode_function,
    "k": _decode_class,
    "dt": _decode_dtype,
    "e": _decode_member,
    "n": _decode_namedtuple,
    "dc": _decode_dataclass,
    "p": _decode_pytree,
    "fp": _decode_partial,
    "x": _decode_codec,
}
