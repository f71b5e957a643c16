"""Every private API of CPython, JAX and torch that pytreekit touches, and what differs between
the supported versions of Python and JAX, reached from here only. A private name that moved raises
``PrivateAPIMoved`` naming it, never a silent fallback (a renamed ``dataclasses._FIELD`` must not
make every class lose its fields without a word).
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import functools
import inspect
import json
import sys
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.core
import jax.export
import numpy as np
from jax.core import Tracer

from . import _markers as markers


class PrivateAPIMoved(ImportError):
    """A private API pytreekit relies on is not where the supported versions keep it."""


def _private(owner: object, name: str, where: str, needed_for: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        raise PrivateAPIMoved(
            f"pytreekit needs {where}.{name} ({needed_for}), which this version does not have "
            f"(Python {sys.version.split()[0]}, jax {jax.__version__}; known in Python 3.11 to "
            f"3.14 and the jax versions pytreekit supports). Please report it, with these "
            f"versions."
        ) from None


# -- CPython's dataclasses --------------------------------------------------------------------

# Only the private markers tell fields from InitVars (an InitVar annotated as a string is a str).
_FIELD = _private(dataclasses, "_FIELD", "dataclasses", "to tell fields from InitVars")
_FIELD_INITVAR = _private(dataclasses, "_FIELD_INITVAR", "dataclasses", "to find InitVars")
# How dataclasses tells a ClassVar annotation, ``IS_CLASSVAR(annotation, typing)``, and reads a
# string one by what its name is in the class's module, ``IS_TYPE(annotation, cls, typing,
# typing.ClassVar, IS_CLASSVAR)``: its own functions, so that pytreekit decides "has fields" as
# dataclasses will.
IS_CLASSVAR: Callable[[object, ModuleType], bool] = _private(
    dataclasses, "_is_classvar", "dataclasses", "to tell ClassVar annotations"
)
IS_TYPE: Callable[..., bool] = _private(
    dataclasses, "_is_type", "dataclasses", "to read string ClassVar annotations"
)


# The default of a parameter whose field has a default_factory, shown as <factory>: dataclasses'
# own, which torch.compile knows (it cannot hold an object of a class of ours).
HAS_DEFAULT_FACTORY: object = _private(
    dataclasses, "_HAS_DEFAULT_FACTORY", "dataclasses", "as a factory's parameter default"
)


def is_field(f: dataclasses.Field[Any]) -> bool:
    return f._field_type is _FIELD  # type: ignore[attr-defined]


class DataclassEntries(NamedTuple):
    """A dataclass's fields and ``InitVar``s in order, the ``InitVar`` names, ids of a base's."""

    entries: list[dataclasses.Field[Any]]
    init_vars: frozenset[str]
    inherited: set[int]


def dataclass_entries(cls: type, kind: type) -> DataclassEntries:
    """``cls``'s entries; its own plain fields become ``kind`` in place (a copy would not be what
    ``dataclasses.fields`` returns)."""
    table: dict[str, dataclasses.Field[Any]] = cls.__dict__["__dataclass_fields__"]
    inherited = {
        id(f)
        for base in cls.__mro__[1:]
        for f in base.__dict__.get("__dataclass_fields__", {}).values()
    }
    entries, init_vars = [], []
    for name, f in table.items():
        if f._field_type is _FIELD_INITVAR:  # type: ignore[attr-defined]
            init_vars.append(name)
        elif f._field_type is not _FIELD:  # type: ignore[attr-defined]
            continue  # a ClassVar
        elif type(f) is dataclasses.Field and id(f) not in inherited:
            f.__class__ = kind
        entries.append(f)
    return DataclassEntries(entries, frozenset(init_vars), inherited)


# dataclasses' undocumented record of a class's options (_DataclassParams): read here only.
DATACLASS_PARAMS = "__dataclass_params__"


def own_dataclass_params(cls: type) -> Any:
    """The options record dataclasses left on ``cls`` itself (``None``: it never ran on it)."""
    return cls.__dict__.get(DATACLASS_PARAMS)


def dataclass_option(params: Any, name: str) -> Any:
    """One option from an options record (``None``: 3.11 keeps no ``match_args``, ``kw_only``)."""
    return getattr(params, name, None)


def written_by_dataclasses(function: Any) -> bool:
    """Whether ``function`` is one dataclasses wrote: it compiles its methods from a string."""
    code = getattr(getattr(function, "__wrapped__", function), "__code__", None)
    return code is not None and code.co_filename in ("<string>", "__create_fn__")


# Python 3.13's dataclasses compare field by field, not as tuples: the same NaN in both is unequal.
DATACLASS_EQ_FIELD_BY_FIELD = sys.version_info >= (3, 13)

# How deep pytreekit's ``==`` compares before it raises ``RecursionError`` (two instances holding
# themselves), as Python's own comparison of lists does: before 3.12 the interpreter's recursion
# limit counts C recursion too; from 3.12 C code has a far higher limit of its own.
_C_RECURSION = sys.version_info >= (3, 12)


def comparison_depth() -> int:
    return 100_000 if _C_RECURSION else sys.getrecursionlimit()


# Python 3.13's copy.replace: pytreekit replaces the __replace__ dataclasses writes (via __init__).
HAS_COPY_REPLACE = hasattr(copy, "replace")
DATACLASSES_REPLACE: Any = (
    _private(dataclasses, "_replace", "dataclasses", "to tell the __replace__ it gives classes")
    if HAS_COPY_REPLACE
    else None
)

# Python 3.14's Field.doc; before, pytreekit keeps a field's doc in its metadata.
FIELD_HAS_DOC = hasattr(dataclasses.Field, "doc")  # a slot

# Python 3.12's type statement (``type Sizes = tuple[int, ...]``) makes one of these.
TYPE_ALIAS: type | None = getattr(typing, "TypeAliasType", None)
# And its abstract class of the buffer protocol, told by a __buffer__ method.
ABSTRACT_BUFFER: type | None = getattr(collections.abc, "Buffer", None)


def record_dataclass_params(cls: type, *, init: bool, repr: bool, eq: bool, frozen: bool) -> Any:
    """Make ``cls``'s options record say what the class has (pytreekit writes the methods that
    dataclasses did not), for tools that read it; return it."""
    params = own_dataclass_params(cls)
    for flag, value in (("init", init), ("repr", repr), ("eq", eq), ("frozen", frozen)):
        _private(params, flag, "dataclasses._DataclassParams", "to record the class's flags")
        object.__setattr__(params, flag, value)
    return params


# -- CPython's annotations ----------------------------------------------------------------------
# Python 3.14 defers annotations (PEP 649): pytreekit reads them as dataclasses does (FORWARDREF).

if sys.version_info >= (3, 14):  # pragma: Python 3.14+
    import annotationlib

    _FORMATS = (
        annotationlib.Format.VALUE,
        annotationlib.Format.FORWARDREF,
        annotationlib.Format.STRING,
    )

    def class_annotations(cls: type) -> dict[str, Any]:
        """The annotations of ``cls``'s own body, as dataclasses reads them."""
        return annotationlib.get_annotations(cls, format=annotationlib.Format.FORWARDREF)

    def signature(
        function: Callable[..., Any], *, follow_wrapped: bool = True
    ) -> inspect.Signature:
        """``inspect.signature`` without evaluating annotations that cannot be yet."""
        return inspect.signature(
            function,
            follow_wrapped=follow_wrapped,
            annotation_format=annotationlib.Format.FORWARDREF,
        )

    def copy_annotations(source: object, target: Callable[..., Any]) -> None:
        """Give ``target`` the annotations of ``source`` (a function it wraps), unevaluated."""
        annotate = getattr(source, "__annotate__", None)
        if annotate is not None:
            target.__annotate__ = annotate
        elif hasattr(source, "__annotations__"):
            target.__annotations__ = source.__annotations__

    # The entries of a class's namespace that hold its annotations (given ones replace them all).
    ANNOTATION_ENTRIES: tuple[str, ...] = (
        "__annotate_func__",
        "__annotations_cache__",
        "__annotations__",
    )

    def annotations_given_since(cls: type, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """The entries of ``cls.__dict__`` holding annotations given since its namespace was
        ``namespace`` (3.14's ``make_dataclass`` sets them), not those reading them leaves."""
        entries = cls.__dict__
        annotate = entries.get("__annotate_func__")
        if annotate is not None and annotate is not namespace.get("__annotate_func__"):
            return {"__annotate_func__": annotate}
        # As `from __future__ import annotations` keeps them.
        written = entries.get("__annotations__")
        if written and written is not namespace.get("__annotations__"):
            return {"__annotations__": written}
        given = entries.get("__annotations_cache__")  # cls.__annotations__ = {...}
        same = given is namespace.get("__annotations_cache__")
        if given and "__annotate_func__" not in entries and not same:
            return {"__annotations_cache__": given}
        return {}

    def travelling(cls: type, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """``cls``'s namespace as pickle may send it: annotations as a dict, not the annotate
        function, whose closure would pickle the spec again (the class would arrive twice)."""
        if "__annotate_func__" not in namespace:
            return dict(namespace)
        sent = {k: v for k, v in namespace.items() if k != "__annotate_func__"}
        try:
            annotations = annotationlib.get_annotations(cls)
        except Exception:  # a name still undefined: as text, which dataclasses reads too
            annotations = annotationlib.get_annotations(cls, format=annotationlib.Format.STRING)
        sent["__annotations_cache__"] = annotations
        return sent

    def set_annotations(function: Callable[..., Any], annotations: dict[str, Any]) -> None:
        """Give ``function`` these annotations through an ``__annotate__`` (what 3.14 copies)."""

        def __annotate__(format: int, /) -> dict[str, Any]:
            if format == annotationlib.Format.STRING:
                return {name: annotationlib.type_repr(value) for name, value in annotations.items()}
            if format in _FORMATS:
                return dict(annotations)
            raise NotImplementedError(format)

        function.__annotate__ = __annotate__

    def annotate_init(
        init: Callable[..., Any],
        cls: type,
        fields: Sequence[tuple[str, Any]],
        converted: Mapping[str, Callable[[], Any]],
    ) -> None:
        """Annotate ``cls``'s generated ``__init__`` as dataclasses does (lazily, in the format
        asked); a ``converted`` field with what its converter accepts."""
        names = [name for name, _ in fields]

        def __annotate__(format: int, /) -> dict[str, Any]:
            if format not in _FORMATS:
                raise NotImplementedError(format)
            declared: dict[str, Any] = {}
            for klass in reversed(cls.__mro__):
                declared.update(annotationlib.get_annotations(klass, format=format))
            annotations: dict[str, Any] = {}
            for name in names:
                if name in converted:
                    accepted = converted[name]()
                    text = format == annotationlib.Format.STRING
                    annotations[name] = annotationlib.type_repr(accepted) if text else accepted
                elif name in declared:
                    annotations[name] = declared[name]
            annotations["return"] = "None" if format == annotationlib.Format.STRING else None
            return annotations

        __annotate__.__qualname__ = f"{cls.__qualname__}.__init__.__annotate__"
        init.__annotate__ = __annotate__

else:

    def class_annotations(cls: type) -> dict[str, Any]:
        return inspect.get_annotations(cls)

    def signature(
        function: Callable[..., Any], *, follow_wrapped: bool = True
    ) -> inspect.Signature:
        return inspect.signature(function, follow_wrapped=follow_wrapped)

    def copy_annotations(source: object, target: Callable[..., Any]) -> None:
        if hasattr(source, "__annotations__"):
            target.__annotations__ = source.__annotations__

    ANNOTATION_ENTRIES: tuple[str, ...] = ("__annotations__",)

    def annotations_given_since(cls: type, namespace: Mapping[str, Any]) -> dict[str, Any]:
        # Reading a class's annotations leaves an empty dict: that is no annotation given.
        given = cls.__dict__.get("__annotations__")  # noqa: RUF063 - the entry, not the annotations
        if given and given is not namespace.get("__annotations__"):
            return {"__annotations__": given}
        return {}

    def travelling(cls: type, namespace: Mapping[str, Any]) -> dict[str, Any]:
        return dict(namespace)

    def set_annotations(function: Callable[..., Any], annotations: dict[str, Any]) -> None:
        function.__annotations__ = annotations

    def annotate_init(
        init: Callable[..., Any],
        cls: type,
        fields: Sequence[tuple[str, Any]],
        converted: Mapping[str, Callable[[], Any]],
    ) -> None:
        annotations = {
            name: converted[name]() if name in converted else annotation
            for name, annotation in fields
        }
        init.__annotations__ = annotations | {"return": None}


def unannotate_self(functions: Iterable[Callable[..., Any]]) -> None:
    """Drop ``self`` from each function's annotations: dataclasses' methods leave it out."""
    for function in functions:
        annotations = function.__annotations__
        set_annotations(function, {k: v for k, v in annotations.items() if k != "self"})


# -- JAX --------------------------------------------------------------------------------------

from jax._src import tree_util as _jax_tree_util  # noqa: E402 - JAX has no public registry query
from jax._src.export import _export as _jax_export_module  # noqa: E402 - nor an export one

_JAX_TREE_REGISTRY: dict[type, Any] = _private(
    _jax_tree_util, "_registry", "jax._src.tree_util", "to tell whether a class is registered"
)
_private(
    _private(_jax_tree_util, "_RegistryEntry", "jax._src.tree_util", "jax.export loading"),
    "from_iter",
    "jax._src.tree_util._RegistryEntry",
    "jax.export loading",
)


def registered_with_jax(cls: type) -> bool:
    return cls in _JAX_TREE_REGISTRY


def jax_from_children(cls: type) -> Callable[..., Any]:
    """How ``jax.export`` rebuilds ``cls`` (what JAX's own registration stores)."""
    from_iter: Callable[..., Any] = _JAX_TREE_REGISTRY[cls].from_iter
    return from_iter


# JAX's call refuses a second registration: pytreekit writes these registries (jax >= 0.4.35).
_export_by_type: dict[type, Any] = _private(
    _jax_export_module, "serialization_registry", "jax._src.export._export", "jax.export"
)
_export_by_name: dict[str, Any] = _private(
    _jax_export_module, "deserialization_registry", "jax._src.export._export", "jax.export"
)


def export_registries() -> tuple[dict[type, Any], dict[str, Any]]:
    """``jax.export``'s registries by type (writing) and by name (reading)."""
    return _export_by_type, _export_by_name


# Taken by whoever changes those registries: pytreekit's own registrations and the wrapper below.
export_lock = threading.Lock()


# ``import pytreekit`` wraps ``jax.export.register_pytree_node_serialization`` so that a user's own
# registration (JAX cannot unregister) replaces pytreekit's, put back if JAX refuses.
def _take_ours(registry: dict[Any, Any], key: Any) -> tuple[dict[Any, Any], Any, Any] | None:
    """Remove pytreekit's own registration under ``key``, and say what it was."""
    try:
        entry = registry.get(key)
    except TypeError:  # unhashable: JAX says what is wrong with it
        return None
    if entry is None or getattr(entry[1], markers.CLASS, None) is None:  # not pytreekit's
        return None
    del registry[key]
    return registry, key, entry


def _giving_way(register: Callable[..., Any]) -> Callable[..., Any]:
    """``register``, first removing pytreekit's own registration of the class and the name."""

    @functools.wraps(register)
    def register_pytree_node_serialization(*args: Any, **kwargs: Any) -> Any:
        nodetype = args[0] if args else kwargs.get("nodetype")
        name = kwargs.get("serialized_name")
        by_type, by_name = export_registries()
        with export_lock:
            removed = [
                taken
                for registry, key in ((by_type, nodetype), (by_name, name))
                if (taken := _take_ours(registry, key)) is not None
            ]
            try:
                return register(*args, **kwargs)
            except BaseException:
                for registry, key, entry in removed:
                    registry[key] = entry
                raise

    setattr(register_pytree_node_serialization, markers.GIVES_WAY, True)
    return register_pytree_node_serialization


if not getattr(jax.export.register_pytree_node_serialization, markers.GIVES_WAY, False):
    jax.export.register_pytree_node_serialization = _giving_way(
        jax.export.register_pytree_node_serialization
    )


def _refusing_tracers(value: Any) -> int:
    """``hash(value)``, refusing a tracer as newer JAX does: by itself or inside tuples."""
    if isinstance(value, Tracer):
        raise TypeError(f"unhashable type: {type(value).__name__!r}")
    if type(value) is tuple:
        for item in value:
            _refusing_tracers(item)
    return hash(value)


# What a static value must pass: jax 0.4.35 hashes a tracer by identity (newer JAX refuses).
static_hash: Callable[[Any], int] = hash if Tracer.__hash__ is None else _refusing_tracers


# A tangent must carry its primal's varying manual axes (jax.typeof(x).vma, JAX 0.6+, shard_map):
# jnp.zeros_like keeps them from JAX 0.7 on, JAX 0.6 drops them (jax.lax.pvary puts them back).
_typeof: Callable[[Any], Any] | None = getattr(jax, "typeof", None)
_pvary: Callable[[Any, tuple[str, ...]], Any] | None = getattr(jax.lax, "pvary", None)


def zeros_like(x: Any, dtype: Any) -> Any:
    """Zeros of ``dtype`` like ``x``, its sharding and varying manual axes too: a zero tangent."""
    if dtype == jax.dtypes.float0 and not isinstance(x, Tracer):
        # Outside a trace, float0 zeros are NumPy's, as JAX makes them (jnp.zeros_like drops an
        # explicit mesh axis's sharding there); a traced value's are jnp.zeros_like's below.
        return np.zeros(np.shape(x), dtype)
    zeros = jax.numpy.zeros_like(x, dtype=dtype)
    if _typeof is not None:
        axes: frozenset[str] = getattr(_typeof(x), "vma", frozenset())
        missing = axes - getattr(_typeof(zeros), "vma", frozenset())
        if missing:  # pragma: no cover - JAX 0.6 only
            assert _pvary is not None
            zeros = _pvary(zeros, tuple(sorted(missing)))
    return zeros


def tangent_type(x: Any) -> Any:
    """The type of ``x``'s tangent, as ``jax.make_jaxpr`` takes an argument: ``x``'s own for an
    inexact ``x``, else float0; with its varying manual axes and sharding where JAX has them
    (the aval's ``to_tangent_aval``, what ``jax.custom_gradient`` traces on, is JAX-internal)."""
    aval = _typeof(x) if _typeof is not None else None
    to_tangent = getattr(aval, "to_tangent_aval", None)
    if to_tangent is not None:
        return to_tangent()
    dtype = getattr(x, "dtype", None)  # JAX before jax.typeof
    dtype = jax.numpy.result_type(x) if dtype is None else dtype
    if not jax.numpy.issubdtype(dtype, jax.numpy.inexact):
        dtype = jax.dtypes.float0
    shape_dtype_struct: Any = jax.ShapeDtypeStruct  # untyped in jax 0.4.35
    return shape_dtype_struct(tuple(np.shape(x)), dtype)


def without_consts(jaxpr: Any) -> Any:
    """``jaxpr`` holding no constants. JAX 0.12 attaches a trace's constants to its jaxpr (the
    closed jaxpr's): kept as static data, tracers among them would outlive their trace. Replacing
    the constant variables detaches them there, and changes nothing before."""
    return jaxpr.replace(constvars=jaxpr.constvars)


def eval_jaxpr(jaxpr: Any, consts: Sequence[Any], *args: Any) -> list[Any]:
    """The outputs of ``jaxpr`` on ``consts`` and ``args``, bound on the current trace. Public
    in ``jax.core`` from 0.4.35 on, but ``jax.core`` is being emptied into ``jax.extend.core``
    one name at a time: reached from here only, with ``jaxpr_as_fun`` where it has gone."""
    evaluate: Callable[..., list[Any]] | None = getattr(jax.core, "eval_jaxpr", None)
    if evaluate is not None:
        return evaluate(jaxpr, consts, *args)
    import jax.extend.core as extend_core  # pragma: no cover - a JAX without jax.core.eval_jaxpr

    closed = extend_core.ClosedJaxpr(jaxpr, list(consts))  # pragma: no cover
    return list(extend_core.jaxpr_as_fun(closed)(*args))  # pragma: no cover


# -- torch ------------------------------------------------------------------------------------

# torch's pytree registry has no public module: this one is what the torch backend needs.
TORCH_PYTREE = "torch.utils._pytree"


def torch_pytree() -> ModuleType:
    import torch.utils._pytree as torch_pytree

    return torch_pytree


def unregister_from_torch(cls: type) -> None:
    """Undo a torch registration: its Python registry, and its C++ one (optree's) if used."""
    pytree = torch_pytree()
    where = TORCH_PYTREE
    _private(pytree, "_deregister_pytree_node", where, "to undo a registration")(cls)
    pending: list[Any] = _private(
        pytree, "_cxx_pytree_pending_imports", where, "to undo a registration"
    )
    pending[:] = [entry for entry in pending if entry[0][0] is not cls]
    if _private(pytree, "_cxx_pytree_imported", where, "to undo a registration"):
        import optree

        optree.unregister_pytree_node(cls, namespace="torch")


def guard_torch_namedtuple_contexts(refusal: Callable[[Any], str | None]) -> None:
    """Make torch's reader of a namedtuple node's context refuse a class ``refusal`` names a
    reason for. torch finds that class by name among every type registered with it (a pytree
    class of ours too) and rebuilds the node by calling it with the node's children: a treespec
    could call a pytree class's ``__init__`` with arguments of its choosing, past every check of
    ours. The module's reader is replaced once (a namedtuple registered later reads it from
    there), and every entry holding the original is pointed at the guard, each time a class is
    registered with torch."""
    pytree = torch_pytree()
    where, needed_for = TORCH_PYTREE, "to refuse a namedtuple node naming a pytree class"
    current = _private(pytree, "_namedtuple_deserialize", where, needed_for)
    registry: dict[Any, Any] = _private(pytree, "SUPPORTED_SERIALIZED_TYPES", where, needed_for)
    if current is not _namedtuple_guard[0]:
        reader = current

        def guarded(dumpable_context: Any) -> Any:
            found = reader(dumpable_context)
            why = refusal(found)
            if why is not None:
                raise TypeError(
                    f"treespec_loads: a namedtuple node names {dumpable_context!r:.200}: {why}"
                )
            return found

        _namedtuple_guard[:] = [guarded, reader]
        setattr(pytree, "_namedtuple_deserialize", guarded)
    guard, original = _namedtuple_guard
    for typ, entry in list(registry.items()):
        if entry.from_dumpable_context is original:
            registry[typ] = entry._replace(from_dumpable_context=guard)


# [the guard installed, torch's own reader it wraps]
_namedtuple_guard: list[Any] = [None, None]


# -- the standard library's private attributes the artifacts wing reads (issue 33) --------------
# Read through type's C descriptors: no metaclass property or __getattr__ of the class runs.
_OWN_DICT: Any = vars(type)["__dict__"]
_MRO: Any = vars(type)["__mro__"]


def enum_members(cls: type) -> dict[str, Any] | None:
    """An enum class's members by name (``Enum._member_map_``; ``None``: not an enum)."""
    members = _OWN_DICT.__get__(cls).get("_member_map_")
    return members if type(members) is dict else None


def frozen_dataclasses(cls: type, first: int = 0) -> Iterator[tuple[type, bool]]:
    """Each class of ``cls.__mro__[first:]`` that dataclasses ran on, and whether it is frozen."""
    for klass in _MRO.__get__(cls)[first:]:
        params = _OWN_DICT.__get__(klass).get(DATACLASS_PARAMS)
        if params is not None:
            why = "to tell a frozen dataclass"
            yield klass, _private(params, "frozen", "dataclasses._DataclassParams", why) is True


def dataclass_frozen(cls: type) -> bool:
    """Whether ``cls``'s nearest dataclass in its MRO is frozen."""
    return next((frozen for _, frozen in frozen_dataclasses(cls)), False)


def json_scanner() -> Callable[[str, int], tuple[Any, int]]:
    """``json``'s own scanner (what ``JSONDecoder.raw_decode`` calls, undocumented): where no
    value starts it raises ``StopIteration`` at once, where ``raw_decode``'s error would count
    the lines before that point (the audit tries every magic in a text: quadratic)."""
    why = "to read the trees of an artifact"
    scan: Callable[[str, int], tuple[Any, int]] = _private(
        json.JSONDecoder(), "scan_once", "json.JSONDecoder", why
    )
    return scan


# -- torch's weights-only unpickler ---------------------------------------------------------------

# torch.load(weights_only=True) rebuilds an allowed class's instance in the pure-Python loop of
# this module (torch 2.x: ``Unpickler.load``), which calls ``inst.__setstate__(state)`` itself.
# Plain pickle calls it from C, and copy from ``copy``: neither frame is this module's.
TORCH_RESTRICTED_UNPICKLER = "torch._weights_only_unpickler"
_getframe: Callable[[int], Any] | None = getattr(sys, "_getframe", None)


# The modules whose frames call ``__setstate__`` for torch's weights-only unpickler: its own loop
# (BUILD), and the rebuild functions it allows (``_rebuild_from_type_v2`` calls ``__setstate__``
# itself, nested as deep as a file likes: each call is one frame below one of them).
_TORCH_SETSTATE_CALLERS = frozenset({TORCH_RESTRICTED_UNPICKLER, "torch._tensor", "torch._utils"})
# How far above ``__setstate__`` such a frame is looked for: past a subclass's own ``__setstate__``
# that hands the state on with ``super()``, whatever decorates it. Bounded: plain pickle and copy
# (torch imported) read no more of a deep stack than this.
_SETSTATE_FRAMES = 32


def called_by_torch_restricted_unpickler(depth: int = 1) -> bool:
    """Whether the function calling this (``depth`` frames up) was called, directly or through
    up to ``_SETSTATE_FRAMES`` frames, by torch's weights-only unpickler or a rebuild function of
    torch's it runs."""
    if _getframe is None:  # an interpreter without frames: check every state
        return True
    if TORCH_RESTRICTED_UNPICKLER not in sys.modules:  # torch never loaded a checkpoint so
        return False
    frame = _getframe(depth + 1)
    for _ in range(_SETSTATE_FRAMES):
        if frame is None:
            return False
        if frame.f_globals.get("__name__") in _TORCH_SETSTATE_CALLERS:
            return True
        frame = frame.f_back
    return False


def torch_serialized_types() -> dict[str, Any]:
    """torch's registry of pytree node types by serialized name, if torch's pytree module is
    imported (the audit reads it; nothing is imported)."""
    pytree = sys.modules.get(TORCH_PYTREE)
    found = {} if pytree is None else vars(pytree).get("SERIALIZED_TYPE_TO_PYTHON_TYPE", {})
    return found if type(found) is dict else {}


# -- typing_extensions' spellings of typing's forms (attack6) ----------------------------------
# typing_extensions has its own TypeAliasType (3.11, and a backport of later features on 3.12+)
# and Protocol: told by identity with the module's own, found only if a user already imported
# it (a hint spelt with one means it is), so pytreekit never imports typing_extensions.


def _extension(name: str) -> Any:
    module = sys.modules.get("typing_extensions")
    return vars(module).get(name) if type(module) is ModuleType else None


def is_type_alias(hint: object) -> bool:
    """Whether ``hint`` is a type alias (``type A = ...`` or ``TypeAliasType("A", ...)``)."""
    kind = type(hint)
    if TYPE_ALIAS is not None and kind is TYPE_ALIAS:
        return True
    extension = _extension("TypeAliasType")
    return extension is not None and kind is extension


def protocol_bases() -> tuple[type, ...]:
    """typing's ``Protocol`` and ``Generic``, and typing_extensions' ``Protocol`` if imported."""
    extension = _extension("Protocol")
    bases: tuple[Any, ...] = (typing.Protocol, typing.Generic)
    return (*bases, extension) if extension is not None else bases
