"""Static values as data: tagged JSON (``MAGIC`` first; the tags in ``schema.TAGS``) whose
reader runs no code (issue #29). ``loads`` imports no module the data names, finds what it names
through ``__dict__``s (no ``getattr``, no module ``__getattr__``), calls nothing the data names
and no ``__new__``, ``__init__`` or ``__post_init__``: only the constructors of the kinds below,
pytreekit's own ``__setstate__`` and the decoders given to ``register_static_codec``. Dict keys
and frozenset elements are only values whose ``__hash__`` and ``__eq__`` are not Python code.
JSON: the standard library's C parser builds only dicts, lists, strings, numbers, bools and
``None``, and a torch treespec (JSON itself) holds it as text.
"""

from __future__ import annotations

import base64
import collections.abc
import contextlib
import contextvars
import dataclasses
import enum
import functools
import importlib
import itertools
import json
import math
import numbers
import re
import sys
import threading
import types
import typing
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from .. import _markers as markers
from .._classes import StandIn, restored
from .._compat import (
    ABSTRACT_BUFFER,
    DATACLASS_PARAMS,
    class_annotations,
    dataclass_frozen,
    enum_members,
    is_field,
    is_type_alias,
    protocol_bases,
    written_by_dataclasses,
)
from .._messages import looks_like_array, type_name
from .._names import (
    MISSING,
    class_bound,
    find_in,
    is_class,
    lookup,
    module_dict,
    mro,
    own_dict,
    public_name,
)
from .schema import MAGIC, MAGIC_TEXT, MAX_DEPTH, TAGS


class StaticDataError(ValueError):
    """Static data that cannot be read: malformed, truncated, from another format, too deep, or
    naming something this process does not have or will not rebuild."""


class UnencodableError(TypeError):
    """A value static data cannot hold. ``path`` says where it is inside the value encoded
    (``"[1].activation"``, ``""`` at the top); ``reason`` and ``advice`` are the two halves of the
    message, for a caller that names the class and field first."""

    def __init__(self, path: str, value: Any, reason: str, advice: str | None = None) -> None:
        self.path = path
        self.value_type = type_name(value)
        self.reason = reason
        kind = type(value)
        codec = (
            ""
            if kind in _BUILT_IN
            or kind is types.MethodType
            or looks_like_array(value)
            or _codecs_by_type.get(kind) is not None  # it has one: the reason says what to do
            else f"register a codec for {self.value_type} with pytreekit.register_static_codec"
            f"({kind.__qualname__}, encode, decode), "
        )
        self.advice = advice or (
            f"Store a plain value (numbers, strings, bytes, None; tuples, lists, dicts and "
            f"frozensets of them; dtypes, enum members, NamedTuples, frozen dataclasses and "
            f"pytree classes of them; functools.partial; functions and classes defined at module "
            f"level), {codec}or opt the pytree class in to pickle with "
            f"pytreekit.pickle_static_fields "
            f"(unsafe: loading its artifacts then runs whatever code they name)."
        )
        where = f" at {path}" if path else ""
        super().__init__(f"cannot store {self.value_type}{where}: {reason}. {self.advice}")


class _Bad(Exception):
    """Raised inside ``loads`` (``_Refused``: ``dumps``); containers on the way out add the path."""

    def __init__(self, reason: str, value: Any = None) -> None:
        self.reason = reason
        self.value = value
        self.path: list[str] = []

    def at(self, part: str) -> _Bad:
        self.path.append(part)
        return self

    def where(self) -> str:
        return "".join(reversed(self.path))


class _Refused(_Bad):
    def __init__(self, value: Any, reason: str, advice: str | None = None) -> None:
        super().__init__(reason, value)
        self.advice = advice  # what to do, where the general advice (a codec, pickle) is wrong


# -- what loading may run ------------------------------------------------------------------------


def _ours(method: Any) -> bool:
    """Whether a ``__getstate__``/``__setstate__`` found on a class is pytreekit's own."""
    return type(method) is types.FunctionType and method.__dict__.get(markers.STATE) is True


# A dict key or frozenset element is hashed (and maybe compared) as the container is rebuilt:
# only hashable values whose __hash__ and __eq__ are no one's Python code (or the standard
# library's enum hash) may be one.
_TRUSTED_METHODS = {id(enum.Enum.__dict__["__hash__"])}
ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})


class TypeCache:
    """What was decided once per class, held weakly (a class redefined 50 times in a notebook is
    not kept alive 50 times) and by id, not by the class: hashing a class runs its metaclass's
    ``__hash__``."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[type], Any]] = {}

    def get(self, kind: type) -> Any:
        entry = self._entries.get(id(kind))
        return entry[1] if entry is not None and entry[0]() is kind else None

    def set(self, kind: type, value: Any) -> None:
        key, entries = id(kind), self._entries

        def forget(ref: weakref.ref[type]) -> None:
            if entries.get(key, (None,))[0] is ref:
                del entries[key]

        entries[key] = (weakref.ref(kind, forget), value)

    def __len__(self) -> int:
        return len(self._entries)


_hash_safe_types = TypeCache()


def _hash_safe(value: Any, known: dict[int, Any] | None = None) -> bool:
    """Whether ``value`` may be a key; ``known`` (by id, the value itself) holds containers this
    load has found so already, so that a nested one is walked once, not once per level above."""
    kind = type(value)
    if _atom(kind):
        return True
    if known is not None and known.get(id(value)) is value:
        return True
    safe = _hash_safe_type(kind)
    if safe and (kind is frozenset or issubclass(kind, tuple)):
        return all(_hash_safe(item, known) for item in _items(value))
    return safe


def _hash_safe_type(kind: type) -> bool:
    """Whether hashing and comparing a ``kind`` runs no Python code, decided once per class."""
    decided: bool | None = _hash_safe_types.get(kind)
    if decided is None:
        # Only C slots (or the standard library's enum hash) are known to run no Python code: a
        # staticmethod, functools.cache or any callable object in the class may; and the enum
        # hash reads the member's name, through the class's __getattribute__.
        decided = all(
            type(lookup(kind, name)) is types.WrapperDescriptorType
            or id(lookup(kind, name)) in _TRUSTED_METHODS
            for name in ("__hash__", "__eq__", "__getattribute__")
        )
        _hash_safe_types.set(kind, decided)
    return decided


def _atom(kind: type) -> bool:
    """Whether ``kind`` is one of ``ATOMS``, asked without hashing it (its metaclass's code)."""
    return type(kind) is type and kind in ATOMS


def _items(value: tuple[Any, ...] | frozenset[Any]) -> Iterator[Any]:
    """The items of a tuple (a NamedTuple's too) or frozenset, by the C iterator: a class's own
    ``__iter__`` is its code."""
    return tuple.__iter__(value) if isinstance(value, tuple) else frozenset.__iter__(value)


def _unsafe_key(value: Any) -> str:
    return (
        f"{type_name(value)} cannot be a dict key or frozenset element in static data: it is "
        f"unhashable, or rebuilding the container would run its Python __hash__ or __eq__"
    )


def _key_refusal(value: Any) -> str | None:
    """Why ``dumps`` refuses ``value`` as a dict key or frozenset element: what ``loads`` would
    refuse there (a NaN, read back as ``LoadedNaN``, whose ``__hash__`` is Python code)."""
    if not _hash_safe(value):
        return _unsafe_key(value)
    if _holds_nan(value):
        return "a NaN cannot be a dict key or frozenset element in static data (it equals no key)"
    return None


def _holds_nan(value: Any) -> bool:
    if isinstance(value, (float, complex)):
        return value != value
    return isinstance(value, (tuple, frozenset)) and any(map(_holds_nan, value))


_OBJECT_NEW = vars(object)["__new__"]


def _written_in_c(klass: type, name: str) -> bool:
    method = own_dict(klass).get(name)
    return method is not None and type(method) is not staticmethod


def _finalised(cls: type) -> str | None:
    """Why an instance of ``cls`` built from data would run code when it dies."""
    if lookup(cls, "__del__") is not MISSING:
        return f"{cls.__qualname__} defines __del__, which would run on an object built from data"
    return None


def _rebuildable(cls: type) -> str | None:
    """Why an instance of ``cls`` cannot be made by ``object.__new__`` and stores (``None``: it
    can). As ``object.__new__`` decides: past the ``__new__`` methods written in Python (which it
    skips), the nearest one must be ``object``'s."""
    if (why := _finalised(cls)) is not None:
        return why
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


# -- the references an artifact may name --------------------------------------------------------
#
# Resolving a reference runs no code, but calling what it resolved to does: an artifact naming
# os.system as an activation runs a shell at the victim's first call. So a reference loads only
# if the object it resolves to (by identity, whatever name found it) is on the list below, was
# added by the user (add_safe_references, safe_references), or is a class the field's declared
# type names. The list holds leaf numeric functions and types: each computes on the values it is
# given and nothing else. No I/O, and no higher-order function (max/min/sorted with key=, map,
# functools.reduce, lax.cond or scan, debug.callback): with functools.partial each calls whatever
# the artifact hands it, an exec among them.


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_ELEMENTWISE = _words(
    "abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh cbrt ceil clip "
    "conj conjugate copysign cos cosh deg2rad degrees divide exp exp2 expm1 fabs float_power "
    "floor floor_divide fmax fmin fmod heaviside hypot i0 imag isfinite isinf isnan isneginf "
    "isposinf ldexp log log10 log1p log2 logaddexp logaddexp2 maximum minimum mod multiply "
    "nan_to_num negative nextafter positive power rad2deg radians real reciprocal remainder "
    "rint round sign signbit sin sinc sinh sqrt square subtract tan tanh true_divide trunc "
    "where matmul dot sum mean prod max min amax amin argmax argmin std var median"
)
_DEFAULTS: dict[str, tuple[str, ...]] = {
    "builtins": _words("abs divmod pow round bool int float complex"),
    "operator": _words(
        "abs add and_ eq floordiv ge gt index inv invert le lshift lt matmul mod mul ne neg not_ "
        "or_ pos pow rshift sub truediv truth xor"
    ),
    "numpy": _ELEMENTWISE,
    "jax.numpy": _ELEMENTWISE,
    "jax.nn": _words(
        "celu elu gelu glu hard_sigmoid hard_silu hard_swish hard_tanh identity leaky_relu "
        "log1mexp log_sigmoid log_softmax logsumexp mish one_hot relu relu6 selu sigmoid silu "
        "soft_sign softmax softplus sparse_plus sparse_sigmoid squareplus standardize swish tanh"
    ),
    "torch": _words(
        "abs acos add asin atan atan2 ceil clamp clip cos cosh div erf erfc exp exp2 expm1 floor "
        "log log10 log1p log2 log_softmax logsumexp matmul maximum mean minimum mul neg pow "
        "reciprocal relu round rsqrt sigmoid sign sin sinh softmax sqrt square sub sum tan tanh "
        "trunc where"
    ),
    "torch.nn.functional": _words(
        "celu elu gelu glu hardsigmoid hardswish hardtanh leaky_relu log_softmax logsigmoid mish "
        "relu relu6 selu sigmoid silu softmax softplus softsign tanh tanhshrink"
    ),
}
# Modules whose every function of these kinds is a leaf numeric one (math), or whose scalar types
# and ufuncs are (NumPy, jax.numpy, ml_dtypes).
_WHOLE_MODULES = ("math", "numpy", "jax.numpy", "ml_dtypes")

# id -> object, each kept alive by the dict so that its id stays its own.
_default: dict[int, Any] = {id(type(None)): type(None)}
_defaults_read: set[str] = set()
# The ids of NumPy's functions on the default list: NumPy takes ``out`` positionally.
_numpy_functions: set[int] = set()
_added: dict[Any, Any] = {}
_allow_lock = threading.Lock()


def _leaf_kinds(module: str, namespace: dict[str, Any]) -> Callable[[Any], bool]:
    """Which values of a whole module are leaf numeric (jax.numpy's scalar types: a metaclass)."""
    if module == "math":
        return lambda value: type(value) is types.BuiltinFunctionType
    ufunc = namespace.get("ufunc") if module == "jax.numpy" else np.ufunc
    scalar_meta = type(namespace.get("float32")) if module == "jax.numpy" else None
    return lambda value: (
        (ufunc is not None and type(value) is ufunc)
        or type(value) is scalar_meta
        or (is_class(value) and issubclass(value, np.generic))
    )


def _read_defaults() -> bool:
    """Add the defaults of the modules imported since last asked; whether any were."""
    pending = [m for m in (*_DEFAULTS, *_WHOLE_MODULES) if m not in _defaults_read]
    fresh = [m for m in pending if issubclass(type(sys.modules.get(m)), types.ModuleType)]
    if not fresh:
        return False
    with _allow_lock:
        for module in fresh:
            _add_defaults(module)
    return True


def _add_defaults(module: str) -> None:
    found = _module_defaults(module)
    _default.update((id(value), value) for value in found)
    if module == "numpy":
        _numpy_functions.update(id(value) for value in found if not is_class(value))
    _defaults_read.add(module)


def _module_defaults(module: str) -> list[Any]:
    namespace = module_dict(sys.modules[module])
    named = [namespace.get(name, MISSING) for name in _DEFAULTS.get(module, ())]
    found = [f for f in named if f is not MISSING and type(f) is not types.ModuleType]
    if module in _WHOLE_MODULES:
        leaf = _leaf_kinds(module, namespace)
        found.extend(value for value in list(namespace.values()) if leaf(value))
    return found


class _Scope:
    """One ``safe_references`` block: dead (``alive`` false) from its ``__exit__`` on, also where
    a task or a copied context still holds it."""

    __slots__ = ("alive", "objects")

    def __init__(self, objects: dict[Any, Any]) -> None:
        self.objects = objects
        self.alive = True


_scopes: contextvars.ContextVar[tuple[_Scope, ...]] = contextvars.ContextVar(
    "pytreekit_safe_references", default=()
)


_BOUND = (types.MethodType, types.BuiltinMethodType)


def _identity(value: Any) -> Any:
    """Its id, or for a method bound to a class (new at each lookup) its class's id and name."""
    kind = type(value)  # by identity: `in` would run the __eq__ of its class's metaclass
    if (kind is _BOUND[0] or kind is _BOUND[1]) and class_bound(value):
        return (id(value.__self__), value.__name__)
    return id(value)


def is_safe_reference(value: Any) -> bool:
    """Whether an artifact may name ``value``: on the default list, added, or allowed by a live
    ``safe_references`` scope."""
    key = _identity(value)
    if key in _default or key in _added:
        return True
    scopes = _scopes.get()
    if scopes and any(scope.alive and key in scope.objects for scope in scopes):
        return True
    return _read_defaults() and key in _default


def _references(values: Any, call: str) -> dict[Any, Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{call} takes a list of functions and classes, got {type_name(values)}; "
            f"write {call.partition('(')[0]}([f])."
        )
    found: dict[Any, Any] = {}
    for value in values:
        if issubclass(type(value), types.ModuleType) or not callable(value):
            raise TypeError(
                f"{call} takes functions and classes, got {value!r:.60}: an artifact names a "
                f"function or class, never a module or another value."
            )
        found[_identity(value)] = value
    return found


def add_safe_references(references: Iterable[Any], /) -> None:
    """Let artifacts loaded from now on in this process name these functions and classes in
    static fields (beyond the default list: leaf numeric functions and types such as
    ``jax.nn.relu``, ``jnp.tanh``, ``math.exp``, ``jnp.float32``).

    Loading calls nothing an artifact names, but a model calls its static functions: add only
    functions that do nothing but compute on their arguments. A function that calls what it is
    given (``max`` with ``key=``, ``map``, ``functools.reduce``) lets an artifact run any code.

    Args:
        references: Functions and classes, as objects (``[my_activation, MyConfig]``).

    Raises:
        TypeError: an item is a module or not callable.

    >>> import math, pytreekit
    >>> pytreekit.add_safe_references([math.hypot])
    """
    found = _references(references, "add_safe_references(...)")
    with _allow_lock:
        _added.update(found)


class safe_references:
    """Within this block, artifacts may name these functions and classes too (see
    ``add_safe_references``). The permission ends at the block's end, also for tasks and copied
    contexts started inside it.

    >>> import math, pytreekit
    >>> with pytreekit.safe_references([math.hypot]):
    ...     pass  # jax.export.deserialize(artifact)
    """

    def __init__(self, references: Iterable[Any], /) -> None:
        self._scope = _Scope(_references(references, "safe_references(...)"))
        self._token: contextvars.Token[tuple[_Scope, ...]] | None = None

    def __enter__(self) -> None:
        if self._token is not None or not self._scope.alive:
            raise RuntimeError("a safe_references(...) block is entered once")
        self._token = _scopes.set((*_scopes.get(), self._scope))

    def __exit__(self, *exc: object) -> None:
        self._scope.alive = False
        if self._token is not None:
            _scopes.reset(self._token)


def allowing_advice(name: str, when: str = "loading") -> str:
    """How a user lets artifacts name ``module:qualname``."""
    dotted = name.replace(":", ".").removeprefix("builtins.")
    return (
        f"If you trust it, allow it before {when}: "
        f"`pytreekit.add_safe_references([{dotted}])`, or work inside "
        f"`with pytreekit.safe_references([{dotted}]):`"
    )


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
# What a stored dtype may be: items no bigger than a numeric dtype's (complex256: 32 bytes) give
# room to spare for short strings, where a b"|V999999999" would make a model allocating with it
# ask for a gigabyte an item; and no object dtype, whose items are Python objects, not numbers:
# no array JAX or torch computes on holds them.
_MAX_DTYPE_ITEM = 64


def _storable_dtype(dtype: np.dtype[Any]) -> bool:
    return dtype.itemsize <= _MAX_DTYPE_ITEM and dtype.kind != "O"


def _dtype_spec(dtype: np.dtype[Any]) -> str | None:
    name = _ML_NAMES.get(dtype.type)
    if name is not None:
        return name
    spec = dtype.str
    if (
        dtype.fields is None
        and _DTYPE_STR.match(spec)
        and _storable_dtype(dtype)
        and np.dtype(spec) == dtype
    ):
        return spec
    return None


def _dtype(spec: Any) -> np.dtype[Any]:
    if type(spec) is str:
        dtype = _ML_DTYPES.get(spec)
        if dtype is not None:
            return dtype
        if _DTYPE_STR.match(spec):
            dtype = np.dtype(spec)
            if dtype.str == spec and _storable_dtype(dtype):
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
# id -> codec, for a class an artifact names: hashing it would run its metaclass's __hash__.
_codecs_by_id: dict[int, _Codec] = {}
_codecs_lock = threading.Lock()
# Kinds the encoding has its own form for: a codec would never be reached, or would change them.
_BUILT_IN = ATOMS.union(
    (tuple, list, dict, frozenset, type, functools.partial, np.dtype, StandIn, types.ModuleType),
    (types.FunctionType, types.BuiltinFunctionType),
)


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
            del _codecs_by_id[id(previous.cls)]
        codec = _Codec(cls, name, encode, decode)
        _codecs_by_type[cls] = codec
        _codecs_by_name[name] = codec
        _codecs_by_id[id(cls)] = codec


def _codec_bypass(cls: type, tag: str) -> None:
    """Refuse the ``tag`` form of ``cls`` where ``cls`` has a codec: its decoder (the user's
    validation) is the only way its values load, and the writer uses nothing else for them."""
    codec = _codecs_by_id.get(id(cls))
    if codec is not None and codec.cls is cls:
        raise _Bad(
            f"{cls.__qualname__} has a registered codec, so its values are read by its decoder "
            f"only (['x', {codec.name!r}, ...]); pytreekit never writes one in the {tag!r} form, "
            f"which would skip the decoder"
        )


def codec_named(name: str) -> Any:
    """The codec registered under ``name`` (``None``: none)."""
    return _codecs_by_name.get(name)


# -- encoding -----------------------------------------------------------------------------------
#
# Each value becomes JSON text directly (no tree handed to json.dumps afterwards): the C string
# quoting and int/float reprs are JSON's, and a model's statics cost about what pickle's did.

_quote: Callable[[str], str] = json.dumps  # ASCII, JSON's quoting
# "module:qualname" as JSON text, per name found.
_texts: dict[tuple[str, str], str] = {}


_admitted_var: contextvars.ContextVar[tuple[type, ...]] = contextvars.ContextVar(
    "pytreekit_admitted", default=()
)
# The declared type of the field being written: a generic alias's arguments apply to the
# instance it holds (``Reader.for_field``).
_declared_var: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "pytreekit_declared", default=None
)


def _reference(value: Any) -> str:
    """The JSON text of ``"module:qualname"``, under which ``find_in`` finds ``value`` itself;
    refused unless a reader with this process's safe references would load it."""
    name = public_name(value)
    if name is not None:
        if not (
            is_safe_reference(value) or (is_class(value) and _admits(_admitted_var.get(), value))
        ):
            joined = ":".join(name)
            what = "class" if is_class(value) else "function"
            raise _Refused(
                value,
                f"the {what} {joined!r} is not on the list of references an artifact may name, "
                f"so loading would refuse it. " + allowing_advice(joined, "writing and loading"),
            )
        text = _texts.get(name)
        if text is None:
            text = _texts[name] = _quote(":".join(name))
        return text
    raise _unnamed(value)


def _unnamed(value: Any) -> _Refused:
    """Why ``value``, which ``public_name`` does not find, is not stored by name."""
    owner = getattr(value, "__self__", None)
    if type(value) is types.BuiltinMethodType and owner is not None and not is_class(owner):
        method = getattr(value, "__name__", "method")
        return _Refused(
            value,
            f"a method bound to a {type_name(owner)} is not stored by name; store "
            f"functools.partial({type(owner).__qualname__}.{method}, {owner!r:.40}) instead",
        )
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        what = next(why for why, test in _NAMELESS if test(module, qualname))
        return _Refused(
            value,
            f"functions and classes are stored by module and name, and {value!r:.60} {what}; "
            f"define it at module level",
        )
    return _Refused(
        value,
        f"functions and classes are stored by module and name, and {module}.{qualname} is not "
        f"{value!r:.60} (nor is any public module of {module.partition('.')[0]} holding it "
        f"under that name)",
    )


# Why a function or class is not found by its own name, in order.
_NAMELESS: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
    ("has no name", lambda module, qualname: not isinstance(qualname, str)),
    ("names no module", lambda module, qualname: not isinstance(module, str)),
    ("is a lambda", lambda module, qualname: "<lambda>" in qualname),
    ("is defined inside a function", lambda module, qualname: True),
)


def _class_reference(value: Any) -> str:
    """``_reference`` of ``value``'s class, refused as ``value`` (what the user stored)."""
    try:
        return _reference(type(value))
    except _Refused as refused:
        raise _Refused(value, f"its class is stored by name: {refused.reason}") from None


def _encode(value: Any, depth: int) -> str:
    kind = type(value)
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar(value)
    if depth >= MAX_DEPTH:
        raise _Refused(value, f"it is nested deeper than {MAX_DEPTH} levels (or contains itself)")
    if kind is tuple:
        return _encode_items('["t"', value, depth + 1)
    codec = _codecs_by_type.get(kind)  # before the kinds below: a codec of an enum, say, wins
    if codec is not None:
        return _encode_codec(codec, value, depth + 1)
    encoder = _encoders.get(kind) or _learned_encoders.get(kind) or _encoder_for(value)
    return encoder(value, depth + 1)


def _encoder_for(value: Any) -> Encoder:
    """The encoder of ``value``'s type, decided once per type (``_Refused``: none)."""
    kind = type(value)
    found = next((how for test, how in _KINDS if test(kind, value)), _NOT_STORED)
    if isinstance(found, str):
        raise _Refused(value, found)
    if kind is not types.MethodType:  # a method bound to a class: decided per value
        _learned_encoders.set(kind, found)
    return found


def _encode_text(value: str) -> str:
    """A string, with any surrogate code point as a list of code points: JSON's escapes would
    join two of them into one character, and a lone one is refused when read."""
    if _LONE_SURROGATE.search(value):
        return f'["u",[{",".join(str(ord(char)) for char in value)}]]'
    return _quote(value)


def _encode_int(value: int) -> str:
    try:
        return int.__repr__(value)
    except ValueError:  # more digits than Python converts to text: hexadecimal, in linear time
        return f'["i","{value:x}"]'


_SCALARS: dict[type, Callable[[Any], str]] = {
    str: lambda value: _quote(value) if value.isascii() else _encode_text(value),
    int: _encode_int,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
    float: lambda value: float.__repr__(value) if value - value == 0 else f'["f","{value!r}"]',
}


def _encode_items(head: str, items: tuple[Any, ...] | list[Any], depth: int) -> str:
    """``head`` (an array's opening and tag), then the items, then ``]``."""
    parts = [head]
    try:
        for item in items:
            kind = type(item)  # the common cases inline: a model's statics are mostly these
            if kind is str and item.isascii():
                parts.append(_quote(item))
            elif kind is int:
                parts.append(_encode_int(item))
            elif kind is bool:
                parts.append("true" if item else "false")
            else:
                parts.append(_encode(item, depth))
    except _Refused as refused:
        raise refused.at(f"[{len(parts) - 1}]") from None
    return ",".join(parts) + "]"


def _encode_dtype(value: np.dtype[Any], depth: int) -> str:
    spec = _dtype_spec(value)
    if spec is None:
        raise _Refused(
            value,
            f"only NumPy's own and ml_dtypes' dtypes are stored, of items up to "
            f"{_MAX_DTYPE_ITEM} bytes and not of Python objects",
        )
    return f'["dt",{_quote(spec)}]'


def _encode_frozenset(value: frozenset[Any], depth: int) -> str:
    parts = []
    for item in value:
        try:
            parts.append(_encode(item, depth))
        except _Refused as refused:
            raise refused.at("<an element>") from None
        if (why := _key_refusal(item)) is not None:
            raise _Refused(item, why)
    parts.sort()  # iteration order varies between processes; the bytes should not
    return ",".join(['["s"', *parts]) + "]"


def _encode_dict(value: dict[Any, Any], depth: int) -> str:
    if all(
        type(key) is str and (key.isascii() or not _LONE_SURROGATE.search(key)) for key in value
    ):
        return _encode_fields(value, depth, "[{!r:.40}]")
    parts = ['["d"']
    for index, (key, item) in enumerate(value.items()):
        try:
            parts.append(_encode(key, depth))
            if (why := _key_refusal(key)) is not None:
                raise _Refused(key, why)
        except _Refused as refused:
            raise refused.at(f"<key {index}>") from None
        try:
            parts.append(_encode(item, depth))
        except _Refused as refused:
            raise refused.at(f"[{key!r:.40}]") from None
    return ",".join(parts) + "]"


def _encode_fields(
    state: dict[str, Any], depth: int, where: str = ".{}", cls: type | None = None
) -> str:
    """A JSON object: a dict's string keys, or an instance's fields checked as ``cls`` declares."""
    declared = declared_types(cls) if cls is not None else {}
    outer = _declared_var.get()
    if cls is not None and outer is not None:  # the arguments of a generic alias, as read
        declared = {name: _substituted(*pair, outer, cls) for name, pair in declared.items()}
    parts = []
    for name, item in state.items():
        try:
            parts.append(f"{_quote(name)}:{_encode_field(cls, declared, name, item, depth)}")
        except _Refused as refused:
            raise refused.at("" if name == markers.FIELDS else where.format(name)) from None
    return "{" + ",".join(parts) + "}"


def _encode_field(cls: Any, declared: dict[str, Any], name: str, value: Any, depth: int) -> str:
    """A field's value, refused where the reader would refuse it: not of the declared type."""
    hint, admitted = declared.get(name, _UNDECLARED)
    if hint is None:
        token = _declared_var.set(None)
        try:
            return _encode(value, depth)
        finally:
            _declared_var.reset(token)
    original = restored(value)
    if not admits_value(hint, original):
        if _by_reference(value):  # an unsafe function: its refusal says how to allow it
            _reference(value)
        raise _Refused(
            value,
            f"{cls.__qualname__}.{name} is declared {type_name_of(hint)}, and loading refuses a "
            f"value of another type there{callable_advice(hint, original)}",
            _declared_advice(hint, original),
        )
    token, declared_token = _admitted_var.set(admitted), _declared_var.set(hint)
    try:
        return _encode(value, depth)
    finally:
        _declared_var.reset(declared_token)
        _admitted_var.reset(token)


def _by_reference(value: Any) -> bool:
    """Whether ``value`` is stored by name (``_encode_function``)."""
    kind = type(value)
    if _atom(kind) or kind in _encoders or _codecs_by_type.get(kind) is not None:
        return False
    return (_learned_encoders.get(kind) or _encoder_for(value)) is _encode_function


def callable_advice(hint: Any, value: Any, *, loading: bool = False) -> str:
    """Why a field refuses a value of another kind (a callable object, a class, a ufunc taking
    another number of inputs, a number of another kind) and, writing, what to store or declare
    instead: ``""`` for any other refusal. Loading, no advice: a declaration widened to let the
    file's value in would let in what the refusal is there to keep out."""
    numeric = _numeric_advice(hint, value, loading)
    if numeric:
        return numeric
    inputs = _inputs_advice(hint, value, loading)
    if inputs:
        return inputs
    if loading:
        return _loading_reason(hint, value)
    called = _called_class(value) if _declares_callable(hint) else None
    if called is not None:
        name = called.__qualname__
        return (
            f" (a Callable admits a class only if it is a safe reference or the result the "
            f"Callable declares names it: elsewhere in a declared type a class stands for its "
            f"instances, so that an artifact cannot choose which class's constructor the model "
            f"calls; to store the class {name}, declare the field type[{name}] | "
            f"{type_name_of(hint)})"
        )
    if not callable(value) or is_class(value) or not _declares_callable(hint):
        return _protocol_advice(hint)
    kind = type(value).__qualname__
    return (
        f" (a Callable admits only functions and classes stored by name and functools.partial "
        f"of them, so that an artifact cannot choose an object to call; to store a {kind}, "
        f"declare the field {kind} | {type_name_of(hint)})"
    )


def _loading_reason(hint: Any, value: Any) -> str:
    """Why loading refuses a callable object or a class where a ``Callable`` is declared."""
    if not callable(value) or not _declares_callable(hint):
        return _protocol_advice(hint)
    return (
        " (a Callable admits functions stored by name, classes that are safe references or that "
        "the Callable's result names, and functools.partial of them, so that an artifact cannot "
        "choose what the model calls: the artifact was edited, or written for another "
        "declaration)"
    )


def _inputs_advice(hint: Any, value: Any, loading: bool) -> str:
    """Why a ``Callable[[...], R]`` field refuses a NumPy ufunc taking another number of inputs
    (``_inputs_fit``), and, writing, what to declare: never ``ufunc | ...``, which admits any."""
    func, bound, _ = _innermost(value, (), {})
    if type(func) is not np.ufunc:
        return ""
    declared = [
        len(args[0])
        for arm in _arms(hint, 0)
        if _origin(arm) is collections.abc.Callable
        and (args := typing.get_args(arm))
        and type(args[0]) is list
    ]
    if not declared or any(func.nin == len(bound) + n for n in declared):
        return ""
    takes = func.nin - len(bound)
    reason = (
        f" (numpy:{func.__name__} takes {takes} argument{'s' * (takes != 1)} and the field "
        f"declares a Callable of {declared[0]}: NumPy reads the arguments past its inputs as "
        f"out= arrays, and writes into them"
    )
    if loading:
        return f"{reason}; the artifact was edited, or written for another declaration)"
    many = f"{declared[0]} argument{'s' * (declared[0] != 1)}"
    return f"{reason}; store a function of {many}, or declare the arguments it takes)"


def _arms(hint: Any, depth: int) -> list[Any]:
    """The members of a union (``hint`` itself where it is none)."""
    hint = _unwrapped(hint)
    origin = _origin(hint)
    if depth > 20 or not (origin is typing.Union or origin is types.UnionType):
        return [hint]
    return [arm for arg in typing.get_args(hint) for arm in _arms(arg, depth + 1)]


def _declares_callable(hint: Any) -> bool:
    """Whether ``hint`` is a ``Callable`` (or a callback ``Protocol``), or a union of one."""
    return any(_origin(arm) is collections.abc.Callable for arm in _arms(hint, 0))


# Numbers are stored by kind: loading admits a bool only where a bool is declared (or a type that
# is not a number, such as ``object``), an int neither where a float nor a complex is, a float not
# where a complex is. ``True == 1 == 1.0`` with one hash, so a treedef holding one is equal to
# one holding the other: a loaded model would share its jit traces with the user's own
# (``x * True`` is an int array where ``x * 1.0`` is a float one).
_NUMBERS: tuple[type, ...] = (
    int,
    float,
    complex,
    numbers.Number,
    numbers.Complex,
    numbers.Real,
    numbers.Rational,
    numbers.Integral,
)


def _numeric_advice(hint: Any, value: Any, loading: bool = False) -> str:
    """Why a number of another kind than the declared one is refused, and, writing, what to
    write instead (never a wider declaration: ``float | bool`` would let ``True`` pass for
    ``1.0``)."""
    hint = _unwrapped(hint)
    number = _refused_number(hint, value)
    if number is None:
        return ""
    reason = (
        "static data keeps numbers of their kind: True == 1 == 1.0 with one hash, so neither a "
        "treedef nor jit's cache tells them apart, and a value of another kind would pass for "
        "yours"
    )
    if loading:
        return f" ({reason})"
    example = {float: f"{number!r}.0", complex: f"complex({number!r})"}.get(hint, repr(number))
    return f" ({reason}: write {example} for a field declared {type_name_of(hint)})"


def _refused_number(hint: Any, value: Any) -> int | float | None:
    """The number a value of another numeric kind than ``hint`` stands for (``True``: 1), or
    ``None`` where it is no such number."""
    kind = type(value)
    if kind is bool:
        return int(value) if any(hint is number for number in _NUMBERS) else None
    if (kind is int and hint is float) or ((kind is int or kind is float) and hint is complex):
        return value  # type: ignore[no-any-return]
    return None


def _declared_advice(hint: Any, value: Any) -> str | None:
    """The advice for a value refused as not of its field's declared type, where the general
    one (a codec, pickle) would not help: a number of another kind, a function where a
    ``Protocol`` is declared."""
    if _numeric_advice(hint, value):
        return "Store a value of the kind the field declares."
    if _inputs_advice(hint, value, False):
        return "Store a function taking the arguments the field declares."
    if _protocol_advice(hint):
        return "Declare the field Callable[..., ...] (or derive the value's class from it)."
    return None


def _protocol_advice(hint: Any) -> str:
    hint = _unwrapped(hint)
    if not is_class(hint) or own_dict(hint).get("_is_protocol") is not True:
        return ""
    return (
        f" ({hint.__qualname__} is a Protocol with more members than __call__: static data "
        f"checks a value against it by the value's classes, never by its members, so declare "
        f"a function's field Callable[[...], ...])"
    )


def dumps_fields(cls: type, head: tuple[Any, ...], names: Iterable[str], values: Any) -> bytes:
    """``(*head, values)`` as static data, each of ``values`` as the field of ``cls`` it is in
    ``names`` (checked against its declared type)."""
    declared = declared_types(cls)
    try:
        parts = []
        for index, (name, value) in enumerate(zip(names, values, strict=True)):
            try:
                parts.append(_encode_field(cls, declared, name, value, 1))
            except _Refused as refused:
                raise refused.at(f"[{index}]") from None
        text = _encode(head, 0)
    except _Refused as refused:
        raise UnencodableError(
            refused.where(), refused.value, refused.reason, refused.advice
        ) from None
    values_text = "".join("," + part for part in parts)
    return MAGIC + f'{text[:-1]},["t"{values_text}]]'.encode("ascii")


def _encode_codec(codec: _Codec, value: Any, depth: int) -> str:
    try:
        data = codec.encode(value)
    except Exception as error:
        raise _Refused(
            value, f"its registered codec's encode raised {type(error).__name__}: {error}"
        ) from error
    try:
        text = _encode(data, depth)
    except _Refused as refused:
        raise refused.at(f"<{codec.cls.__qualname__} codec>") from None
    try:
        _check_hash(value)
    except Exception as error:
        raise _Refused(
            value,
            f"it is not hashable ({type(error).__name__}: {error!s:.100}), and a static value is "
            f"hashed with its treedef (loading refuses it)",
        ) from error
    if not _is_plain(data, depth):
        raise _Refused(
            value,
            f"the codec registered for {codec.cls.__qualname__} encodes it as a "
            f"{type_name(data)} holding more than plain data (numbers, strings, bytes, None, "
            f"dtypes and containers of them), and decoders are handed plain data only",
        )
    return f'["x",{_quote(codec.name)},{text}]'


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
            raise refused.at(part) from None
        if part == ".func" and not _referenced(restored(value.func)):
            raise _Refused(
                value,
                f"the function of a functools.partial is stored by name only (a function or "
                f"class defined at module level), not as a {type_name(value.func)}",
            )
        why = _mutating(value.func, value.args, value.keywords) if part == ".keywords" else None
        if why is not None:
            raise _Refused(value, why)
        if part != ".func" and not _is_plain(item, depth):
            raise _Refused(
                value,
                "the arguments of a functools.partial are stored as plain data only (numbers, "
                "strings, bytes, None, dtypes and containers of them): a function among them is "
                "what turns max(..., key=...) into an exec. Make the function a field of its own",
            )
    return ",".join(parts) + "]"


# Keywords with which a function of the default list writes into what it is given (torch's
# ``F.relu(x, inplace=True)``, NumPy's ``nan_to_num(x, copy=False)``, ``out=``), or returns
# memory it never wrote (a NumPy ufunc's ``where=`` without ``out=``): the list holds functions
# that compute on their arguments and nothing else.
_MUTATING_KEYWORDS = {
    "inplace": "may write into the arrays it is given",
    "out": "may write into the arrays it is given",
    "copy": "may write into the arrays it is given",
    "overwrite_input": "may write into the arrays it is given",
    "where": "may return uninitialized memory (NumPy leaves out what where= masks)",
}


_PARTIAL_SLOTS = vars(functools.partial)  # read without a subclass's properties


def _innermost(
    func: Any, args: tuple[Any, ...], keywords: dict[str, Any]
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The function a partial of ``func`` with ``args`` and ``keywords`` calls, and the arguments
    it gets: ``functools.partial`` flattens a partial of a partial into one (inner arguments
    first, outer keywords win)."""
    for _ in range(MAX_DEPTH):
        if not issubclass(type(func), functools.partial):
            break
        args = (*_PARTIAL_SLOTS["args"].__get__(func), *args)
        keywords = {**_PARTIAL_SLOTS["keywords"].__get__(func), **keywords}
        func = _PARTIAL_SLOTS["func"].__get__(func)
    return func, args, keywords


def _mutating(func: Any, args: tuple[Any, ...], keywords: dict[str, Any]) -> str | None:
    """Why a partial of ``func`` with ``args`` and ``keywords`` is refused: a default-list
    function told to write into its arguments (``None``: it is not)."""
    func, args, keywords = _innermost(func, args, keywords)
    if _identity(func) not in _default or _identity(func) in _added:
        return None
    named = sorted(set(_MUTATING_KEYWORDS).intersection(keywords))
    if named:
        return (
            f"a functools.partial of a function on the default list with {named[0]}= "
            f"{_MUTATING_KEYWORDS[named[0]]}, and the default list holds functions that only "
            f"compute: add the function with pytreekit.add_safe_references if you mean it"
        )
    # A partial's arguments come before the caller's, which then land on NumPy's positional
    # ``out`` (``partial(np.tanh, 0.0)(x)`` writes into ``x``).
    if args and id(func) in _numpy_functions:
        return (
            f"a functools.partial of NumPy's {getattr(func, '__name__', type_name(func))} with "
            f"positional arguments, which come before the caller's and so push the caller's "
            f"array into NumPy's positional out= (which writes into it): pass them by keyword, "
            f"or add the function with pytreekit.add_safe_references if you mean it"
        )
    return None


def refuses_partial(func: Any, args: tuple[Any, ...], keywords: dict[str, Any]) -> bool:
    """Whether loading refuses a partial of ``func`` with ``args`` and ``keywords`` (what they
    hold aside) for the rule of ``_mutating``."""
    return _mutating(func, args, keywords) is not None


def _referenced(func: Any) -> bool:
    """Whether ``func`` may be a partial's function or a ``Callable`` field's value: a class, or a
    safe reference that is not itself a partial (``add_safe_references`` takes any callable)."""
    if is_class(func):
        return True
    return not issubclass(type(func), functools.partial) and is_safe_reference(func)


def _safe_callable(value: Any) -> bool:
    """What a ``Callable`` field admits: a safe reference, a class (loading resolves only those a
    safe reference or the field's declared type names), or a ``functools.partial`` of one; never
    a value built from data (a codec's, an enum member, a pytree instance)."""
    kind = type(value)
    if kind is functools.partial or kind is LoadedPartial:
        return _referenced(_innermost(value, (), {})[0])
    return _referenced(value)


def _encode_member(value: enum.Enum, depth: int) -> str:
    cls = type(value)
    members = enum_members(cls)
    name = value.name
    if members is None or members.get(name) is not value:
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
    return f'["p",{name},{_encode_fields(value.__getstate__(), depth, cls=cls)}]'


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
        raise refused.at(f".{names[len(parts) - 2]}") from None
    return ",".join(parts) + "]"


def _encode_dataclass(value: Any, depth: int) -> str:
    cls = type(value)
    if not dataclass_frozen(cls):
        raise _Refused(
            value,
            f"{cls.__qualname__} is a dataclass that is not frozen (static values must not "
            f"change); declare it with frozen=True",
        )
    names = [f.name for f in dataclasses.fields(cls)]
    why = _rebuildable(cls) or next(filter(None, (_store_check(cls, n) for n in names)), None)
    if why is not None:
        raise _Refused(value, why)
    state = _set_fields(value, names)
    _refuse_unset(cls, value, state)
    extra = [
        key
        for key in getattr(value, "__dict__", {})
        if key not in state and type(lookup(cls, key)) is not functools.cached_property
    ]
    if extra:
        raise _Refused(value, f"it holds {extra[0]!r}, which is not a field of {cls.__qualname__}")
    return f'["dc",{_class_reference(value)},{_encode_fields(state, depth, cls=cls)}]'


def _refuse_unset(cls: type, value: Any, state: dict[str, Any]) -> None:
    """Refuse a frozen dataclass instance without a field loading requires (``_always_held``)."""
    for field in dataclasses.fields(cls):
        if field.name not in state and _always_held(cls, field.name, field):
            raise _Refused(
                value,
                f"its field {field.name!r} is not set, and loading refuses a {cls.__qualname__} "
                f"without it (an init=False field without a default is set in __post_init__)",
            )


def _set_fields(value: Any, names: list[str]) -> dict[str, Any]:
    """The fields set on ``value`` (an unset field stays unset)."""
    return {name: item for name in names if (item := getattr(value, name, MISSING)) is not MISSING}


_PLAIN_CONTAINERS = frozenset({tuple, list, frozenset})


def _is_plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is plain data: what a reader without references reads back."""
    kind = type(value)
    if kind in ATOMS or issubclass(kind, np.dtype) or depth > MAX_DEPTH:
        return True  # too deep: refused by _encode, naming the depth
    if kind is dict:
        return all(_is_plain(item, depth + 1) for item in (*value, *value.values()))
    return kind in _PLAIN_CONTAINERS and all(_is_plain(item, depth + 1) for item in value)


def _encode_function(value: Any, depth: int) -> str:
    return f'["r",{_reference(value)}]'


def _encode_torch_dtype(value: Any, depth: int) -> str:
    name = str(value).removeprefix("torch.")
    torch = sys.modules["torch"]
    if module_dict(torch).get(name) is not value:
        raise _Refused(value, f"torch has no dtype {name!r} of that name")
    return f'["td",{_quote(name)}]'


class LoadedNaN(float):
    """A NaN read from static data: equal to every NaN. A model's treedef compares its static
    values, and NaN equals no NaN but itself: without this, a model holding one could never be
    passed to the ``Exported.call`` of its own artifact. Pickles as a plain NaN."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and math.isnan(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return sys.hash_info.nan

    def __repr__(self) -> str:
        return "nan"

    def __reduce__(self) -> tuple[Any, ...]:
        return float, ("nan",)


class LoadedPartial(functools.partial[Any]):
    """A ``functools.partial`` read from static data: equal to a partial of the same function and
    arguments (partials compare by identity, so a model holding one could never be passed to the
    ``Exported.call`` of its own artifact). Pickles as a plain ``functools.partial``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        # Arguments of their kind, as static fields' values: 1 == 1.0 == True with one hash, and
        # a partial of jnp.clip given 0 would share the jit traces of one given 0.0.
        if not isinstance(other, functools.partial):
            return NotImplemented
        mine, theirs = (self.args, self.keywords), (other.args, other.keywords)
        return same(self.func, other.func) and mine == theirs and _kinds(mine) == _kinds(theirs)

    def __hash__(self) -> int:
        try:
            keywords = tuple(sorted(self.keywords.items()))
            return hash((self.func, self.args, keywords, _kinds((self.args, self.keywords))))
        except TypeError:  # unhashable arguments: no treedef holds it
            return object.__hash__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return functools.partial, (self.func,), (self.func, self.args, self.keywords, None)


setattr(LoadedPartial, markers.PLAIN_PARTIAL, True)


class LoadedAux(tuple[Any, ...]):
    """The aux data of a node read from an artifact: equal to aux data holding the same values,
    a class only to itself (``same``). A treedef compares its nodes' aux data with ``==``, which
    a subclass's ``__eq__`` answers on either side. Pickles as a plain tuple."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple):
            return NotImplemented
        return len(self) == len(other) and all(map(same, self, other))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__  # equal under same: equal as tuples, so hashed alike

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)


def same(mine: Any, theirs: Any) -> bool:
    """Whether two static values are equal, a class equal only to itself, all through tuples
    (NamedTuples too), lists, dicts and frozensets: a metaclass's ``__eq__`` may make two classes
    equal, with one hash (JAX's scalar types: ``jnp.float32 == np.float32``), and an artifact
    edited to name one for the other would pass the structure check and share jit traces."""
    if mine is theirs:
        return True
    if isinstance(mine, type) or isinstance(theirs, type):
        return False
    kind = type(mine)
    if kind is not type(theirs):  # a LoadedNaN, a LoadedPartial: equal to what they stand for
        return bool(mine == theirs)
    if issubclass(kind, (tuple, list)):
        return len(mine) == len(theirs) and all(map(same, mine, theirs))
    if kind is dict:
        return mine.keys() == theirs.keys() and all(same(mine[k], theirs[k]) for k in mine)
    if kind is frozenset:
        classes = [{id(item) for item in side if isinstance(item, type)} for side in (mine, theirs)]
        return classes[0] == classes[1] and mine == theirs
    return bool(mine == theirs)


def _kinds(value: Any) -> Any:
    """The types of ``value`` and of everything its containers hold (a partial's arguments are
    plain data: tuples, lists, dicts, frozensets and atoms), as a hashable tree. A NaN read back
    is of kind ``float``, as the NaN it stands for."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind, tuple(map(_kinds, value))
    # An element or key paired with its kind: 1 == 1.0 == True with one hash, so a frozenset or
    # dict's own == matches {1} with {1.0}. Unordered, as the containers compare (and keys of
    # several types do not sort).
    if kind is frozenset:
        return kind, frozenset((item, _kinds(item)) for item in value)
    if kind is dict:
        return kind, frozenset((key, _kinds(key), _kinds(item)) for key, item in value.items())
    return float if kind is LoadedNaN else kind


Encoder = Callable[[Any, int], str]
# The encoder of each other class, decided once by _encoder_for from _KINDS.
_learned_encoders = TypeCache()
# Each type's encoder: the containers and other built-in kinds here; the rest decided once per
# type by _encoder_for (a registered codec is looked up first).
_encoders: dict[type, Encoder] = {
    list: lambda value, depth: _encode_items('["l"', value, depth),
    dict: _encode_dict,
    bytes: lambda value, depth: f'["b","{base64.b64encode(value).decode("ascii")}"]',
    complex: lambda value, depth: (
        f'["c",{_encode(value.real, depth)},{_encode(value.imag, depth)}]'
    ),
    frozenset: _encode_frozenset,
    functools.partial: _encode_partial,
    LoadedPartial: _encode_partial,
    LoadedNaN: lambda value, depth: '["f","nan"]',
    # What pytreekit's __getstate__ gives for jnp.tanh and the like: the value itself.
    StandIn: lambda value, depth: _encode(value.value, depth),
}
_NOT_STORED = "static data does not store this kind of value"
# In order, what tells a kind (its type, the value) and its encoder, or why it is refused.
_KINDS: tuple[tuple[Callable[[type, Any], bool], Encoder | str], ...] = (
    (lambda kind, value: issubclass(kind, np.dtype), _encode_dtype),
    (lambda kind, value: issubclass(kind, enum.Enum), _encode_member),
    (lambda kind, value: issubclass(kind, type), lambda value, depth: f'["k",{_reference(value)}]'),
    (lambda kind, value: markers.SPEC in own_dict(kind), _encode_pytree),
    (
        lambda kind, value: issubclass(kind, tuple) and type(lookup(kind, "_fields")) is tuple,
        _encode_namedtuple,
    ),
    (lambda kind, value: lookup(kind, DATACLASS_PARAMS) is not MISSING, _encode_dataclass),
    (
        lambda kind, value: issubclass(kind, np.generic),
        "a NumPy scalar is not stored; convert it with .item()",
    ),
    (
        lambda kind, value: looks_like_array(value),
        "arrays are leaves, not static values; make the field non-static",
    ),
    (lambda kind, value: kind is types.MethodType and class_bound(value), _encode_function),
    (lambda kind, value: _is_torch(kind, "dtype"), _encode_torch_dtype),
    (
        lambda kind, value: _is_torch(kind, "device"),
        lambda value, depth: f'["dv",{_quote(str(value))}]',
    ),
    (
        lambda kind, value: kind is types.MethodType,
        "a bound method is not stored; store a functools.partial of the function with the "
        "object instead",
    ),
    (lambda kind, value: callable(value), _encode_function),
)


def _is_torch(kind: type, name: str) -> bool:
    return kind.__module__ == "torch" and kind.__qualname__ == name


def dumps(value: Any) -> bytes:
    """``value`` as static data (``MAGIC`` and JSON).

    Raises ``UnencodableError`` (a ``TypeError``) naming where in ``value`` an unstorable part
    is, its type, and what to do."""
    try:
        text = _encode(value, 0)
    except _Refused as refused:
        raise UnencodableError(
            refused.where(), refused.value, refused.reason, refused.advice
        ) from None
    except ValueError as error:  # an int of more digits than Python converts to text
        raise UnencodableError("", value, str(error)) from None
    return MAGIC + text.encode("ascii")


# -- decoding -----------------------------------------------------------------------------------


def loads(
    data: bytes | bytearray | memoryview,
    *,
    allow_import: Iterable[str] = (),
    declared: Any = None,
) -> Any:
    """The value ``dumps`` wrote.

    A function or class comes from a module already imported; ``allow_import`` names modules
    (exactly) that may be imported to find one. It must be a safe reference (``is_safe_reference``)
    or a class ``declared`` (a type annotation) names. Raises ``StaticDataError`` (a
    ``ValueError``) for anything else: bytes of another format, malformed or truncated data,
    nesting deeper than ``MAX_DEPTH``, or a name this process does not have or will not rebuild."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads() takes bytes, got {type_name(data)}.")
    reader = Reader(frozenset(allow_import), declared, tuple(_named_classes(declared, 0)))
    value = decode(parse(data, reader), reader)
    try:
        learn(reader.built)
    except StaticDataError as error:
        raise StaticDataError(f"cannot read static data: {error}") from None
    return value


# -- layouts learnt from artifacts --------------------------------------------------------------

# What one read may name of a class's layouts other than its primary (one node's aux data with the
# pytree values its static fields hold, one object's state in a checkpoint, one ``loads``): so
# many layouts, so many field names in all. A class keeps each layout it learns for as long as it
# lives (about 2 KB, and 0.5 KB a field name), so a read naming more is refused, that read alone
# blamed; it is checked before anything is learnt, so a refused read leaves nothing behind.
# Counted per read, not per process: a quota the process shared was used up by one file that
# passed (256 nodes, one made-up layout each), and every later read naming a layout not learnt
# yet, honest ones too, was refused for the rest of the process and blamed for it. Whether a file
# loads depends on that file alone. The cost: a process keeps the layouts of every artifact it
# accepted, as it keeps those its own instances hold, so its memory grows with what it loads
# (within these bounds per read); a class's table does not forget a layout nothing holds any more.
MAX_LEARNED_LAYOUTS = 256
MAX_LEARNED_NAMES = 65_536


class TooManyLayouts(StaticDataError):
    """A read names more layouts of one class, or field names in all, than ``no_room`` allows: a
    file made to fill memory, however trusted its source (no other loader reads it either)."""


def no_room(cls: type, named: Collection[tuple[str, ...]]) -> str | None:
    """Why one read may not name the layouts ``named`` (field names, each distinct) of ``cls``
    (``None``: it may)."""
    if len(named) > MAX_LEARNED_LAYOUTS:
        limit = f"more than {MAX_LEARNED_LAYOUTS} layouts"
    elif sum(map(len, named)) > MAX_LEARNED_NAMES:
        limit = f"more than {MAX_LEARNED_NAMES} field names in its layouts"
    else:
        return None
    return (
        f"it names {limit} of {cls.__qualname__} in one node or object (one: "
        f"{', '.join(max(named)):.200}), more than one read may teach a class: pytreekit writes "
        f"one layout per set of fields an instance holds, and a class keeps each it learns"
    )


def learn(
    built: list[tuple[object, tuple[str, ...]]],
    layouts: Iterable[tuple[type, tuple[str, ...]]] = (),
) -> None:
    """Check the layouts one read named (``layouts``: class and field names, and those of the
    instances it ``built``) against what one read may name, then mark each instance with its
    layout as the class is declared now (interning it). Beyond: ``TooManyLayouts``, and nothing
    learnt."""
    named: dict[int, tuple[type, set[tuple[str, ...]]]] = {}  # by id: a class's hash is code
    for cls, names in [*layouts, *((type(obj), names) for obj, names in built)]:
        if not _is_primary(own_dict(cls)[markers.SPEC].table, names):
            named.setdefault(id(cls), (cls, set()))[1].add(names)
    for cls, new in named.values():
        why = no_room(cls, new)
        if why is not None:
            raise TooManyLayouts(f"{why}.")
    for obj, names in built:
        table = own_dict(type(obj))[markers.SPEC].table
        table.note(obj, table.for_names(names))


def parse(data: bytes | bytearray | memoryview | str, reader: Reader) -> Any:
    """The JSON tree of static data, read strictly (what ``dumps`` never writes is refused).
    Text (a torch context) is read as the bytes it encodes would be."""
    try:
        text = _text_of(data)
        # A lone surrogate can only come from a \uD800-\uDFFF escape: look for them in the text
        # once, and in the strings only if there is one.
        reader.surrogates = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
        tree, end = _json.raw_decode(text)
        if end != len(text):
            raise _Bad(f"extra data after the value, at character {end}")
        return tree
    except _Bad as bad:
        raise StaticDataError(f"cannot read static data: {bad.reason}.") from None
    except RecursionError:  # each Python words it its own way (3.14: "Stack overflow ...")
        raise StaticDataError(
            f"cannot read static data: it nests deeper than JSON can be read (static data nests "
            f"at most {MAX_DEPTH} levels)."
        ) from None
    except ValueError as error:  # JSONDecodeError, an int too long
        raise StaticDataError(f"cannot read static data: {error!s:.200}.") from None


def _text_of(data: bytes | bytearray | memoryview | str) -> str:
    if isinstance(data, str) and data.startswith(MAGIC_TEXT):
        if not data.isascii():
            raise _Bad("the text is not ASCII, which static data always is")
        return data[len(MAGIC) :]
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads() takes bytes, got {type_name(data)}.")
    raw = bytes(data)
    if not raw.startswith(MAGIC):
        kind = "pickle" if is_pickle(raw) else f"unknown (starting {raw[:8]!r})"
        raise _Bad(f"the format is {kind}, not pytreekit's ({MAGIC!r})")
    return raw[len(MAGIC) :].decode("ascii")


def decode(tree: Any, reader: Reader, depth: int = 0) -> Any:
    """The value a JSON tree from ``parse`` holds (``depth`` levels inside the data)."""
    try:
        return _decode(tree, depth, reader)
    except _Bad as bad:
        where = f" at {bad.where()}" if bad.path else ""
        raise StaticDataError(f"cannot read static data{where}: {bad.reason}.") from None
    except Exception as error:  # RecursionError, MemoryError, a decoder's...
        raise StaticDataError(
            f"cannot read static data: {type(error).__name__}: {error!s:.200}."
        ) from error


def _seen(value: Any, seen: set[int] | None) -> set[int] | None:
    """The ids a walk has looked at, ``value``'s added; ``None`` if it was looked at before (a
    value held twice). Every value looked at is reachable from the first: no id is reused."""
    if seen is None:
        return {id(value)}
    if id(value) in seen:
        return None
    seen.add(id(value))
    return seen


def hashable(value: Any, depth: int = 0, seen: set[int] | None = None) -> bool:
    """Whether ``value``, built from static data, is hashable, without running its ``__hash__``
    (a value held twice looked at once: every value looked at is reachable from the first)."""
    kind = type(value)
    if _atom(kind) or kind is frozenset or depth > MAX_DEPTH:
        return True
    if kind is list or kind is dict:
        return False
    seen = _seen(value, seen)
    if seen is None:
        return True
    if issubclass(kind, tuple):
        return all(hashable(item, depth + 1, seen) for item in _items(value))
    hash_method = lookup(kind, "__hash__")
    if hash_method is None:
        return False
    hashed = None if hash_method is _OBJECT_HASH else _hashed(value, kind, hash_method)
    return hashed is None or all(hashable(item, depth + 1, seen) for item in hashed)


_OBJECT_HASH = vars(object)["__hash__"]
_FIELD_SLOTS = dataclasses.Field.__dict__  # a Field's slots, read without a subclass's code


def _hashed(value: Any, kind: type, hash_method: Any) -> list[Any] | None:
    """The stored values the ``__hash__`` of a dataclass or pytree class hashes, for an instance
    loading built (``None``: another kind of value, whose hash is its class's)."""
    fields = lookup(kind, "__dataclass_fields__")
    if fields is MISSING and markers.SPEC not in own_dict(kind):
        return None
    stored = _stored(value, kind)
    # A pytree class without annotations hashes every field; a __hash__ of the user's own (not
    # dataclasses' nor pytreekit's) may hash any, also a field(compare=False).
    if type(fields) is not dict or not _generated_hash(hash_method):
        return [item for name, item in stored.items() if name != markers.LAYOUT]
    return [
        stored[name]
        for name, field in fields.items()
        if name in stored and issubclass(type(field), dataclasses.Field) and _hashes(field)
    ]


def _generated_hash(method: Any) -> bool:
    """Whether a class's ``__hash__`` is one dataclasses or pytreekit wrote (hashing the fields
    their ``Field``s say)."""
    if type(method) is not types.FunctionType:
        return False
    return method.__dict__.get(markers.OWNER) is not None or written_by_dataclasses(method)


def _stored(value: Any, kind: type) -> dict[str, Any]:
    """What an instance loading built holds in its ``__dict__`` and slots, read by the C
    descriptors that stored it."""
    stored: dict[str, Any] = {}
    instance_dict = lookup(kind, "__dict__")
    if type(instance_dict) is types.GetSetDescriptorType:
        stored.update(instance_dict.__get__(value, kind))
    slots = (item for klass in mro(kind) for item in own_dict(klass).items())
    for name, slot in slots:
        if type(slot) is types.MemberDescriptorType and name not in stored:
            with contextlib.suppress(AttributeError):  # an unset slot
                stored[name] = slot.__get__(value, kind)
    return stored


def _hashes(field: dataclasses.Field[Any]) -> bool:
    hashed = _FIELD_SLOTS["hash"].__get__(field)
    return bool(_FIELD_SLOTS["compare"].__get__(field) if hashed is None else hashed)


def plain_tuple(node: Any, any_items: bool = False) -> tuple[Any, ...] | None:
    """The items of a JSON tree's ``["t", ...]`` of scalars (of anything: ``any_items``), as a
    tuple; ``None`` for any other tree."""
    if type(node) is not list or not node or node[0] != "t":
        return None
    items = node[1:]
    return tuple(items) if any_items or _JSON_SCALARS.issuperset(map(type, items)) else None


def is_pickle(data: bytes) -> bool:
    """Whether ``data`` starts as pickle protocol 2 or later does (what pytreekit wrote before)."""
    return len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5


class Reader:
    """What one load may do: the modules it may import, and the declared type of the field being
    read (``admitted``: the classes it names, loaded there though not safe references)."""

    __slots__ = (
        "admitted",
        "allow_import",
        "built",
        "declared",
        "hash_safe",
        "plain",
        "surrogates",
    )

    def __init__(
        self,
        allow_import: frozenset[str],
        declared: Any = None,
        admitted: tuple[type, ...] = (),
        plain: bool = False,
    ) -> None:
        self.allow_import = allow_import
        self.declared = declared
        self.admitted = admitted
        self.plain = plain
        self.surrogates = False
        # The pytree class instances this load built, with their fields: their layouts are
        # learnt (``learn``) only once the whole load has passed every check.
        self.built: list[tuple[object, tuple[str, ...]]] = []
        # The frozensets this load built (elements checked as keys), by id: ``_hash_safe``.
        self.hash_safe: dict[int, Any] = {}

    def _with(self, declared: Any, admitted: tuple[type, ...], plain: bool) -> Reader:
        if declared is None and not admitted and plain == self.plain and self.declared is None:
            return self
        reader = Reader(self.allow_import, declared, admitted, plain)
        reader.surrogates = self.surrogates
        reader.built = self.built
        reader.hash_safe = self.hash_safe
        return reader

    def for_field(self, cls: type, name: str) -> Reader:
        declared, admitted = declared_types(cls).get(name, _UNDECLARED)
        if declared is not None and self.declared is not None:
            declared, admitted = _substituted(declared, admitted, self.declared, cls)
        return self._with(declared, admitted, self.plain)

    def for_plain(self) -> Reader:
        """For the arguments of a ``functools.partial`` and a codec's data: no reference."""
        return self._with(None, (), True)


_UNDECLARED: tuple[Any, tuple[type, ...]] = (None, ())
# Per class: each annotated field's type, and the classes it names.
_declared = TypeCache()


def declared_types(cls: type) -> dict[str, tuple[Any, tuple[type, ...]]]:
    """The declared type of each annotated field of ``cls`` and the classes it names (a type
    that cannot be evaluated is left out: its field is checked against the safe references only;
    the others still are checked, and the class is asked again next time)."""
    known: dict[str, tuple[Any, tuple[type, ...]]] | None = _declared.get(cls)
    if known is None:
        hints, complete = _type_hints(cls)
        known = {
            name: (hint, tuple({id(k): k for k in _named_classes(hint, 0)}.values()))
            for name, hint in hints.items()
            if typing.get_origin(hint) is not typing.ClassVar
        }
        if complete:  # a name imported later may make the rest evaluable
            _declared.set(cls, known)
    return known


def _type_hints(cls: type) -> tuple[dict[str, Any], bool]:
    """``typing.get_type_hints(cls)``, or where one annotation cannot be evaluated (a name
    imported for type checkers only), every other one evaluated on its own; and whether all were."""
    try:
        return typing.get_type_hints(cls), True
    except Exception:
        pass
    hints: dict[str, Any] = {}
    for klass in reversed(mro(cls)):
        namespace = own_dict(klass)
        module = sys.modules.get(namespace.get("__module__", ""))
        scope = module_dict(module) if module is not None else {}
        for name, annotation in class_annotations(klass).items():
            one = type("_", (), {"__annotations__": {name: annotation}})
            try:
                hints[name] = typing.get_type_hints(one, scope, dict(namespace))[name]
            except Exception:
                hints.pop(name, None)  # a base's evaluable one is not what this class declares
    return hints, False


def _named_classes(hint: Any, depth: int) -> Iterable[type]:
    """The classes a declared type admits as values: not those of a ``Callable``'s signature
    (its parameters and result are no value the field holds), nor ``object`` (which would admit
    every class)."""
    protocol = _callback_origin(_unwrapped(hint, protocols=False))
    if protocol is not None:  # its classes may hold it, as a Callable holds a class
        yield protocol
    hint = _unwrapped(hint)
    if depth > 20 or hint is object or hint is type:
        return
    if is_class(hint) and _origin(hint) is None:
        yield hint
    origin = typing.get_origin(hint)
    if _user_generic(origin):
        yield origin  # Box[int] declares Box as Box does
    if origin is typing.Literal:
        # Literal[Mode.A] names Mode as surely as an annotation Mode does
        yield from (type(arg) for arg in typing.get_args(hint) if isinstance(arg, enum.Enum))
        return
    if origin is collections.abc.Callable:
        return
    for arg in typing.get_args(hint) if not isinstance(hint, list) else hint:
        yield from _named_classes(arg, depth + 1)


def _user_generic(origin: Any) -> bool:
    """Whether a generic alias's ``origin`` is a class of a user's or a library's (``Box`` of
    ``Box[int]``), not a form or container of the standard library's (``type``, ``Callable``,
    ``tuple``, ``collections.abc.Sequence``, ``types.UnionType``...)."""
    if not is_class(origin) or origin is type:
        return False
    module = own_dict(origin).get("__module__")
    return type(module) is str and module.partition(".")[0] not in sys.stdlib_module_names


def _substituted(
    hint: Any, admitted: tuple[type, ...], outer: Any, cls: type
) -> tuple[Any, tuple[type, ...]]:
    """A field's declared type with the arguments ``outer`` gives the generic class that declares
    it substituted for its type variables (``value: T`` of a ``Static[Callable[..., Any]]``
    holds a ``Callable``), and the classes it names; as declared where none is given."""
    arguments = _type_arguments(outer, cls)
    if not arguments:
        return hint, admitted
    try:
        hint = _substitute(hint, arguments, 0)
    except Exception:  # a form that cannot take its arguments: its bound decides, as declared
        return hint, admitted
    return hint, tuple({id(k): k for k in _named_classes(hint, 0)}.values())


def _substitute(hint: Any, arguments: dict[Any, Any], depth: int) -> Any:
    if depth > 20:
        raise RecursionError("a declared type too deep to substitute")
    if type(hint) is typing.TypeVar:
        return arguments.get(hint, hint)
    parameters = getattr(hint, "__parameters__", ()) if not is_class(hint) else ()
    if not parameters:
        return hint
    return hint[tuple(arguments.get(p, p) for p in parameters)]


def _type_arguments(outer: Any, cls: type) -> dict[Any, Any]:
    """What the generic aliases of a class ``cls`` derives from that ``outer`` names give each of
    the class's type variables (``{T: int}`` for ``Box[int]``); several give their union."""
    given: dict[Any, list[Any]] = {}
    for alias in _aliases(outer, mro(cls), 0):
        origin = typing.get_origin(alias)
        parameters = lookup(origin, "__parameters__")
        args = typing.get_args(alias)
        if type(parameters) is not tuple or len(parameters) != len(args):
            continue
        for parameter, arg in zip(parameters, args, strict=True):
            if type(parameter) is typing.TypeVar:
                given.setdefault(parameter, []).append(arg)
    return {
        parameter: args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
        for parameter, args in given.items()
    }


def _aliases(hint: Any, bases: tuple[type, ...], depth: int) -> Iterable[Any]:
    """The generic aliases in a declared type whose origin is one of ``bases``."""
    hint = _unwrapped(hint)
    if depth > 20 or is_class(hint):
        return
    origin = typing.get_origin(hint)
    if _user_generic(origin) and any(origin is base for base in bases):
        yield hint
        return
    if origin is typing.Literal or origin is collections.abc.Callable:
        return
    for arg in typing.get_args(hint):
        yield from _aliases(arg, bases, depth + 1)


def _unwrapped(hint: Any, protocols: bool = True) -> Any:
    """The type a wrapping form declares: ``Final[int]`` and ``NewType("Id", int)`` declare
    ``int``, a ``TypeVar`` its bound or constraints (``Any`` without), a type alias its value."""
    for _ in range(20):
        hint, final = _unwrap_kind(hint, protocols)
        if final:
            return hint
    return Any


def _unwrap_kind(hint: Any, protocols: bool) -> tuple[Any, bool]:
    """One step of ``_unwrapped`` by the kind of object ``hint`` is, and whether it was the last."""
    kind = type(hint)
    if kind is typing.NewType:
        return hint.__supertype__, False
    if kind is typing.TypeVar:
        return _type_var_bound(hint), False
    if is_type_alias(hint):
        return _alias_value(hint, ()), False
    if _derives(kind, type):
        return collections.abc.Callable if protocols and _callback_protocol(hint) else hint, True
    return _unwrap_form(hint, protocols)


def _type_var_bound(var: Any) -> Any:
    if var.__bound__ is not None:
        return var.__bound__
    if var.__constraints__:
        return typing.Union[var.__constraints__]  # noqa: UP007 - a tuple, at run time
    return Any


def _unwrap_form(hint: Any, protocols: bool) -> tuple[Any, bool]:
    """One step of ``_unwrapped`` through a form subscripted: ``Final[...]``, ``Annotated[...]``,
    a generic alias (``Fn[jax.Array]`` of ``type Fn[T] = Callable[[T], T]``), a protocol's."""
    origin = typing.get_origin(hint)
    if origin is typing.Final or origin is typing.Annotated:
        args = typing.get_args(hint)
        return (args[0] if args else Any), False
    if is_type_alias(origin):
        return _alias_value(origin, typing.get_args(hint)), False
    if protocols and is_class(origin) and _callback_protocol(origin):
        return collections.abc.Callable, True
    return hint, True


def _callback_origin(hint: Any) -> type | None:
    """The callback protocol ``hint`` is (``Activation``) or parametrises (``Activation[T]``)."""
    cls = hint if is_class(hint) else typing.get_origin(hint)
    return cls if is_class(cls) and _callback_protocol(cls) else None


def _alias_value(alias: Any, args: tuple[Any, ...]) -> Any:
    """The type a type alias stands for, given ``args`` for its parameters; where they cannot be
    put in, with its parameters as they are (``_unwrapped`` reads a ``TypeVar`` as its bound:
    ``Callable[[T], T]`` is still a ``Callable``)."""
    try:
        value = alias.__value__
    except Exception:  # a name it uses is not defined yet: as an annotation that cannot be read
        return Any
    parameters = getattr(alias, "__type_params__", ())
    if not args or type(parameters) is not tuple or not parameters or is_class(value):
        return value
    try:
        return _put_in(value, parameters, args)
    except Exception:
        return value


def _put_in(value: Any, parameters: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
    """``value`` with ``args`` for its type ``parameters``, where they can be put in."""
    if getattr(value, "__parameters__", None) == parameters:  # typing's own substitution
        return value[args]
    if len(parameters) == len(args) and all(type(p) is typing.TypeVar for p in parameters):
        return _substitute(value, dict(zip(parameters, args, strict=True)), 0)
    return value


# What typing and the classes' machinery put in a Protocol's namespace: not members of it.
_NOT_MEMBERS = frozenset(
    {
        "__init__",
        "__new__",
        "__subclasshook__",
        "__init_subclass__",
        "__class_getitem__",
        "__annotate__",
        "__annotate_func__",
        "__annotations_cache__",
        "_is_protocol",
        "_is_runtime_protocol",
    }
)


def _callback_protocol(cls: type) -> bool:
    """Whether ``cls`` is a ``Protocol`` whose only member is ``__call__`` (typing's way to type
    a callable), read from its classes' ``__dict__``s: ``isinstance`` would ask the value."""
    if own_dict(cls).get("_is_protocol") is not True:
        return False
    bases = protocol_bases()
    members: set[str] = set()
    for klass in mro(cls):
        if klass is object or any(klass is base for base in bases):
            continue
        namespace = own_dict(klass)
        if namespace.get("_is_protocol") is not True:  # a concrete class: not a protocol
            return False
        members.update(name for name, item in namespace.items() if _is_member(name, item))
        try:
            members.update(class_annotations(klass))
        except Exception:  # annotations that cannot be read: members of some kind
            return False
    return members == {"__call__"}


def _is_member(name: str, item: Any) -> bool:
    if name in _NOT_MEMBERS or name.startswith("_abc_"):
        return False
    if name.startswith("__") and name.endswith("__"):  # a method, or the class's own records
        return callable(item) or type(item) in (staticmethod, classmethod, property)
    return True


def type_name_of(hint: Any) -> str:
    """A declared type as the user wrote it."""
    if is_class(hint) and typing.get_origin(hint) is None:
        return str(hint.__qualname__)
    # The user's own declaration (no file's text): whole, up to a length no message needs more of.
    text = repr(hint).replace("typing.", "").replace("collections.abc.", "")
    return text if len(text) <= 300 else f"{text[:297]}..."


def admits_value(hint: Any, value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (built from static data) is of the declared type ``hint``, decided
    without running any of the value's code; a type this cannot tell admits every value."""
    if _derived_from_protocol(hint, value):
        return True
    hint = _unwrapped(hint)
    if hint is Any or hint is object:
        return True
    if depth > 20:  # a recursive alias unfolded this far: as a type this cannot read
        return _admits_unfolded(value, 0)
    if hint is None or hint is type(None):
        return value is None
    origin = _origin(hint)
    form = _entry(_FORMS, origin)
    if form is not None:
        return form(typing.get_args(hint), value, depth + 1)
    if origin is None:
        return _plain_admits(hint, value)
    return _generic_admits(origin, typing.get_args(hint), value, depth + 1)


def _derived_from_protocol(hint: Any, value: Any) -> bool:
    """Whether ``value`` is of a class the user derived from the callback protocol ``hint``."""
    protocol = _callback_origin(hint)
    return protocol is not None and _derives(type(value), protocol)


def _plain_admits(hint: Any, value: Any) -> bool:
    """A class, or what is no form: a string that could not be evaluated, a ParamSpec..."""
    return _instance_of(value, hint) if is_class(hint) else _unread_admits(value)


def _unread_admits(value: Any) -> bool:
    """What a declared type this cannot read admits: any value but a callable object built from
    data (a codec's, a pytree instance), which the type could declare as a ``Callable``."""
    return is_class(value) or not callable(value) or _safe_callable(value)


def _admits_unfolded(value: Any, depth: int) -> bool:
    """What a declared type admits past the depth its check unfolds: any value holding no
    callable object built from data, however deep in its containers."""
    kind = type(value)
    parts = None if kind is functools.partial else _container_parts(value, kind)
    if parts is None and issubclass(kind, tuple):
        parts = _items(value)  # a NamedTuple's items
    if parts is None or depth > MAX_DEPTH:
        return _unread_admits(value)
    return all(_admits_unfolded(part, depth + 1) for part in parts)


def _origin(hint: Any) -> Any:
    if hint is collections.abc.Callable:
        return hint
    if _derives(type(hint), type):  # a class: typing's isinstance would read its __class__
        return None
    return typing.get_origin(hint)


def _generic_admits(origin: Any, args: tuple[Any, ...], value: Any, depth: int) -> bool:
    if not is_class(origin):
        return _unread_admits(value)
    if not _instance_of(value, origin):
        return False
    items = _entry(_CONTAINERS, origin)
    return not args or items is None or items(args, value, depth)


def _entry(table: tuple[tuple[Any, Check], ...], origin: Any) -> Check | None:
    """``origin``'s check in ``table``, found by identity (a class's ``__eq__`` is not run)."""
    return next((check for kind, check in table if kind is origin), None)


def _all_of(hint: Any, items: Iterable[Any], depth: int) -> bool:
    return all(admits_value(hint, item, depth) for item in items)


def _type_of(args: tuple[Any, ...], value: Any, depth: int) -> bool:
    return is_class(value) and _class_admits(args[0] if args else object, value, depth)


def _class_admits(target: Any, value: type, depth: int) -> bool:
    """Whether the class ``value`` is one ``type[target]`` admits: ``type[Box[int]]`` holds a
    ``Box``, ``type[A | B]`` either; a target this cannot tell (a TypeVar) admits every class."""
    target = _unwrapped(target, protocols=False)  # type[Activation]: a class deriving from it
    if depth > 20 or target is Any or target is object:
        return True
    origin = _origin(target)
    if origin is typing.Union or origin is types.UnionType:
        return any(_class_admits(arg, value, depth + 1) for arg in typing.get_args(target))
    target = target if origin is None else origin
    return not is_class(target) or _derives(value, target)


def _derives(kind: type, cls: type) -> bool:
    """``issubclass`` by identity along the MRO: ``in`` would run a metaclass's ``__eq__``."""
    return any(klass is cls for klass in mro(kind))


def _tuple_of(args: tuple[Any, ...], value: Any, depth: int) -> bool:
    items = tuple(_items(value))  # a NamedTuple's own __iter__ and __len__ are its code
    if len(args) == 2 and args[1] is Ellipsis:
        return _all_of(args[0], items, depth)
    return len(args) == len(items) and all(
        admits_value(arg, item, depth) for arg, item in zip(args, items, strict=True)
    )


def _dict_of(args: tuple[Any, ...], value: Any, depth: int) -> bool:
    return len(args) != 2 or (
        _all_of(args[0], value, depth) and _all_of(args[1], value.values(), depth)
    )


Check = Callable[[tuple[Any, ...], Any, int], bool]
# Forms decided before the value's class is asked, then the containers whose items are checked.
_FORMS: tuple[tuple[Any, Check], ...] = (
    (typing.Union, lambda args, value, depth: any(admits_value(a, value, depth) for a in args)),
    (types.UnionType, lambda args, value, depth: any(admits_value(a, value, depth) for a in args)),
    (
        typing.Literal,
        # Equal as plain data (an enum member: the very member), never by a class's __eq__.
        lambda args, value, depth: any(
            value is a or (type(value) is type(a) and _atom(type(a)) and value == a) for a in args
        ),
    ),
    (type, _type_of),
    (
        collections.abc.Callable,
        lambda args, value, depth: (
            _safe_callable(value) and _inputs_fit(args, value) and _class_called(args, value)
        ),
    ),
)


def _class_called(args: tuple[Any, ...], value: Any) -> bool:
    """Whether the class a ``Callable`` field would call (``value``, or a partial's function), if
    any, is one it may: a safe reference, or a class its result names (``Callable[..., Warmup]``).
    A class another member of a union names (``Warmup | Callable[[int], float]``), or a callback
    protocol (``Activation``), declares an instance of it: read as the function, the artifact
    would choose which constructor (the class's, or any pytree subclass's) the model calls."""
    func = _called_class(value)
    if func is None or is_safe_reference(func):
        return True
    return len(args) == 2 and _result_names(args[1], func, 0)


def _called_class(value: Any) -> type | None:
    """The class calling ``value`` (a partial: its function) calls, if it is one."""
    kind = type(value)
    if kind is functools.partial or kind is LoadedPartial:
        value = _innermost(value, (), {})[0]
    return value if is_class(value) else None


def _result_names(result: Any, cls: type, depth: int) -> bool:
    """Whether a ``Callable``'s declared ``result`` names ``cls``: a class it derives from (``Any``,
    ``object`` and a form this cannot read name none)."""
    result = _unwrapped(result, protocols=False)
    origin = _origin(result)
    if depth < 20 and (origin is typing.Union or origin is types.UnionType):
        return any(_result_names(arg, cls, depth + 1) for arg in typing.get_args(result))
    target = result if origin is None else origin
    named = is_class(target) and target is not object and target is not type
    return named and _derives(cls, target)


def _inputs_fit(args: tuple[Any, ...], value: Any) -> bool:
    """Whether a NumPy ufunc in a field declared ``Callable[[...], R]`` takes as many inputs as
    the arguments declared: NumPy reads the arguments after its inputs as ``out`` arrays and
    writes into them (``numpy:negative`` edited in where the model calls ``op(a, b)`` writes
    ``-a`` into ``b``)."""
    declared = args[0] if args else None
    if type(declared) is not list:
        return True
    func, bound, _ = _innermost(value, (), {})
    return type(func) is not np.ufunc or func.nin == len(bound) + len(declared)


def _abstract_of(args: tuple[Any, ...], value: Any, depth: int) -> bool:
    """The items of a value declared by an abstract container (``Sequence[int]``): those of the
    built-in containers loading builds, read by their C iterators; a class of the user's, which
    is such a container by its MRO, is not iterated (its ``__iter__`` is its code)."""
    kind = type(value)
    if kind is dict:
        return _dict_of(args, value, depth) if len(args) == 2 else _all_of(args[0], value, depth)
    # By the classes alone: isinstance would read a value's __class__ (its __getattribute__),
    # ``in`` would compare classes (a metaclass's __eq__).
    if issubclass(kind, (tuple, frozenset)):
        return _all_of(args[0], _items(value), depth)
    built_in = kind is list or kind is str or kind is bytes
    return not built_in or _all_of(args[0], value, depth)


_ABSTRACT = (
    collections.abc.Iterable,
    collections.abc.Container,
    collections.abc.Reversible,
    collections.abc.Collection,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Mapping,
    collections.abc.MutableMapping,
)
_CONTAINERS: tuple[tuple[type, Check], ...] = (
    (tuple, _tuple_of),
    (list, lambda args, value, depth: _all_of(args[0], value, depth)),
    (frozenset, lambda args, value, depth: _all_of(args[0], value, depth)),
    (set, lambda args, value, depth: _all_of(args[0], value, depth)),
    (dict, _dict_of),
    *((abstract, _abstract_of) for abstract in _ABSTRACT),
)


# isinstance against an abstract class walks every subclass of it, running the
# __subclasshook__ of each one a user wrote: the standard library's abstract classes are asked
# by tables instead. The built-in kinds registered with one (its bases follow by its MRO; a
# subclass of the kind, by the kind's MRO), then the methods each one-method class's own hook
# looks for along the MRO (``None`` there: not one). A user's abstract class: its MRO alone.
_REGISTERED: tuple[tuple[type, type], ...] = (
    (int, numbers.Integral),
    (float, numbers.Real),
    (complex, numbers.Complex),
    (str, collections.abc.Sequence),
    (bytes, collections.abc.Sequence),
    (tuple, collections.abc.Sequence),
    (list, collections.abc.MutableSequence),
    (dict, collections.abc.MutableMapping),
    (frozenset, collections.abc.Set),
    (set, collections.abc.MutableSet),
)
_HOOKED: tuple[tuple[type, tuple[str, ...]], ...] = (
    (collections.abc.Hashable, ("__hash__",)),
    (collections.abc.Iterable, ("__iter__",)),
    (collections.abc.Iterator, ("__iter__", "__next__")),
    (collections.abc.Reversible, ("__reversed__", "__iter__")),
    (collections.abc.Sized, ("__len__",)),
    (collections.abc.Container, ("__contains__",)),
    (collections.abc.Collection, ("__len__", "__iter__", "__contains__")),
    *(((ABSTRACT_BUFFER, ("__buffer__",)),) if ABSTRACT_BUFFER is not None else ()),
)


def _instance_of(value: Any, cls: type) -> bool:
    """``isinstance`` by the class's MRO and the tables above, without PEP 484's numeric tower
    (an int where a float is declared) and with a bool no number (``_NUMBERS``)."""
    kind = type(value)
    if _derives(kind, bool) and any(cls is number for number in _NUMBERS):
        return False
    return _derives(kind, cls) or _virtual(kind, cls)


def _virtual(kind: type, cls: type) -> bool:
    """Whether ``kind`` is a standard abstract class's by the tables above."""
    registered = (abstract for base in mro(kind) for k, abstract in _REGISTERED if base is k)
    if any(_derives(abstract, cls) for abstract in registered):
        return True
    methods = next((names for abstract, names in _HOOKED if abstract is cls), ())
    return bool(methods) and all(_defines(kind, name) for name in methods)


def _defines(kind: type, name: str) -> bool:
    found = lookup(kind, name)
    return found is not MISSING and found is not None


def _refuse_constant(name: str) -> Any:
    raise _Bad(f"{name} is not JSON (static data writes it as ['f', {name.lower()!r}])")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Bad("an object names a key twice")
    return out


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
Decoder = Callable[[list[Any], int, Reader], Any]
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _finite(text: str) -> float:
    number = float(text)
    if number - number != 0:
        raise _Bad(f"{text:.40} is too large for a float (static data writes inf as ['f', 'inf'])")
    return number


_json = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant, parse_float=_finite
)


def _scalar(node: Any, reader: Reader) -> Any:
    kind = type(node)
    if kind is str and reader.surrogates and _LONE_SURROGATE.search(node):
        raise _Bad("a string holds a lone surrogate (static data writes it as ['u', ...])")
    return node


def _decode(node: Any, depth: int, reader: Reader) -> Any:
    kind = type(node)
    if kind in _JSON_SCALARS:
        return _scalar(node, reader) if kind is str and reader.surrogates else node
    if depth >= MAX_DEPTH:
        raise _Bad(f"values nest deeper than {MAX_DEPTH} levels")
    depth += 1
    if kind is dict:
        return _decode_object(node, depth, reader)
    tag = node[0] if node else None
    if tag == "t":  # the commonest, inline; names and flags are all scalars, checked in C
        items = node[1:]
        if _JSON_SCALARS.issuperset(map(type, items)) and not reader.surrogates:
            return tuple(items)
        return tuple(_decode_items(items, depth, reader))
    return _DECODERS[_checked_tag(node, tag, reader)](node, depth, reader)


def _checked_tag(node: list[Any], tag: Any, reader: Reader) -> str:
    """``tag``, once ``TAGS`` says the array holds what it takes, where it stands."""
    if type(tag) is not str:
        raise _Bad("an array must start with a tag")
    spec = TAGS.get(tag)
    if spec is None:
        raise _Bad(f"unknown tag {node[0]!r:.20}")
    if spec.parts is not None and len(node) != spec.parts + 1:
        raise _Bad(f"{tag!r} takes {spec.parts} parts, got {len(node) - 1}")
    if reader.plain and not spec.plain:
        raise _Bad(
            "only plain data may stand here (the arguments of a functools.partial, what a "
            "registered codec decodes): numbers, strings, bytes, None, dtypes and containers of "
            f"them, not {spec.holds}"
        )
    return tag


def _decode_object(node: dict[str, Any], depth: int, reader: Reader) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in node.items():
        try:
            out[_scalar(key, reader)] = _decode(item, depth, reader)
        except _Bad as bad:
            raise bad.at(f"[{key!r:.40}]") from None
    return out


def _decode_items(items: list[Any], depth: int, reader: Reader) -> list[Any]:
    out: list[Any] = []
    scalars = () if reader.surrogates else _JSON_SCALARS  # strings checked one by one then
    try:
        for item in items:
            out.append(item if type(item) in scalars else _decode(item, depth, reader))
    except _Bad as bad:
        raise bad.at(f"[{len(out)}]") from None
    return out


# Equal hashes a dict or frozenset rebuilt from data may hold at most: ints, floats and tuples hash
# the same in every process, so an artifact could hold thousands of colliding keys, each insertion
# comparing with all before it.
_MAX_COLLISIONS = 8


def _hashed_keys(keys: list[Any], what: str, reader: Reader) -> None:
    counts: dict[int, int] = {}
    for key in keys:
        if not _hash_safe(key, reader.hash_safe):
            raise _Bad(_unsafe_key(key))
        code = hash(key)
        count = counts[code] = counts.get(code, 0) + 1
        if count > _MAX_COLLISIONS:
            raise _Bad(f"more than {_MAX_COLLISIONS} {what} share one hash value")


def _decode_frozenset(node: list[Any], depth: int, reader: Reader) -> Any:
    items = _decode_items(node[1:], depth, reader)
    _hashed_keys(items, "elements of a frozenset", reader)
    value = frozenset(items)
    if len(value) != len(items):
        raise _Bad("a frozenset holds an element twice")
    reader.hash_safe[id(value)] = value  # kept alive with its id for the load
    return value


def _decode_dict(node: list[Any], depth: int, reader: Reader) -> Any:
    if len(node) % 2 != 1:
        raise _Bad("'d' takes keys and values in pairs")
    items = _decode_items(node[1:], depth, reader)
    keys = items[::2]
    _hashed_keys(keys, "keys of a dict", reader)
    value = dict(zip(keys, items[1::2], strict=True))
    if len(value) != len(keys):
        raise _Bad("a dict names a key twice")
    return value


def _text_part(node: list[Any], pattern: re.Pattern[str], refusal: str) -> str:
    """The text ``node`` holds, if ``pattern`` matches it (``refusal`` formats it otherwise)."""
    text = node[1]
    if type(text) is not str or not pattern.match(text):
        raise _Bad(refusal.format(text))
    return text


_SPECIAL_FLOATS = {"nan": LoadedNaN("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _decode_float(node: list[Any], depth: int, reader: Reader) -> Any:
    number = _SPECIAL_FLOATS.get(node[1]) if type(node[1]) is str else None
    if number is None:
        raise _Bad("'f' takes 'nan', 'inf' or '-inf'")
    return number


def _decode_complex(node: list[Any], depth: int, reader: Reader) -> Any:
    real, imag = _decode_items(node[1:], depth, reader)
    if not (isinstance(real, float) and isinstance(imag, float)):
        raise _Bad("'c' takes two floats")
    return complex(real, imag)


_HEX = re.compile(r"-?[0-9a-f]+\Z")
_ANY_TEXT = re.compile("")


def _decode_text(node: list[Any], depth: int, reader: Reader) -> Any:
    points = node[1]
    if type(points) is not list or not all(
        type(p) is int and 0 <= p <= sys.maxunicode for p in points
    ):
        raise _Bad("'u' takes a list of code points")
    return "".join(map(chr, points))


def _torch() -> dict[str, Any]:
    torch = sys.modules.get("torch")
    if torch is None or not issubclass(type(torch), types.ModuleType):
        raise _Bad("it holds a torch dtype or device, and torch is not imported: import it first")
    return module_dict(torch)


def _decode_torch_dtype(node: list[Any], depth: int, reader: Reader) -> Any:
    namespace = _torch()
    found = namespace.get(node[1]) if type(node[1]) is str else None
    if found is None or type(found) is not type(namespace["float32"]):
        raise _Bad(f"torch has no dtype {node[1]!r:.40}")
    return found


_DEVICE = re.compile(r"[a-z_]{1,20}(:[0-9]{1,4})?\Z")


def _decode_torch_device(node: list[Any], depth: int, reader: Reader) -> Any:
    name = _text_part(node, _DEVICE, "{!r:.40} is not a torch device")
    try:
        return _torch()["device"](name)  # torch's C parser of the device's name
    except RuntimeError as error:
        raise _Bad(f"{name!r:.40} is not a torch device: {error!s:.80}") from None


# name -> (object, module, namespace, key) of the references resolved so far (only ever objects
# that exist), checked again at each use: the module still imported, the name still the object's.
# Bounded: an artifact may name many objects once each.
_resolved: dict[str, tuple[Any, str, Any, str]] = {}
_MAX_RESOLVED = 4096


def _resolve(name: Any, reader: Reader) -> Any:
    if type(name) is not str:
        raise _Bad("a reference is a 'module:qualname' string")
    known = _resolved.get(name)
    if (
        known is not None
        and known[1] in sys.modules
        and known[2].get(known[3], MISSING) is known[0]
    ):
        found = known[0]
    else:
        found = _find(name, reader)
    if is_safe_reference(found) or (is_class(found) and _admits(reader.admitted, found)):
        return found
    what = "class" if is_class(found) else "function"
    raise _Bad(
        f"it names the {what} {name!r}, which is not on the list of references an artifact may "
        f"name (loading it would let the artifact decide what the model calls). "
        + allowing_advice(name)
    )


def _find(name: str, reader: Reader) -> Any:
    module, colon, qualname = name.partition(":")
    if not (colon and _dotted(module) and _dotted(qualname)):
        raise _Bad(f"{name!r:.80} is not a 'module:qualname' reference")
    if module not in sys.modules:
        if module not in reader.allow_import:
            raise _Bad(
                f"{name!r} is in module {module!r}, which is not imported: import it before "
                f"loading (loading never imports a module an artifact names)"
            )
        importlib.import_module(module)
    found, namespace, key = find_in(module, qualname)
    if found is MISSING:
        raise _Bad(f"module {module!r} has no {qualname!r} (looked up without __getattr__)")
    if namespace.get(key) is found and len(_resolved) < _MAX_RESOLVED:
        _resolved[name] = (found, module, namespace, key)
    return found


def _admits(admitted: tuple[type, ...], cls: type) -> bool:
    """Whether ``cls`` is one of ``admitted`` or a pytree class of this process derived from one."""
    # By identity: ``in`` would call the __eq__ of the metaclass of whatever class the data names.
    if any(cls is klass for klass in admitted):
        return True
    return markers.SPEC in own_dict(cls) and any(
        base is klass for base in mro(cls) for klass in admitted
    )


# What ``unadmitted`` finds in a value nested deeper than static data may be: pytreekit writes no
# such value, and nothing below it is looked at.
TOO_DEEP = object()


class Hooked(NamedTuple):
    """What ``unadmitted`` finds in a tensor holding hooks: the C attribute holding them (autograd
    calls them; ``torch.save`` never writes one, so a file holding one was written by hand)."""

    attribute: str


_CALLABLES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def unadmitted(
    value: Any,
    admitted: tuple[type, ...],
    depth: int = 0,
    *,
    leaf: bool = False,
    seen: set[int] | None = None,
) -> Any:
    """The first class, function or object in ``value`` (a value another loader built: torch's
    weights-only unpickler) that static data could not hold there (``MISSING``: none): a class that
    is no safe reference and none of ``admitted`` (the classes the field's declared type names), a
    function that is no safe reference, an object of such a class, ``TOO_DEEP``. An object of an
    admitted class is looked into (its items, or its attributes with the classes its own fields
    declare); a pytree instance is not: its own ``__setstate__`` checked it. With ``leaf`` (a
    child's value), every object is looked into, and only classes and functions are found."""
    kind = type(value)
    if _atom(kind):
        return MISSING
    if kind is Hooked:
        return value
    if depth > MAX_DEPTH:
        return TOO_DEEP
    if is_class(value):
        return _unadmitted_class(value, admitted)
    seen = _seen(value, seen)
    if seen is None:  # held twice (a tuple of the same tuple): looked at once
        return MISSING
    parts = _container_parts(value, kind)
    if parts is None:
        parts, admitted = _object_parts(value, kind, admitted, leaf)
    if parts is None:
        return value
    return next(
        (
            found
            for part in parts
            if (found := unadmitted(part, admitted, depth + 1, leaf=leaf, seen=seen)) is not MISSING
        ),
        MISSING,
    )


def _unadmitted_class(cls: type, admitted: tuple[type, ...]) -> Any:
    return MISSING if is_safe_reference(cls) or _admits(admitted, cls) else cls


def _container_parts(value: Any, kind: type) -> Iterable[Any] | None:
    """What a container static data builds holds (a dict: keys and values), else ``None``."""
    if kind is list or kind is set or kind is frozenset or kind is tuple:
        return value  # type: ignore[no-any-return]
    if kind is dict:
        return (part for entry in value.items() for part in entry)
    if kind is functools.partial:
        return (value.func, *value.args, *value.keywords.values())
    return None


def _object_parts(
    value: Any, kind: type, admitted: tuple[type, ...], leaf: bool
) -> tuple[Iterable[Any] | None, tuple[type, ...]]:
    """What to look into in an object, with the classes admitted there, or ``None`` where the
    object itself is what static data could not hold: a function, an object of a class it would
    not name there (a child's value: a function only)."""
    if is_safe_reference(value) or _value_kind(kind) or markers.SPEC in own_dict(kind):
        return (), admitted
    if not (is_safe_reference(kind) or _admits(admitted, kind)):
        # A child's value may be any object (a tensor, an array): only what it holds is asked.
        return (None if not leaf or issubclass(kind, _CALLABLES) else _attributes(value, kind)), (
            admitted
        )
    own = tuple(k for _, named in declared_types(kind).values() for k in named)
    return _attributes(value, kind), admitted + own


def _attributes(value: Any, kind: type) -> Iterable[Any]:
    """What an object holds, read by C code only: a tuple's or a dict's items (a NamedTuple, an
    ``OrderedDict``), a list's or a set's, else the values in its ``__dict__`` and its slots."""
    held: Iterable[Any] = ()
    if issubclass(kind, tuple | frozenset):
        held = _items(value)
    elif issubclass(kind, dict):
        held = [part for entry in dict.items(value) for part in entry]
    elif issubclass(kind, list):
        held = list.__iter__(value)
    elif issubclass(kind, set):
        held = set.__iter__(value)
    # A subclass's instance holds attributes too (pickle's BUILD sets an OrderedDict's).
    return itertools.chain(held, _instance_values(value, kind))


def _instance_values(value: Any, kind: type) -> list[Any]:
    """The values in an object's ``__dict__`` and its slots, read by C code only."""
    readers = _value_readers.get(kind)
    if readers is None:
        instance_dict = lookup(kind, "__dict__")
        readers = (
            instance_dict if type(instance_dict) is types.GetSetDescriptorType else None,
            tuple(
                slot
                for klass in mro(kind)
                for slot in own_dict(klass).values()
                if type(slot) is types.MemberDescriptorType
            ),
            _hook_attributes(kind),
        )
        _value_readers.set(kind, readers)
    instance_dict, slots, hooks = readers
    parts: list[Any] = []
    if instance_dict is not None:
        parts.extend(dict.values(instance_dict.__get__(value, kind)))
    for name, hook in hooks:  # a tensor's hooks (torch's C attributes): autograd calls them
        held = hook.__get__(value, kind)
        parts.append(held if _no_hooks(held) else Hooked(name))
    for slot in slots:
        with contextlib.suppress(AttributeError):
            parts.append(slot.__get__(value, kind))
    return parts


# Per class: its ``__dict__`` descriptor (None: it has none), its slots' members, and the C
# descriptors of a tensor's hooks by name.
_value_readers = TypeCache()


def _hook_attributes(kind: type) -> tuple[tuple[str, types.GetSetDescriptorType], ...]:
    """The C attributes of ``kind`` holding hooks, by name: torch's ``_backward_hooks`` and
    ``_post_accumulate_grad_hooks``, and any C attribute named so a later torch adds."""
    return tuple(
        (name, hook)
        for klass in mro(kind)
        for name, hook in own_dict(klass).items()
        if type(hook) is types.GetSetDescriptorType and name.endswith("_hooks")
    )


def _no_hooks(held: Any) -> bool:
    """Whether a hook attribute's value holds no hook: unset, or the empty dict torch writes."""
    return held is None or (
        type(held) in (dict, collections.OrderedDict) and not dict.__len__(held)
    )


def _value_kind(kind: type) -> bool:
    """Whether static data stores a value of ``kind`` without naming its class (a dtype)."""
    return _derives(kind, np.dtype) or _is_torch(kind, "dtype") or _is_torch(kind, "device")


def _dotted(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _resolve_class(name: Any, reader: Reader) -> type:
    found = _resolve(name, reader)
    if not is_class(found):
        raise _Bad(f"{name!r:.80} is not a class")
    cls: type = found
    return cls


def _decode_function(node: list[Any], depth: int, reader: Reader) -> Any:
    found = _resolve(node[1], reader)
    if not callable(found) or issubclass(type(found), (type, types.ModuleType)):
        raise _Bad(f"{node[1]!r:.80} is not a function")
    return found


def _decode_member(node: list[Any], depth: int, reader: Reader) -> Any:
    cls = _resolve_class(node[1], reader)
    if not issubclass(cls, enum.Enum):
        raise _Bad(f"{node[1]!r:.80} is not an enum")
    _codec_bypass(cls, "e")
    members = enum_members(cls)
    member = MISSING
    if members is not None and type(node[2]) is str:
        member = members.get(node[2], MISSING)
    if type(member) is not cls:
        raise _Bad(f"{cls.__qualname__} has no member {node[2]!r:.40}")
    return member


def _decode_namedtuple(node: list[Any], depth: int, reader: Reader) -> Any:
    if len(node) < 2:
        raise _Bad("'n' takes a class and the items")
    cls = _resolve_class(node[1], reader)
    names = lookup(cls, "_fields")
    if not issubclass(cls, tuple) or type(names) is not tuple:
        raise _Bad(f"{node[1]!r:.80} is not a NamedTuple")
    _codec_bypass(cls, "n")
    if (why := _finalised(cls)) is not None:
        raise _Bad(why)
    if len(names) != len(node) - 2:
        raise _Bad(f"{cls.__qualname__} has {len(names)} fields, the data {len(node) - 2}")
    items = []
    for name, item in zip(names, node[2:], strict=True):
        try:
            items.append(_decode_field(cls, name, item, depth, reader))
        except _Bad as bad:
            raise bad.at(f".{name}") from None
    return tuple.__new__(cls, items)


def _decode_field(cls: type, name: str, node: Any, depth: int, reader: Reader) -> Any:
    """A field's value, read and checked against the field's declared type."""
    field_reader = reader.for_field(cls, name)
    value = _decode(node, depth, field_reader)
    if field_reader.declared is not None and not admits_value(field_reader.declared, value):
        raise _Bad(
            f"{cls.__qualname__}.{name} is declared {type_name_of(field_reader.declared)}, and "
            f"the artifact holds a {type_name(value)} there"
            f"{callable_advice(field_reader.declared, value, loading=True)}"
        )
    return value


def _fields_of(node: list[Any], depth: int, reader: Reader) -> tuple[type, dict[str, Any]]:
    cls = _resolve_class(node[1], reader)
    if type(node[2]) is not dict:
        raise _Bad(f"{node[0]!r} takes its fields as an object")
    why = _rebuildable(cls)
    if why is not None:
        raise _Bad(why)
    state: dict[str, Any] = {}
    for name, item in node[2].items():
        try:
            state[name] = (
                _decode(item, depth, reader)
                if name == markers.FIELDS
                else _decode_field(cls, name, item, depth, reader)
            )
        except _Bad as bad:
            raise bad.at("" if name == markers.FIELDS else f".{name:.40}") from None
    return cls, state


_SLOT = types.MemberDescriptorType


def _check_state_names(cls: type, names: Iterable[Any], allowed_names: Any) -> None:
    for name in names:
        if type(name) is not str:  # no repr: a decoded object's repr is its class's code
            raise _Bad(f"a {type_name(name)} is not a field name")
        if not name.isidentifier() or name.startswith("__"):
            raise _Bad(f"{name!r:.40} is not a field name")
        if allowed_names is not None and name not in allowed_names:
            raise _Bad(f"{cls.__qualname__} has no field {name!r}")
        why = _store_check(cls, name) or (_hides(cls, name) if allowed_names is None else None)
        if why is not None:
            raise _Bad(why)


def _hides(cls: type, name: str) -> str | None:
    """Why a stored ``name`` would hide what a class without declared fields holds under it (a
    method the instance's code calls)."""
    found = lookup(cls, name)
    if found is MISSING or type(found) is _SLOT:
        return None
    spec = own_dict(cls).get(markers.SPEC)
    if spec is not None and overridable(spec.table, name):
        return None
    return (
        f"it names the field {name!r} of {cls.__qualname__}, which the class holds already as a "
        f"{type_name(found)}; a stored value would hide it"
    )


def overridable(table: Any, name: str) -> bool:
    """Whether ``name`` is a class default an instance may hold a value of its own for: the
    class binds it to a value that is no descriptor, no slot and not callable (``scale = 1.0``,
    which ``self.scale = ...`` overrides). A callable one is what the class's code may call."""
    return name in table.current_shadows().values and not callable(lookup(table.cls, name))


def _dataclass_fields(cls: type) -> dict[str, dataclasses.Field[Any]] | None:
    """The fields of a dataclass (not its InitVars or ClassVars), by name; ``None`` for other
    classes."""
    found = lookup(cls, "__dataclass_fields__")
    if found is MISSING:
        return None
    if type(found) is not dict:
        raise _Bad(f"{cls.__qualname__}.__dataclass_fields__ is not a dict")
    return {
        name: field
        for name, field in found.items()
        if issubclass(type(field), dataclasses.Field) and is_field(field)
    }


def _dataclass_names(cls: type) -> frozenset[str] | None:
    fields = _dataclass_fields(cls)
    return None if fields is None else frozenset(fields)


def _always_held(cls: type, name: str, field: dataclasses.Field[Any]) -> bool:
    """Whether every instance holds ``field``: ``__init__`` takes it, or it has no plain default
    the class holds (a default factory makes it; else ``__post_init__`` sets it). Only an
    ``init=False`` field with a plain default may be absent: reading it gives the class's."""
    if _FIELD_SLOTS["init"].__get__(field):
        return True
    default = _FIELD_SLOTS["default"].__get__(field)
    return default is dataclasses.MISSING or lookup(cls, name) is not default


def _decode_dataclass(node: list[Any], depth: int, reader: Reader) -> Any:
    cls, state = _fields_of(node, depth, reader)
    fields = _dataclass_fields(cls)
    if fields is None or not dataclass_frozen(cls):
        raise _Bad(f"{cls.__qualname__} is not a frozen dataclass")
    _codec_bypass(cls, "dc")
    _check_state_names(cls, state, fields)
    missing = [n for n, f in fields.items() if n not in state and _always_held(cls, n, f)]
    if missing:
        raise _Bad(f"{cls.__qualname__} has the field {missing[0]!r}, which the data does not give")
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


def _decode_pytree(node: list[Any], depth: int, reader: Reader) -> Any:
    cls, state = _fields_of(node, depth, reader)
    setstate = lookup(cls, "__setstate__")
    if markers.SPEC not in own_dict(cls) or not _ours(setstate):
        raise _Bad(f"{cls.__qualname__} is not a pytree class that pytreekit rebuilds")
    _codec_bypass(cls, "p")
    names = _check_layout(cls, state)
    table = own_dict(cls)[markers.SPEC].table
    refusal = table.refusal(names)  # the field rule, as for a layout at the top
    if refusal is not None:
        raise _Bad(no_field(cls, *refusal))
    why = None if _is_primary(table, names) else no_room(cls, (names,))
    if why is not None:
        raise _Bad(why)
    obj: Any = object.__new__(cls)
    # The fields in the layout's order; the layout itself is the class's as declared now, noted
    # once the whole load has passed (``learn``): the data's static flags change nothing.
    setstate(obj, {name: state[name] for name in names})
    reader.built.append((obj, names))
    return obj


def no_field(cls: type, name: str, reason: str) -> str:
    """The refusal of a layout naming ``name``, which the field rule refuses for ``reason``."""
    reason = reason.removeprefix(f"{cls.__qualname__}: ")
    return (
        f"it names the field {name!r:.60} of {cls.__qualname__}, which no instance of the class "
        f"can hold: {reason}"
    )


def _is_primary(table: Any, names: tuple[str, ...]) -> bool:
    """Whether ``names`` are the fields of the class's primary layout: nothing to learn."""
    primary = table.primary
    return primary is not None and primary.names == names


def _check_layout(cls: type, state: dict[str, Any]) -> tuple[str, ...]:
    """That a pytree class's state holds ``(names, static flags)`` and values of those fields:
    the names."""
    layout: Any = state.get(markers.FIELDS)
    if _is_layout(layout):  # the names themselves first: a name that is none says more
        _check_state_names(cls, layout[0], _dataclass_names(cls))
    why = state_refusal(state)
    if why is not None:
        raise _Bad(f"the state of {cls.__qualname__} {why}")
    names: tuple[str, ...] = layout[0]
    declared = own_dict(cls)[markers.SPEC].table.declared_for(names)[0]
    if declared != names:  # an annotated class: the fields it declares, in their order
        raise _Bad(f"{cls.__qualname__} has the fields {declared}, and the data names {names}")
    return names


def state_refusal(items: dict[Any, Any], may_be_unset: frozenset[str] = frozenset()) -> str | None:
    """Why a pytree class's state (as ``pytree_getstate`` writes it: the values by name, and the
    layout's names and static flags under ``markers.FIELDS``) is not one pytreekit writes, as a
    clause after "the state": its layout's names strings, each once, each with a value but those
    in ``may_be_unset`` (``init=False`` fields not set yet), no value under another name."""
    layout: Any = items.get(markers.FIELDS)
    why = _layout_refusal(layout)
    if why is not None:
        return why
    names = layout[0]
    known = frozenset(names)  # a tuple's `in` would make the check quadratic in the state's size
    extra = next((k for k in items if k != markers.FIELDS and k not in known), MISSING)
    if extra is not MISSING:
        return f"holds a value under {_key_named(extra)}, which is not a field its layout names"
    missing = next((n for n in names if n not in items and n not in may_be_unset), None)
    return None if missing is None else f"names the field {missing!r} without a value"


def _key_named(key: Any) -> str:
    """A state's key, as an error names it: a string's repr, else only its type (a decoded
    object's repr is its class's code)."""
    return f"{key!r:.60}" if type(key) is str else f"a {type_name(key)} key"


def _layout_refusal(layout: Any) -> str | None:
    """Why ``layout`` is no ``(names, static flags)`` pytreekit writes, as a clause."""
    if not _is_layout(layout):
        return (
            f"holds no layout: {markers.FIELDS!r} must be (names, static flags), which pytreekit "
            f"writes in every state"
        )
    odd = next((name for name in layout[0] if type(name) is not str), None)
    if odd is not None:  # no repr: a decoded object's repr is its class's code
        return f"names a field by a {type_name(odd)}, which is not a field name"
    if len(set(layout[0])) != len(layout[0]):
        return "names a field twice in its layout"
    return None


def _is_layout(layout: Any) -> bool:
    """Whether ``layout`` has the shape of a pytree state's ``(names, static flags)``."""
    return (
        type(layout) is tuple
        and len(layout) == 2
        and type(layout[0]) is tuple
        and type(layout[1]) is tuple
        and len(layout[0]) == len(layout[1])
        and all(type(flag) is bool for flag in layout[1])
    )


def _decode_partial(node: list[Any], depth: int, reader: Reader) -> Any:
    inner = node[1]
    if type(inner) is list and inner and inner[0] == "fp":
        raise _Bad(
            "a functools.partial of a functools.partial is not static data pytreekit writes "
            "(functools.partial flattens one made of another, and so does the writer)"
        )
    func = _decode(inner, depth, reader)
    if not _referenced(func):
        raise _Bad(
            f"'fp' takes a callable stored by name (a function or class on the list of "
            f"references, or a class the field declares) as its function, not a {type_name(func)}"
        )
    args, keywords = _decode_items(node[2:], depth, reader.for_plain())
    if type(args) is not tuple or type(keywords) is not dict:
        raise _Bad("'fp' takes a callable, a tuple and a dict of keywords")
    if not all(type(key) is str for key in keywords):
        raise _Bad("the keywords of a functools.partial are strings")
    if (why := _mutating(func, args, keywords)) is not None:
        raise _Bad(why)
    return LoadedPartial(func, *args, **keywords)


def _decode_codec(node: list[Any], depth: int, reader: Reader) -> Any:
    codec = _codecs_by_name.get(node[1]) if type(node[1]) is str else None
    if codec is None:
        raise _Bad(
            f"no codec is registered for {node[1]!r:.80} in this process (register it with "
            f"pytreekit.register_static_codec before loading)"
        )
    data = _decode(node[2], depth, reader.for_plain())
    owner = codec.cls.__qualname__
    try:
        value = codec.decode(data)
    except Exception as error:
        raise _Bad(
            f"the decoder registered for {owner} raised {type(error).__name__}: {error}"
        ) from error
    if type(value) is not codec.cls:
        raise _Bad(f"the decoder registered for {owner} returned a {type_name(value)}")
    try:  # the class's own __hash__ may run: user code, as its decoder is
        _check_hash(value)
    except Exception as error:
        raise _Bad(
            f"the decoder registered for {owner} returned a value that is not hashable "
            f"({type(error).__name__}: {error!s:.100}), and a static value is hashed with its "
            f"treedef: the artifact has been edited, or the decoder must refuse such data"
        ) from error
    return value


def _check_hash(value: Any) -> None:
    """Raise where a codec's value is not hashable: decided by ``hashable`` where it looks
    inside (tuples, dataclasses, pytree instances), else by the class's ``__hash__`` (user code,
    as its decoder is)."""
    kind = type(value)
    if not hashable(value):
        raise TypeError(f"unhashable type: {kind.__qualname__!r}")
    method = lookup(kind, "__hash__")
    if type(method) is not types.WrapperDescriptorType and _hashed(value, kind, method) is None:
        hash(value)


_DECODERS: dict[str, Decoder] = {
    "l": lambda node, depth, reader: _decode_items(node[1:], depth, reader),
    "d": _decode_dict,
    "s": _decode_frozenset,
    "b": lambda node, depth, reader: base64.b64decode(
        _text_part(node, _ANY_TEXT, "'b' takes base64 text").encode("ascii"), validate=True
    ),
    "f": _decode_float,
    "c": _decode_complex,
    "r": _decode_function,
    "k": lambda node, depth, reader: _resolve_class(node[1], reader),
    "dt": lambda node, depth, reader: _dtype(node[1]),
    "e": _decode_member,
    "n": _decode_namedtuple,
    "dc": _decode_dataclass,
    "p": _decode_pytree,
    "fp": _decode_partial,
    "x": _decode_codec,
    "i": lambda node, depth, reader: int(
        _text_part(node, _HEX, "'i' takes hexadecimal digits"), 16
    ),
    "u": _decode_text,
    "td": _decode_torch_dtype,
    "dv": _decode_torch_device,
}
