"""Aux data as bytes, for the registries that write treedefs to disk: ``jax.export`` (registered
automatically with the jax backend) and ``torch.export`` (the torch backend's dumpable context).

Artifacts are data: a serialized treedef stores each node's field names, static flags and static
values as static data (``static_data``, format 4), whose reader imports nothing, calls no function
and builds objects without their ``__init__``, so loading an artifact runs no code whatever bytes it
holds. A static value static data cannot hold is refused when the artifact is written, naming the
class and field.

Static data written with pickle (formats 1 and 2, by pytreekit 0.2 and the versions before this one,
and format 3 for a class opted in with ``pickle_static_fields``) is refused when read, naming what
wrote it, unless read inside ``allow_pickled_artifacts()``: unpickling runs whatever code the bytes
name. The format is told from pickle's opcodes, without unpickling.

Each class is registered under ``"<module>:<qualname>"`` for ``jax.export`` and
``"<module>.<qualname>"`` for torch (torch's own convention), so a fresh process that imports the
defining module finds it. The name is registered for reading when the class is decorated; the class
is registered for writing when it is first used. A registration made by hand with
``jax.export.register_pytree_node_serialization`` (JAX's documented route) wins whenever it is made:
pytreekit's own gives way (``_compat`` wraps JAX's function to remove it first). Defining a class
again under the same name (a notebook cell run twice) points the name at the newest class: artifacts
read afterwards produce instances of it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import sys
import threading
import warnings
import weakref
from typing import Any, NamedTuple, TypeVar

from .. import _markers as markers
from .._classes import NodeFunctions
from .._compat import export_lock, export_registries, jax_from_children
from .._messages import type_name
from .._names import MISSING, find_in, is_class, lookup
from .legacy import opted_in, pickled, unpickled
from .schema import FORMAT, MAGIC, MAX_DEPTH
from .static_data import (
    Reader,
    StaticDataError,
    UnencodableError,
    admits_value,
    codec_named,
    declared_types,
    decode,
    dumps_fields,
    hashable,
    is_pickle,
    is_safe_reference,
    parse,
    plain_tuple,
    type_name_of,
)

C = TypeVar("C", bound=type)

# 4: (4, "module:qualname" of the class written, field names, static flags, static values) as
# static data, or pickled for a class opted in. 3 (pytreekit 0.3): the same without the class. 2
# (the versions after 0.2): format 3, pickled. 1 (pytreekit 0.2): (1, field names or None for an
# annotated class, static names, static values), pickled.
_lock = threading.Lock()
# How many layouts one class without annotations may learn from artifacts: each costs memory for
# as long as the class lives.
MAX_LEARNED_LAYOUTS = 256
_learned: weakref.WeakKeyDictionary[type, set[tuple[tuple[str, ...], tuple[bool, ...]]]] = (
    weakref.WeakKeyDictionary()
)


def export_name(cls: type) -> str:
    """The name ``jax.export`` artifacts store for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


# -- writing ------------------------------------------------------------------------------------


def dump_aux(aux: Any, what: str) -> bytes:
    """``aux`` (``(layout, *static_values)``: ``NodeFunctions.carrying``) as bytes. ``what``
    names the consumer in the error for a value that cannot be stored."""
    layout, statics = aux[0], tuple(aux[1:])
    cls = layout.cls
    if opted_in(cls):
        state = (FORMAT, export_name(cls), layout.names, layout.static, statics)
        return pickled(state, cls, layout.static_names, what)
    try:
        return dumps_fields(
            cls,
            (FORMAT, export_name(cls), layout.names, layout.static),
            layout.static_names,
            statics,
        )
    except UnencodableError as error:
        raise _unencodable(cls, layout.static_names, statics, what, error) from error


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
            dumps_fields(cls, (), (name,), (value,))
        except UnencodableError as culprit:
            culprit.path = culprit.path.removeprefix("[0]")
            return TypeError(
                f"{what} stores the static fields of {owner} as data that loading cannot run, "
                f"but {owner}.{name}{culprit.path} holds a {culprit.value_type}: "
                f"{culprit.reason}. {culprit.advice}"
            )
    return TypeError(f"{what} cannot store the static fields of {owner}: {error}")


# -- reading ------------------------------------------------------------------------------------


def load_aux(nodes: NodeFunctions, data: bytes | bytearray | str, what: str = "jax.export") -> Any:
    """The aux data ``dump_aux`` wrote, in the form flatten gives, its layout interned in the
    class as it is now (``NodeFunctions.aux_data``). Any
    refusal is a ``StaticDataError`` (a ``ValueError``) naming the class; every check is made
    before the class's table learns a layout."""
    cls = nodes.cls
    owner = cls.__qualname__
    raw: bytes | str = data if isinstance(data, str) else bytes(data)  # text: a torch context
    try:
        if isinstance(raw, bytes) and is_pickle(raw):
            written, names, static, statics = _pickled_state(nodes, unpickled(raw, cls))
        else:
            written, names, static, statics = _data_state(nodes, raw)
    except StaticDataError as error:
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: {error}"
        ) from None
    if written is not None and written != export_name(cls):
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: it was written for "
            f"{written!r:.80}, not {export_name(cls)!r}; an artifact whose node names one class "
            f"and whose data another has been edited."
        )
    layout = nodes.table.for_names(names)
    if (layout.names, layout.static) != (names, static) or len(statics) != len(layout.static_names):
        written_static = tuple(n for n, s in zip(names, static, strict=True) if s)
        raise TypeError(
            f"cannot read the serialized treedef of {owner}: it was written when its "
            f"fields were {names} (static: {written_static}), but an instance holding them now "
            f"has fields {layout.names} (static: {layout.static_names}). Export the function "
            f"again with the class as it is now."
        )
    return nodes.aux_data(layout, statics)


def _data_state(nodes: NodeFunctions, raw: bytes | str) -> tuple[Any, Any, Any, tuple[Any, ...]]:
    """Formats 3 and 4 as static data: the head read as plain data and checked, the field names
    checked against the class, then each static value read as its field declares."""
    reader = Reader(_NO_IMPORT)
    tree = parse(raw, reader)
    size = len(tree) if type(tree) is list else 0
    if size not in (5, 6) or tree[0] != "t" or tree[1] != size - 2:  # format 4, or 3
        raise _no_layout(tree[1] if size > 1 else None)
    written: Any = tree[2] if size == 6 else None
    names, static = plain_tuple(tree[-3]), plain_tuple(tree[-2])
    value_nodes = plain_tuple(tree[-1], any_items=True)
    if names is None or static is None or value_nodes is None:
        raise _no_layout(tree[1])
    primary = nodes.table.primary
    if primary is None or names != primary.names or static != primary.static:
        if type(written) not in (str, type(None)) or not _well_formed(names, static, value_nodes):
            raise _no_layout(tree[1])
        _refuse_unknown_names(nodes, names)
    if len(value_nodes) != sum(static):
        raise _no_layout(tree[1])
    cls = nodes.cls
    declared = declared_types(cls)
    if not declared:  # a class without annotations: no field declares a type
        statics = decode(tree[-1], reader, 0)
        static_names = (
            primary.static_names
            if primary is not None and primary.names == names
            else [name for name, flag in zip(names, static, strict=True) if flag]
        )
        for index, value in enumerate(statics):
            if type(value) not in _ATOMS:
                _check_value(cls, static_names[index], index, value, None)
        return written, names, static, statics
    values = []
    static_names = [name for name, flag in zip(names, static, strict=True) if flag]
    for index, (name, node) in enumerate(zip(static_names, value_nodes, strict=True)):
        field_reader = reader.for_field(cls, name)
        try:
            value = decode(node, field_reader, 1)
        except StaticDataError as error:
            raise StaticDataError(f"the static field {name}: {error}") from None
        _check_value(cls, name, index, value, field_reader.declared)
        values.append(value)
    return written, names, static, tuple(values)


_NO_IMPORT: frozenset[str] = frozenset()
_ATOMS = frozenset({type(None), bool, int, float, str, bytes})


def _pickled_state(nodes: NodeFunctions, state: Any) -> tuple[Any, Any, Any, tuple[Any, ...]]:
    """Formats 1 to 4, unpickled (inside ``allow_pickled_artifacts``), checked as data is."""
    written: Any = None
    version = state[0] if type(state) is tuple and state else None
    if version == 1 and len(state) == 4:  # pytreekit 0.2
        _, names, static_names, statics = state
        if names is None:  # an annotated class's: its fields as they are now
            names = tuple(f.name for f in nodes.table.fields_of(nodes.cls))
        if type(names) is tuple and type(static_names) is tuple:
            state = (3, names, tuple(n in static_names for n in names), statics)
    if type(state) is tuple and len(state) == 5 and state[0] == FORMAT:
        written, state = state[1], (3, *state[2:])
    if not (type(state) is tuple and len(state) == 4 and state[0] in (2, 3)):
        raise _no_layout(version)
    _, names, static, statics = state
    if not _well_formed(names, static, statics) or type(statics) is not tuple:
        raise _no_layout(version)
    _refuse_unknown_names(nodes, names)
    static_names = [n for n, s in zip(names, static, strict=True) if s]
    for index, (name, value) in enumerate(zip(static_names, statics, strict=False)):
        _check_value(nodes.cls, name, index, value, None)
    return written, names, static, statics


def _no_layout(written: Any) -> StaticDataError:
    return StaticDataError(
        f"it holds no static data of a pytree class (format {written!r:.20}; this version "
        f"writes format {FORMAT})."
    )


def _well_formed(names: Any, static: Any, values: Any) -> bool:
    return (
        type(names) is tuple
        and type(static) is tuple
        and len(names) == len(static)
        and all(type(name) is str for name in names)
        and all(type(flag) is bool for flag in static)
        and len(values) == sum(static)
    )


def _check_value(cls: type, name: str, index: int, value: Any, declared: Any) -> None:
    if declared is not None and not admits_value(declared, value):
        raise StaticDataError(
            f"the static field {name} is declared {type_name_of(declared)}, and the artifact "
            f"holds a {type_name(value)} there."
        )
    if not hashable(value):
        raise StaticDataError(
            f"the static field {name} holds a {type_name(value)}, which is not hashable: no "
            f"treedef holds one, so pytreekit never writes it."
        )


def _refuse_unknown_names(nodes: NodeFunctions, names: tuple[str, ...]) -> None:
    """Refuse names no instance of the class could hold as fields, and layouts beyond the cap,
    before the class's table learns them. The table says which names its rule keeps (asked of an
    instance-like namespace holding the names); an artifact may besides never name what the class
    holds already (a method, a property) unless it is a declared field or a slot: the stored value
    would hide it."""
    table = nodes.table
    primary = table.primary
    known = primary.name_set if primary is not None else frozenset()
    if all(name in known for name in names) and len(names) == len(known):
        return
    storage = table.storage
    declared: frozenset[str] = getattr(table, "static_names", frozenset())
    kept: tuple[str, ...] = ()
    refused = next(
        (
            name
            for name in names
            if name not in known
            and name not in storage.slots
            and name not in declared
            and (lookup(table.cls, name) is not MISSING or name.startswith("__"))
        ),
        None,
    )
    if refused is None:
        attribute_names = getattr(table, "attribute_names", None)
        if attribute_names is None:  # an annotated class: its one layout's names only
            refused = next((n for n in names if n not in known), None)
        else:
            try:
                table.check_names(names)  # the field rule's refusals, as interning asks
                kept = attribute_names(_Probe(names, storage.has_dict))
            except TypeError:
                kept = ()
            refused = next((n for n in names if n not in kept), None)
    if refused is not None:
        raise StaticDataError(
            f"it names the field {refused!r:.60}, which no instance of the class can hold."
        )
    key = (names, tuple(n in declared for n in names))
    with _lock:
        learned = _learned.setdefault(table.cls, set())
        if key not in learned and len(learned) >= MAX_LEARNED_LAYOUTS:
            raise StaticDataError(
                f"it names a layout ({', '.join(names)}) beyond the {MAX_LEARNED_LAYOUTS} this "
                f"class may learn from artifacts."
            )
        learned.add(key)


class _Probe:
    """What the table's field rule reads of an instance (its ``__dict__``, its slots), holding
    ``names``: the rule keeps the names an instance could hold as fields."""

    def __init__(self, names: tuple[str, ...], has_dict: bool) -> None:
        self.__dict__.update(dict.fromkeys(names) if has_dict else {})
        self._slots = frozenset(names)

    def __getattr__(self, name: str) -> Any:
        if name in self.__dict__["_slots"]:
            return None
        raise AttributeError(name)


# -- auditing -----------------------------------------------------------------------------------


class ArtifactReference(NamedTuple):
    """A function, class or codec an artifact's static data names, and what loading it here
    would do: ``"safe"`` (a safe reference: loads), ``"declared"`` (a class that is no safe
    reference: loads only in a field whose declared type names it), ``"refused"``, ``"not
    imported"`` (its module is not), ``"missing"`` (its module has no such name), ``"codec"`` or
    ``"no codec"`` (a registered codec's name)."""

    name: str
    status: str


def artifact_references(artifact: bytes | bytearray | str) -> list[ArtifactReference]:
    """The references the static data in ``artifact`` names, each once, in order, read without
    loading it (nothing is imported, resolved names are not called).

    Args:
        artifact: What ``Exported.serialize()`` wrote, the bytes of a ``torch.export.save`` file,
            or the text ``treespec_dumps`` wrote.

    Returns:
        One ``ArtifactReference(name, status)`` per name; allow the ``"refused"`` ones you trust
        with ``add_safe_references`` before loading.

    >>> import pytreekit
    >>> pytreekit.artifact_references(b"PTK1" + b'["r","os:system"]')
    [ArtifactReference(name='os:system', status='refused')]
    """
    names: dict[str, str] = {}
    for tree in _static_trees(artifact):
        _collect(tree, names, 0)
    return [ArtifactReference(name, status) for name, status in names.items()]


_magic_text = MAGIC.decode("ascii")


def _static_trees(artifact: bytes | bytearray | str) -> list[Any]:
    """Every static-data JSON tree in ``artifact``: raw (jax.export stores the bytes), or a JSON
    string holding them (a torch treespec, also inside a ``.pt2`` file)."""
    if isinstance(artifact, (bytes, bytearray)):
        text = bytes(artifact).decode("latin-1")
    elif isinstance(artifact, str):
        text = artifact
    else:
        raise TypeError(
            f"artifact_references() takes the bytes of an artifact or a treespec's text, got "
            f"{type_name(artifact)}."
        )
    plain = json.JSONDecoder()
    trees = []
    start = text.find(_magic_text)
    while start >= 0:
        with contextlib.suppress(ValueError):
            if start > 0 and text[start - 1] == '"':  # inside JSON text: a string to unquote
                inner, _ = plain.raw_decode(text, start - 1)
                if isinstance(inner, str) and inner.startswith(_magic_text):
                    trees.append(plain.raw_decode(inner, len(_magic_text))[0])
            else:
                trees.append(plain.raw_decode(text, start + len(_magic_text))[0])
        start = text.find(_magic_text, start + 1)
    return trees


_NAMING = {"r": 1, "k": 1, "e": 1, "n": 1, "dc": 1, "p": 1}
_OPAQUE = frozenset({"c", "b", "f", "dt", "i", "u"})


def _collect(node: Any, names: dict[str, str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if type(node) is dict:
        for item in node.values():
            _collect(item, names, depth + 1)
        return
    if type(node) is not list or not node or type(node[0]) is not str or node[0] in _OPAQUE:
        return
    tag, parts = node[0], node[1:]
    if tag in _NAMING or tag == "x":
        if parts and type(parts[0]) is str and parts[0] not in names:
            names[parts[0]] = _codec_status(parts[0]) if tag == "x" else _status(parts[0])
        parts = parts[1:]
    for part in parts:
        _collect(part, names, depth + 1)


def _status(name: str) -> str:
    module, _, qualname = name.partition(":")
    if module not in sys.modules:
        return "not imported"
    found, _, _ = find_in(module, qualname)
    if found is MISSING:
        return "missing"
    if is_safe_reference(found):
        return "safe"
    return "declared" if is_class(found) else "refused"


def _codec_status(name: str) -> str:
    return "codec" if codec_named(name) is not None else "no codec"


# -- jax.export ---------------------------------------------------------------------------------


# jax.export's registries by type and by name: the same dicts for the life of the process.
_BY_TYPE, _BY_NAME = export_registries()


def register_jax_export(cls: type, nodes: NodeFunctions) -> None:
    """Let ``jax.export`` read artifacts naming ``cls`` now, and write them from the class's first
    use (called once per class, after its ``jax.tree_util`` registration)."""
    name = export_name(cls)

    def serialize_auxdata(aux: Any) -> bytes:
        return dump_aux(nodes.carrying(aux), "jax.export")

    def deserialize_auxdata(data: bytes) -> Any:
        return load_aux(nodes, data)

    setattr(serialize_auxdata, markers.CLASS, cls)
    setattr(deserialize_auxdata, markers.CLASS, cls)
    by_type, by_name = _BY_TYPE, _BY_NAME
    with export_lock:
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
        with export_lock:
            if cls not in by_type:  # a registration by hand, made before, stands
                by_type[cls] = (name, serialize_auxdata)

    nodes.add_first_use_hook(register_for_writing)


# -- torch --------------------------------------------------------------------------------------


def torch_dumpable(nodes: NodeFunctions) -> tuple[Any, Any]:
    """``(to_dumpable_context, from_dumpable_context)`` for torch: the static data as ASCII text
    (pickle, for a class opted in, as base64), so a treespec written by ``treespec_dumps`` or
    ``torch.export.save`` reads back equal."""
    what = "torch treespec_loads"

    def to_dumpable_context(context: Any) -> str:
        data = dump_aux(nodes.carrying(context), "torch treespec_dumps")
        if data.startswith(MAGIC):
            return data.decode("ascii")
        return base64.b64encode(data).decode("ascii")

    def from_dumpable_context(dumpable: Any) -> Any:
        if type(dumpable) is not str:
            raise StaticDataError(
                f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: its "
                f"context is a {type(dumpable).__name__}, not text."
            )
        if dumpable.startswith(_magic_text):
            return load_aux(nodes, dumpable, what)
        try:  # pickle as base64: what pytreekit wrote before, or for a class opted in
            data = base64.b64decode(dumpable, validate=True)
        except (binascii.Error, ValueError):
            data = dumpable.encode("utf-8")
        return load_aux(nodes, data, what)

    return to_dumpable_context, from_dumpable_context
