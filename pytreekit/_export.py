"""Aux data as bytes, for the registries that write treedefs to disk: ``jax.export`` (registered
automatically with the jax backend) and ``torch.export`` (the torch backend's dumpable context).

Artifacts are data: a serialized treedef stores each node's field names, static flags and static
values as static data (``_codec``, format 3), whose reader imports nothing, calls no function and
builds objects without their ``__init__``, so loading an artifact runs no code whatever bytes it
holds. A static value static data cannot hold is refused when the artifact is written, naming the
class and field.

Static data written with pickle (formats 1 and 2, by pytreekit 0.2 and the versions before this
one, and format 3 for a class opted in with ``pickle_static_fields``) is refused when read, naming
what wrote it, unless read inside ``allow_pickled_artifacts()``: unpickling runs whatever code the
bytes name. The format is told from pickle's opcodes, without unpickling.

Each class is registered under ``"<module>:<qualname>"`` for ``jax.export`` and
``"<module>.<qualname>"`` for torch (torch's own convention), so a fresh process that imports the
defining module finds it. The name is registered for reading when the class is decorated; the
class is registered for writing when it is first used. A registration made by hand with
``jax.export.register_pytree_node_serialization`` (JAX's documented route) wins whenever it is
made: pytreekit's own gives way (JAX's function is wrapped to remove it first). Defining a class
again under the same name (a notebook cell run twice) points the name at the newest class:
artifacts read afterwards produce instances of it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import functools
import io
import keyword
import pickle
import pickletools
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import jax.export

from . import _markers as markers
from ._classes import NodeFunctions, spec_of
from ._codec import MAGIC, StaticDataError, UnencodableError, dumps, is_pickle, loads
from ._compat import export_registries, jax_from_children
from ._references import MISSING, by_reference, import_by_name, lookup

C = TypeVar("C", bound=type)

# 3: (3, field names, static flags, static values) as static data, or pickled for a class opted
# in. 2 (the versions after 0.2): the same tuple, pickled. 1 (pytreekit 0.2): (1, field names or
# None for an annotated class, static names, static values), pickled.
_FORMAT = 3
_PICKLED_BY = {
    1: "pytreekit 0.2 (format 1)",
    2: "a version of pytreekit from before artifacts were data (format 2)",
    3: "pytreekit for a class opted in with pytreekit.pickle_static_fields (format 3)",
}
_lock = threading.Lock()
_pickled_classes: weakref.WeakSet[type] = weakref.WeakSet()
_pickle_allowed = contextvars.ContextVar("pytreekit_pickle_allowed", default=False)


def export_name(cls: type) -> str:
    """The name ``jax.export`` artifacts store for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


# -- the two opt-ins to pickle ------------------------------------------------------------------


def pickle_static_fields(cls: C, /) -> C:
    """Store the static fields of ``cls`` with pickle in the artifacts it is written to
    (``jax.export``, torch treespecs), for values static data cannot hold. **Unsafe**: loading
    such an artifact runs whatever code its bytes name, so it is refused unless loaded inside
    ``allow_pickled_artifacts()``. Prefer a plain value or ``register_static_codec``.

    Applies to ``cls`` itself (not its subclasses), from the next artifact written on. Returns
    ``cls``, so it can decorate the class (above ``@pytree_class``).

    Args:
        cls: A class decorated with ``@pytree_class``.

    Returns:
        ``cls``.

    Raises:
        TypeError: ``cls`` is not a pytree class, or is an instance.

    >>> import pytreekit
    >>> @pytreekit.pickle_static_fields
    ... @pytreekit.pytree_class
    ... class Legacy:
    ...     options: object = pytreekit.field(static=True, default=None)
    """
    spec_of(cls, "pickle_static_fields()")
    if not isinstance(cls, type):
        raise TypeError(
            f"pickle_static_fields() takes a class, got an instance of {type(cls).__qualname__}"
        )
    with _lock:
        _pickled_classes.add(cls)
    return cls


@contextlib.contextmanager
def allow_pickled_artifacts() -> Generator[None]:
    """Within this block (in this thread or task), load artifacts whose static fields were written
    with pickle: by pytreekit 0.2 and the versions before artifacts were data, or for a class
    opted in with ``pickle_static_fields``. **Unsafe**: unpickling runs whatever code the artifact
    names; use it only for artifacts you trust, and export them again to get data.

    Yields:
        Nothing.

    >>> import pytreekit
    >>> with pytreekit.allow_pickled_artifacts():
    ...     pass  # jax.export.deserialize(trusted_old_artifact)
    """
    token = _pickle_allowed.set(True)
    try:
        yield
    finally:
        _pickle_allowed.reset(token)


# -- writing ------------------------------------------------------------------------------------


def dump_aux(aux: Any, what: str) -> bytes:
    """``aux`` (``(layout, *static_values)``) as bytes. ``what`` names the consumer in the error
    for a value that cannot be stored."""
    layout, statics = aux[0], tuple(aux[1:])
    state = (_FORMAT, layout.names, layout.static, statics)
    if layout.cls in _pickled_classes:
        return _pickle(state, layout.cls, layout.static_names, what)
    try:
        return dumps(state)
    except UnencodableError as error:
        raise _unencodable(layout.cls, layout.static_names, statics, what, error) from error


def _unencodable(
    cls: type,
    static_names: tuple[str, ...],
    statics: tuple[Any, ...],
    what: str,
    error: UnencodableError,
) -> TypeError:
    owner = cls.__qualname__
    for name, value in zip(static_names, statics, strict=True):
        try:
            dumps(value)
        except UnencodableError as culprit:
            return TypeError(
                f"{what} stores the static fields of {owner} as data that loading cannot run, "
                f"but {owner}.{name}{culprit.path} holds a {culprit.value_type}: "
                f"{culprit.reason}. {culprit.advice}"
            )
    # Each value stores alone, not all of them together (nested a level or two less deep).
    return TypeError(
        f"{what} stores the static fields of {owner} as data that loading cannot run, but "
        f"together {', '.join(static_names)} cannot be stored: {error.reason}."
    )


class _Pickler(pickle.Pickler):
    """Pickle, with objects found by name (``jnp.tanh``) stored by reference."""

    def reducer_override(self, obj: Any) -> Any:
        name = by_reference(obj)
        return NotImplemented if name is None else (import_by_name, name)


def _pickle(state: Any, cls: type, static_names: tuple[str, ...], what: str) -> bytes:
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=4).dump(state)
    except Exception as error:
        raise _unpicklable(cls, static_names, state[3], what, error) from error
    return buffer.getvalue()


def _unpicklable(
    cls: type, static_names: tuple[str, ...], statics: tuple[Any, ...], what: str, error: Exception
) -> TypeError:
    culprits = [
        (name, value, value_error)
        for name, value in zip(static_names, statics, strict=True)
        if (value_error := _pickle_error(value)) is not None
    ]
    # Pickle failing on the tuple but on no value alone is not expected; name them all then.
    name, value, error = culprits[0] if culprits else (", ".join(static_names), statics, error)
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return TypeError(
        f"{what} stores the static fields of {cls.__qualname__} with pickle (the class is opted "
        f"in with pytreekit.pickle_static_fields), but {cls.__qualname__}.{name} holds {text}, "
        f"which pickle cannot store ({type(error).__name__}: {error}). Use a value defined at "
        f"module level, or make {name} a non-static field."
    )


def _pickle_error(value: Any) -> Exception | None:
    try:
        _Pickler(io.BytesIO(), protocol=4).dump(value)
    except Exception as error:
        return error
    return None


# -- reading ------------------------------------------------------------------------------------


def load_aux(nodes: NodeFunctions, data: bytes | bytearray, what: str = "jax.export") -> Any:
    """The aux data ``dump_aux`` wrote, its layout interned in the class as it is now. Any
    refusal is a ``StaticDataError`` (a ``ValueError``) naming the class."""
    cls = nodes.cls
    owner = cls.__qualname__
    raw = bytes(data)
    try:
        state = _unpickle(raw, owner) if is_pickle(raw) else loads(raw)
    except StaticDataError as error:
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: {error}"
        ) from None
    written = state[0] if type(state) is tuple and state else None
    if written == 1 and len(state) == 4:  # pytreekit 0.2, read inside allow_pickled_artifacts
        _, names, static_names, statics = state
        if names is None:  # an annotated class's: its fields as they are now
            names = tuple(f.name for f in nodes.table.fields_of(cls))
        if type(names) is tuple and type(static_names) is tuple:
            state = (_FORMAT, names, tuple(n in static_names for n in names), statics)
    if not _well_formed(state):
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: it holds no static data of a "
            f"pytree class (format {written!r:.20}; this version writes format {_FORMAT})."
        )
    _, names, static, statics = state
    _check_names(nodes, names, what)
    layout = nodes.table.for_names(names)
    if (layout.names, layout.static) != (names, static) or len(statics) != len(layout.static_names):
        written_static = tuple(n for n, s in zip(names, static, strict=True) if s)
        raise TypeError(
            f"cannot read the serialized treedef of {owner}: it was written when its "
            f"fields were {names} (static: {written_static}), but an instance holding them now "
            f"has fields {layout.names} (static: {layout.static_names}). Export the function "
            f"again with the class as it is now."
        )
    return (layout, *statics)


def _well_formed(state: Any) -> bool:
    if not (type(state) is tuple and len(state) == 4 and state[0] in (2, _FORMAT)):
        return False
    _, names, static, statics = state
    return (
        type(names) is tuple
        and type(static) is tuple
        and type(statics) is tuple
        and len(names) == len(static)
        and all(type(name) is str for name in names)
        and all(type(flag) is bool for flag in static)
    )


def _check_names(nodes: NodeFunctions, names: tuple[str, ...], what: str) -> None:
    """Refuse a name no instance of the class could hold as a field, before the class's table
    learns it: unflatten stores each field directly, so a name that is a property or another
    data descriptor of the class would run its setter, and a dunder name would replace the
    instance's ``__class__`` or ``__dict__``. The names of the primary layout are fields already
    (an annotated class has no others)."""
    table = nodes.table
    primary = table.primary
    known = primary.name_set if primary is not None else frozenset()
    storage = table.storage
    for name in names:
        if name in known:
            continue
        attribute = lookup(table.cls, name)
        refused = (
            not name.isidentifier()
            or keyword.iskeyword(name)
            or name.startswith("__")
            or name.startswith(storage.private_prefixes)
            or name in storage.descriptors
            or (not storage.has_dict and name not in storage.slots)
            or (
                attribute is not MISSING
                and type(attribute) is not types.MemberDescriptorType
                and (
                    lookup(type(attribute), "__set__") is not MISSING
                    or lookup(type(attribute), "__delete__") is not MISSING
                )
            )
        )
        if refused:
            raise StaticDataError(
                f"{what} cannot read the serialized treedef of {table.cls.__qualname__}: it "
                f"names the field {name!r:.60}, which no instance of the class can hold."
            )


def _unpickle(raw: bytes, owner: str) -> Any:
    if not _pickle_allowed.get():
        written = _pickled_format(raw)
        writer = _PICKLED_BY.get(written) if written is not None else "an unknown writer"
        again = (
            ""
            if written == _FORMAT  # an opted-in class would write pickle again
            else ", then export it again: this version writes data that loading cannot run"
        )
        raise StaticDataError(
            f"its static fields were written with pickle by "
            f"{writer or f'an unknown writer (format {written})'}, and unpickling runs whatever "
            f"code the bytes name, so it is refused. If you trust the artifact, load it inside "
            f"`with pytreekit.allow_pickled_artifacts():`{again}."
        )
    try:
        return pickle.loads(raw)
    except Exception as error:
        raise StaticDataError(
            f"its pickled static fields cannot be unpickled ({type(error).__name__}: "
            f"{error!s:.200})."
        ) from error


_INTS = frozenset({"BININT1", "BININT2", "BININT", "INT", "LONG1"})


def _pickled_format(raw: bytes) -> int | None:
    """The format number pickled static data starts with, read from the opcodes (the first int
    of the tuple), without unpickling."""
    with contextlib.suppress(Exception):  # malformed opcodes: the writer is unknown
        for opcode, argument, _ in pickletools.genops(raw):
            if opcode.name in ("PROTO", "FRAME", "MARK"):
                continue
            return argument if opcode.name in _INTS and type(argument) is int else None
    return None


# -- jax.export ---------------------------------------------------------------------------------


def _ours(entry: Any) -> bool:
    """Whether a ``jax.export`` registry entry is pytreekit's own registration."""
    return getattr(entry[1], markers.CLASS, None) is not None


def register_jax_export(cls: type, nodes: NodeFunctions) -> None:
    """Let ``jax.export`` read artifacts naming ``cls`` now, and write them from the class's first
    use (called once per class, after its ``jax.tree_util`` registration)."""
    name = export_name(cls)

    def serialize_auxdata(aux: Any) -> bytes:
        return dump_aux(aux, "jax.export")

    def deserialize_auxdata(data: bytes) -> Any:
        return load_aux(nodes, data)

    setattr(serialize_auxdata, markers.CLASS, cls)
    setattr(deserialize_auxdata, markers.CLASS, cls)
    by_type, by_name = export_registries()
    with _lock:
        previous = by_name.get(name)
        if previous is None or getattr(previous[1], markers.CLASS, None) is previous[0]:
            # Free, or ours for a class of the same name defined earlier (re-pointed).
            by_name[name] = (cls, deserialize_auxdata, jax_from_children(cls))
        elif previous[0] is not cls:
            warnings.warn(
                f"{cls.__qualname__} was not registered for jax.export serialization: the name "
                f"{name!r} is already registered for {previous[0]!r}. Exporting a function whose "
                f"signature holds {cls.__qualname__} will fail at serialize(); register it by "
                f"hand with jax.export.register_pytree_node_serialization under another name.",
                RuntimeWarning,
                stacklevel=2,
            )
            return

    def register_for_writing() -> None:
        with _lock:
            if cls not in by_type:  # a registration by hand, made before, stands
                by_type[cls] = (name, serialize_auxdata)

    nodes.add_first_use_hook(register_for_writing)


def _take_ours(registry: dict[Any, Any], key: Any) -> tuple[dict[Any, Any], Any, Any] | None:
    """Remove pytreekit's own registration under ``key``, and say what it was."""
    try:
        entry = registry.get(key)
    except TypeError:  # unhashable: JAX says what is wrong with it
        return None
    if entry is None or not _ours(entry):
        return None
    del registry[key]
    return registry, key, entry


def _giving_way(register: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.export.register_pytree_node_serialization``, which first removes pytreekit's own
    registration of the class (and of the name) it is given, and puts it back if JAX refuses."""

    @functools.wraps(register)
    def register_pytree_node_serialization(*args: Any, **kwargs: Any) -> Any:
        nodetype = args[0] if args else kwargs.get("nodetype")
        name = kwargs.get("serialized_name")
        by_type, by_name = export_registries()
        with _lock:
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


# -- torch --------------------------------------------------------------------------------------


def torch_dumpable(nodes: NodeFunctions) -> tuple[Any, Any]:
    """``(to_dumpable_context, from_dumpable_context)`` for torch: the static data as ASCII text
    (pickle, for a class opted in, as base64), so a treespec written by ``treespec_dumps`` or
    ``torch.export.save`` reads back equal."""
    what = "torch treespec_loads"

    def to_dumpable_context(context: Any) -> str:
        data = dump_aux(context, "torch treespec_dumps")
        if data.startswith(MAGIC):
            return data.decode("ascii")
        return base64.b64encode(data).decode("ascii")

    def from_dumpable_context(dumpable: Any) -> Any:
        if type(dumpable) is not str:
            raise StaticDataError(
                f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: its "
                f"context is a {type(dumpable).__name__}, not text."
            )
        if dumpable.startswith(MAGIC.decode("ascii")):
            return load_aux(nodes, dumpable.encode("utf-8"), what)
        try:  # pickle as base64: what pytreekit wrote before, or for a class opted in
            data = base64.b64decode(dumpable, validate=True)
        except (binascii.Error, ValueError):
            data = dumpable.encode("utf-8")
        return load_aux(nodes, data, what)

    return to_dumpable_context, from_dumpable_context
