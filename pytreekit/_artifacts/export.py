"""Aux data as bytes for the registries that write treedefs to disk: ``jax.export`` (registered
with the jax backend) and ``torch.export`` (the torch backend's dumpable context). A node stores
its field names, static flags and static values as static data (``static_data``), so loading runs
no code; a value static data cannot hold is refused at writing, naming the class and field.
Pickled static data (``legacy``) is refused unless read inside ``allow_pickled_artifacts()``.

A class is registered as ``"module:qualname"`` for ``jax.export`` (for reading when decorated,
for writing at its first use) and ``"module.qualname"`` for torch. A registration made by hand
with ``jax.export.register_pytree_node_serialization`` wins (``_compat`` wraps JAX's function to
remove pytreekit's first); a class defined again under its name takes the name over.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import sys
import types
import warnings
import zipfile
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from .. import _markers as markers
from .._classes import NodeFunctions, restored, restricted_state_check
from .._compat import (
    TORCH_PYTREE,
    export_lock,
    export_registries,
    jax_from_children,
    json_scanner,
    torch_serialized_types,
)
from .._messages import type_name
from .._names import MISSING, find_in, is_class, lookup
from .legacy import opted_in, pickled, unpickled
from .schema import FORMAT, MAGIC, MAGIC_TEXT, MAX_DEPTH
from .static_data import (
    ATOMS,
    TOO_DEEP,
    Hooked,
    LoadedAux,
    Reader,
    StaticDataError,
    TooManyLayouts,
    UnencodableError,
    admits_value,
    allowing_advice,
    callable_advice,
    codec_named,
    declared_types,
    decode,
    dumps_fields,
    hashable,
    is_pickle,
    is_safe_reference,
    learn,
    no_field,
    no_room,
    overridable,
    parse,
    plain_tuple,
    refuses_partial,
    state_refusal,
    type_name_of,
    unadmitted,
)

C = TypeVar("C", bound=type)


def export_name(cls: type) -> str:
    """The name ``jax.export`` artifacts store for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


# -- writing ------------------------------------------------------------------------------------


def dump_aux(aux: Any, what: str) -> bytes:
    """``aux`` (``(layout, *static_values)``: ``NodeFunctions.carrying``) as bytes. ``what``
    names the consumer in the error for a value that cannot be stored."""
    layout, statics = aux[0], tuple(aux[1:])
    cls = layout.cls
    head = (FORMAT, export_name(cls), layout.names, layout.static)
    if opted_in(cls):
        return pickled((*head, statics), layout, what)
    try:
        return dumps_fields(cls, head, layout.static_names, statics)
    except UnencodableError as error:
        raise _unencodable(layout, statics, what, error) from error


def _unencodable(layout: Any, statics: tuple[Any, ...], what: str, error: Exception) -> TypeError:
    cls = layout.cls
    owner = cls.__qualname__
    for name, value in zip(layout.static_names, statics, strict=True):
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
    written, names, static, statics, built = _read_state(nodes, data, what)
    if written is not None and written != export_name(cls):
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: it was written for "
            f"{written!r:.80}, not {export_name(cls)!r}; an artifact whose node names one class "
            f"and whose data another has been edited."
        )
    table = nodes.table
    now_names, now_static = table.declared_for(names)
    if (now_names, now_static) != (names, static) or len(statics) != sum(now_static):
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: it was written when its "
            f"fields were {names} (static: {_static_names(names, static)}), but an instance "
            f"holding them now has fields {now_names} (static: "
            f"{_static_names(now_names, now_static)}). Export the function again with the class "
            f"as it is now."
        )
    primary = table.primary
    try:
        learn(built, [] if primary is not None and primary.names == names else [(cls, names)])
    except StaticDataError as error:
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {owner}: {error}"
        ) from None
    aux = nodes.aux_data(table.for_names(names), statics)
    # A class in its static values equal only to itself: a treedef torch reads back compares it
    # with == (jax.export flattens the instances it rebuilds instead), and JAX's metaclass makes
    # numpy:float32 == jax.numpy:float32, with one hash.
    return LoadedAux(aux) if type(aux) is tuple else aux


# (class written or None, field names, static flags, static values, the pytree class instances
# built among the values: learnt only once the whole aux data has passed)
State = tuple[Any, Any, Any, tuple[Any, ...], list[tuple[object, tuple[str, ...]]]]


def _read_state(nodes: NodeFunctions, data: bytes | bytearray | str, what: str) -> State:
    """(class written or ``None``, field names, static flags, static values), checked."""
    raw: bytes | str = data if isinstance(data, str) else bytes(data)  # text: a torch context
    try:
        if isinstance(raw, bytes) and is_pickle(raw):
            return _pickled_state(nodes, unpickled(raw, nodes.cls))
        return _data_state(nodes, raw)
    except StaticDataError as error:
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: {error}"
        ) from None


def _static_names(names: tuple[str, ...], static: tuple[bool, ...]) -> tuple[str, ...]:
    return tuple(name for name, flag in zip(names, static, strict=True) if flag)


def _data_state(nodes: NodeFunctions, raw: bytes | str) -> State:
    """Formats 3 and 4: the head as plain data, names against the class, values as declared."""
    reader = Reader(_NO_IMPORT)
    tree = parse(raw, reader)
    written, names, static, value_nodes = _head(tree)
    primary = nodes.table.primary
    if primary is None or names != primary.names or static != primary.static:
        if type(written) not in (str, type(None)) or not _well_formed(names, static, value_nodes):
            raise _no_layout(tree[1])
        _refuse_unknown_names(nodes.table, names)
    if len(value_nodes) != sum(static):
        raise _no_layout(tree[1])
    values = (
        _declared_values(nodes.cls, reader, names, static, value_nodes)
        if declared_types(nodes.cls)
        else _undeclared_values(primary, reader, tree[-1], names, static)
    )
    return written, names, static, values, reader.built


def _undeclared_values(
    primary: Any, reader: Reader, values_tree: Any, names: Any, static: Any
) -> tuple[Any, ...]:
    """The static values of a class without annotations: no field declares a type."""
    statics: tuple[Any, ...] = decode(values_tree, reader, 0)
    if primary is not None and primary.names == names:
        static_names = primary.static_names
    else:
        static_names = _static_names(names, static)
    for index, value in enumerate(statics):
        if type(value) not in ATOMS:
            _check_value(static_names[index], value, None)
    return statics


def _head(tree: Any) -> tuple[Any, Any, Any, tuple[Any, ...]]:
    """(class written, names, static flags, value trees) of format 4 (or 3: no class written)."""
    size = len(tree) if type(tree) is list else 0
    if size not in (5, 6) or tree[0] != "t" or tree[1] != size - 2:
        raise _no_layout(tree[1] if size > 1 else None)
    names, static = plain_tuple(tree[-3]), plain_tuple(tree[-2])
    value_nodes = plain_tuple(tree[-1], any_items=True)
    if names is None or static is None or value_nodes is None:
        raise _no_layout(tree[1])
    return (tree[2] if size == 6 else None), names, static, value_nodes


def _declared_values(
    cls: type, reader: Reader, names: Any, static: Any, value_nodes: tuple[Any, ...]
) -> tuple[Any, ...]:
    values = []
    for name, node in zip(_static_names(names, static), value_nodes, strict=True):
        field_reader = reader.for_field(cls, name)
        try:
            value = decode(node, field_reader, 1)
        except StaticDataError as error:
            raise StaticDataError(f"the static field {name}: {error}") from None
        _check_value(name, value, field_reader.declared)
        values.append(value)
    return tuple(values)


_NO_IMPORT: frozenset[str] = frozenset()


def _pickled_state(nodes: NodeFunctions, state: Any) -> State:
    """Formats 1 to 4, unpickled (inside ``allow_pickled_artifacts``), checked as data is."""
    version = state[0] if type(state) is tuple and state else None
    written, state = _as_format_3(nodes, state, version)
    if not (type(state) is tuple and len(state) == 4 and state[0] in (2, 3)):
        raise _no_layout(version)
    _, names, static, statics = state
    if not _well_formed(names, static, statics) or type(statics) is not tuple:
        raise _no_layout(version)
    _refuse_unknown_names(nodes.table, names)
    for name, value in zip(_static_names(names, static), statics, strict=False):
        _check_value(name, value, None)
    return written, names, static, statics, []


def _as_format_3(nodes: NodeFunctions, state: Any, version: Any) -> tuple[Any, Any]:
    """(class written or ``None``, the state as format 3 would hold it)."""
    if version == 1 and len(state) == 4:  # pytreekit 0.2
        state = _from_format_1(nodes, state)
    if type(state) is tuple and len(state) == 5 and state[0] == FORMAT:
        return state[1], (3, *state[2:])
    return None, state


def _from_format_1(nodes: NodeFunctions, state: tuple[Any, ...]) -> tuple[Any, ...]:
    _, names, static_names, statics = state
    if names is None:  # an annotated class's: its fields as they are now
        names = tuple(f.name for f in nodes.table.fields_of(nodes.cls))
    if type(names) is tuple and type(static_names) is tuple:
        return (3, names, tuple(n in static_names for n in names), statics)
    return state


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


def _check_value(name: str, value: Any, declared: Any) -> None:
    if declared is not None and not admits_value(declared, value):
        raise StaticDataError(
            f"the static field {name} is declared {type_name_of(declared)}, and the artifact "
            f"holds a {type_name(value)} there{callable_advice(declared, value, loading=True)}."
        )
    if not hashable(value):
        raise StaticDataError(
            f"the static field {name} holds a {type_name(value)}, which is not hashable: no "
            f"treedef holds one, so pytreekit never writes it."
        )


def _refuse_unknown_names(table: Any, names: tuple[str, ...]) -> None:
    """Refuse names no instance of the class could hold as fields, and layouts beyond the cap,
    before the class's table learns them: the table's field rule says which (``refusal``); an
    artifact may besides never name what the class holds already (a method, a property) unless
    it is a declared field or a slot: the stored value would hide it."""
    primary = table.primary
    known = primary.name_set if primary is not None else frozenset()
    if all(name in known for name in names) and len(names) == len(known):
        return
    declared: frozenset[str] = getattr(table, "static_names", frozenset())
    refused = _hiding(table, names, known.union(declared))
    if refused is not None:
        raise StaticDataError(
            f"it names the field {refused!r:.60}, which no instance of the class can hold: the "
            f"class holds a method or other attribute under that name, which it would hide."
        )
    refusal = table.refusal(names)
    if refusal is not None:
        raise StaticDataError(f"{no_field(table.cls, *refusal)}.")
    why = no_room(table.cls, (names,))
    if why is not None:
        raise TooManyLayouts(f"{why}.")


def _hiding(table: Any, names: tuple[str, ...], fields: frozenset[str]) -> str | None:
    """The first name that would hide what the class holds (or a dunder name)."""
    return next(
        (
            name
            for name in names
            if name not in fields
            and name not in table.storage.slots
            and (lookup(table.cls, name) is not MISSING or name.startswith("__"))
            and not overridable(table, name)
        ),
        None,
    )


# -- torch.load(weights_only=True) -------------------------------------------------------------

_RESTRICTED = "torch.load(weights_only=True)"
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)
_NOT_WRITTEN = (
    "pytreekit writes no such state for the class as it is now: the checkpoint was edited, or "
    "written from another version of the class (save it again from the class as it is now)."
)


def check_restricted_state(cls: type, state: Any) -> None:
    """Refuse a state torch's weights-only unpickler hands ``cls.__setstate__`` where ``load_aux``
    would refuse the same fields as aux data, before anything is written: its names (for an
    annotated class exactly its fields, static as declared; none hiding what the class holds),
    each static value (its declared type, the references it holds, hashable), and the layout
    cap; then record the layout it names. A ``StaticDataError`` naming the class and field."""
    try:
        spec = getattr(cls, markers.SPEC)
        names, static, items = _restricted_parts(state, _may_be_unset(spec.fields))
        table = spec.table
        _restricted_names(table, names, static)
        declared = declared_types(cls)
        for name, is_static in zip(names, static, strict=True):
            if name in items:
                hint, admitted = declared.get(name, (None, ()))
                value = restored(items[name])
                if is_static:
                    _restricted_value(name, value, hint, admitted)
                else:  # a child holds what the model calls too (a submodule)
                    found = unadmitted(value, admitted, leaf=True)
                    _refuse_chosen(f"the field {name}", found, hint)
        learn([], [(table.cls, names)])
    except (StaticDataError, RecursionError) as error:
        why = error if type(error) is not RecursionError else _TOO_DEEP_TO_READ
        # A file naming more layouts than one read may teach is made to fill memory, whoever
        # wrote it: the unpickler that runs any code is no way around that.
        trust = "" if isinstance(error, TooManyLayouts) else _TRUSTED
        raise StaticDataError(
            f"{_RESTRICTED} cannot restore a {cls.__module__}.{cls.__qualname__}: {why} "
            f"Nothing was loaded{trust}."
        ) from None


_TRUSTED = "; a checkpoint you trust also loads with weights_only=False"


_TOO_DEEP_TO_READ = "its state holds values nested deeper than Python can read."


def _may_be_unset(fields: Any) -> frozenset[str]:
    """The fields an honest instance may not have set yet: ``init=False`` without a default (a
    cache set later), whose names ``pytree_getstate`` writes without a value."""
    return frozenset(
        f.name
        for f in fields or ()
        if not f.init and f.default is MISSING and f.default_factory is MISSING
    )


def _restricted_parts(
    state: Any, may_be_unset: frozenset[str]
) -> tuple[tuple[str, ...], tuple[bool, ...], dict[str, Any]]:
    """(field names, static flags, values by name) of a state as ``pytree_getstate`` writes it."""
    items = _state_items(state)
    why = state_refusal(items, may_be_unset)
    if why is not None:
        raise StaticDataError(f"its state {why}. {_NOT_WRITTEN}")
    names, static = items.pop(markers.FIELDS)
    return names, static, items


def _state_items(state: Any) -> dict[Any, Any]:
    """A state's items: a dict, or a ``(dict, slots dict)`` pair, either part ``None``."""
    parts = state if type(state) is tuple and len(state) == 2 else (state,)
    if not all(part is None or type(part) is dict for part in parts) or parts == (None, None):
        raise StaticDataError(
            f"its state is a {type_name(state)}, not the dict pytreekit writes. {_NOT_WRITTEN}"
        )
    items: dict[Any, Any] = {}
    for part in parts:
        items.update(part or {})
    return items


def _restricted_names(table: Any, names: tuple[str, ...], static: tuple[bool, ...]) -> None:
    """The names and flags as ``load_aux`` asks them: declared now, none hiding, within the cap."""
    now_names, now_static = table.declared_for(names)
    if now_names != names:  # an annotated class: exactly its fields, in their order
        raise StaticDataError(f"{_undeclared(names, now_names)}. {_NOT_WRITTEN}")
    if now_static != static:
        raise StaticDataError(
            f"it marks the fields {_static_names(names, static)} static, where the class "
            f"declares {_static_names(names, now_static)} static. {_NOT_WRITTEN}"
        )
    primary = table.primary
    if primary is None or primary.names != names:
        _refuse_unknown_names(table, names)


def _undeclared(names: tuple[str, ...], declared: tuple[str, ...]) -> str:
    """How a state's field names differ from an annotated class's, as a clause."""
    missing = next((name for name in declared if name not in names), None)
    if missing is not None:
        return f"it leaves out the field {missing!r}"
    extra = next((name for name in names if name not in declared), None)
    if extra is not None:
        return f"it names the field {extra!r:.60}, which the class does not declare"
    return f"it holds the fields in the order {names}, where the class declares {declared}"


def _restricted_value(name: str, value: Any, hint: Any, admitted: tuple[type, ...]) -> None:
    found = unadmitted(value, admitted)
    _refuse_chosen(f"the static field {name}", found, hint)
    _check_value(name, value, hint)
    if found is not MISSING:
        raise StaticDataError(
            f"the static field {name} holds a {type_name(found)}, of a class an artifact may "
            f"name there only if it is a safe reference or the field's declared type names it."
        )


def _refuse_chosen(field: str, found: Any, hint: Any) -> None:
    """Refuse what ``unadmitted`` found where it is a class or a function (the checkpoint would
    choose what the model calls), a tensor's hooks, or a value nested too deep."""
    if type(found) is Hooked:
        raise StaticDataError(
            f"{field} holds a tensor whose {found.attribute} holds hooks, which autograd would "
            f"call (so the checkpoint would decide what the model calls); torch.save writes no "
            f"hooks, so the checkpoint was written by other means."
        )
    if found is TOO_DEEP:
        raise StaticDataError(
            f"{field} holds values nested more than {MAX_DEPTH} levels deep, deeper than "
            f"pytreekit looks for a function or class the checkpoint would choose."
        )
    if found is not MISSING and (is_class(found) or isinstance(found, _FUNCTIONS)):
        what = "class" if is_class(found) else "function"
        ref = f"{getattr(found, '__module__', '?')}:{getattr(found, '__qualname__', '?')}"
        allowed = "the safe references" if hint is None else "the safe references nor a class"
        raise StaticDataError(
            f"{field} holds the {what} {ref!r:.120}, which is none of {allowed}"
            f"{'' if hint is None else ' its declared type names'} (so the checkpoint would "
            f"decide what the model calls). {allowing_advice(ref)}."
        )


restricted_state_check(check_restricted_state)


# -- auditing -----------------------------------------------------------------------------------


class ArtifactReference(NamedTuple):
    """A function, class or codec an artifact's static data names, and what loading it here
    would do: ``"safe"`` (a safe reference: loads), ``"declared"`` (a class that is no safe
    reference: loads only in a field whose declared type names it, and where the field reads it
    as a function only if its ``Callable``'s result names it), ``"refused"``, ``"not
    imported"`` (its module is not), ``"missing"`` (its module has no such name), ``"codec"`` or
    ``"no codec"`` (a registered codec's name)."""

    name: str
    status: str


def artifact_references(artifact: bytes | bytearray | str) -> list[ArtifactReference]:
    """The references the static data in ``artifact`` names, each once, in order, read without
    loading it (nothing is imported, resolved names are not called).

    Args:
        artifact: What ``Exported.serialize()`` wrote, the bytes of a ``torch.export.save`` file
            (a zip archive: every member is read as torch reads the program and its treespecs,
            compressed or not, whatever its name), or the text ``treespec_dumps`` wrote (read as
            JSON, as ``treespec_loads`` reads it, and searched as it is).

    Returns:
        One ``ArtifactReference(name, status)`` per name; allow the ``"refused"`` ones you trust
        with ``add_safe_references`` before loading. In a treespec, also the names torch's own
        reader resolves: an enum's or a ``defaultdict`` factory's (``"refused"`` where torch
        would import its module), and a namedtuple node's class (``"refused"`` where it is none).

    Raises:
        ValueError: ``artifact`` is a zip archive holding a member that cannot be read (a bad
            checksum, say), which torch's own reader might read, or whose members decompress to
            more than 100 times its size (or 256 MiB more than it); looks like a zip and does not
            read as one; has a central directory not where its end record says (torch's reader
            may read another archive); or makes the audit read more than 16 times its size (and
            4 MiB more) after its magics: do not load it.

    >>> import pytreekit
    >>> pytreekit.artifact_references(b"PTK1" + b'["r","os:system"]')
    [ArtifactReference(name='os:system', status='refused')]
    """
    names: dict[str, str] = {}
    for tree in _static_trees(artifact):
        _collect(tree, names, 0)
    return [ArtifactReference(name, status) for name, status in names.items()]


_OPAQUE = frozenset({"c", "b", "f", "dt", "i", "u"})


def _static_trees(artifact: bytes | bytearray | str) -> list[Any]:
    """Every static-data tree in ``artifact``: raw (jax.export), in JSON text as torch reads it
    (a treespec), in the members of a zip archive (a .pt2)."""
    data: bytes | str
    if isinstance(artifact, (bytes, bytearray)):
        data = bytes(artifact)
        text = data.decode("latin-1")
    elif isinstance(artifact, str):
        data = text = artifact
    else:
        raise TypeError(
            f"artifact_references() takes the bytes of an artifact or a treespec's text, got "
            f"{type_name(artifact)}."
        )
    # The scanner itself: where no value starts it stops at once, where raw_decode would build
    # an error counting the lines before it (each magic in a long text, quadratic).
    scan = json_scanner()
    trees: list[Any] = []
    _raw_trees(text, scan, trees)
    _json_trees(data, scan, trees)
    if isinstance(data, bytes):
        _archive_trees(data, scan, trees)
    return trees


Scan = Callable[[str, int], tuple[Any, int]]
# How many times JSON text may be quoted as a string in the JSON the audit reads: a .pt2 holds
# a treespec as a string in its program.
_QUOTED = 4


# A value after a magic is read from a window of the text, not the whole text: where a value starts
# and then fails, json's scanner raises an error that counts the lines from the start of the text
# it was given (a 1.2 MB .pt2 of '["PTK1' repeated took 65 s to audit). A window that cuts a value
# short grows (times 4). The scanner's work (what it read, or where it failed: what the error
# counts) and every grown window are charged; past _SCAN_FACTOR times the text's size plus
# _SCAN_EXTRA the text is refused. A first window costs at most _WINDOW per magic (4 characters):
# the audit's work is linear in the text's size. An honest artifact's value fits its first window.
_WINDOW = 512
_SCAN_FACTOR = 16
_SCAN_EXTRA = 2**22


class _ScanFailed(ValueError):
    """A value that does not read, where (in the whole text) its reading stopped."""

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


class _Windows:
    """json's scanner on windows of one text, its work charged to a budget linear in the text's
    size (a ``ValueError`` past it)."""

    def __init__(self, text: str, scan: Scan) -> None:
        self.text, self.scan = text, scan
        self.left = _SCAN_FACTOR * len(text) + _SCAN_EXTRA

    def __call__(self, start: int) -> tuple[Any, int]:
        size = _WINDOW
        while True:
            window = self.text[start : start + size]
            try:
                value, end = self.scan(window, 0)
            except json.JSONDecodeError as error:
                self._charge(error.pos)
                if start + size >= len(self.text) or not _cut_short(error, len(window)):
                    raise _ScanFailed(start + error.pos) from None
                size *= 4
                self._charge(size)
                continue
            self._charge(end)
            return value, start + end

    def _charge(self, work: int) -> None:
        self.left -= work
        if self.left < 0:
            raise ValueError(
                f"artifact_references() reads at most {_SCAN_FACTOR} times a text's size (plus "
                f"{_SCAN_EXTRA} characters) of JSON after its magics, and this artifact's "
                f"{len(self.text)} characters reach that: its values after {MAGIC_TEXT!r} do not "
                f"read as static data does; do not load it."
            )


def _cut_short(error: json.JSONDecodeError, size: int) -> bool:
    """Whether ``error`` may come from a value the window's end cut short."""
    return error.pos >= size - 6 or error.msg.startswith("Unterminated string")


def _raw_trees(text: str, scan: Scan, trees: list[Any]) -> None:
    """The tree following each magic in ``text`` (what jax.export's aux data holds), and in each
    JSON string starting with one (a treespec's context, quoted once)."""
    windows = _Windows(text, scan)
    skip = 0  # the end of the last JSON string read here: a quote before it is inside it
    start = text.find(MAGIC_TEXT)
    while start >= 0:
        with contextlib.suppress(_ScanFailed, StopIteration, RecursionError):
            _keep(windows(start + len(MAGIC_TEXT))[0], trees)
        if start > skip and text[start - 1] == '"':
            skip = _quoted_tree(windows, start - 1, trees)
        start = text.find(MAGIC_TEXT, start + 1)


def _quoted_tree(windows: _Windows, quote: int, trees: list[Any]) -> int:
    """The tree in the JSON string starting at ``quote``; where the string ends. A magic after a
    quote before that end is inside the string, and the string read from there would be the rest
    of this one: reading it again made the audit quadratic in the text's size."""
    try:
        inner, end = windows(quote)
    except _ScanFailed as error:
        # Where reading stopped (at the end of the text if no quote closes it: the error names
        # the start); read from an escaped quote before that, a string stops there too.
        return len(windows.text) if error.pos <= quote else error.pos
    except (StopIteration, RecursionError):
        return quote + 1
    with contextlib.suppress(ValueError, StopIteration, RecursionError):
        if isinstance(inner, str) and inner.startswith(MAGIC_TEXT):
            _keep(windows.scan(inner, len(MAGIC_TEXT))[0], trees)
    return end


def _keep(tree: Any, trees: list[Any]) -> None:
    """Keep a tree only if it is a list, as static data is: a value after each magic (a string
    such as the ``"PTK1"`` of ``"PTK1"PTK1"...``) held the audit's memory at ten times the
    text's size."""
    if type(tree) is list and tree:
        trees.append(tree)


def _json_trees(data: bytes | str, scan: Scan, trees: list[Any]) -> None:
    """The trees in JSON ``data`` read as torch reads a treespec (or a .pt2 its program): every
    string starting with the magic, in JSON strings holding JSON (quoted up to ``_QUOTED``
    times), escapes such as ``\\u0050`` undone."""
    try:
        root = json.loads(data)
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
        return
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, level = stack.pop()
        kind = type(node)
        if kind is dict or kind is list:
            parts = node.values() if kind is dict else node
            stack.extend((part, level) for part in reversed(list(parts)))
            if kind is dict:
                _torch_routes(node, trees)
        elif kind is str:
            _json_string(node, level, scan, trees, stack)


def _torch_routes(node: dict[str, Any], trees: list[Any]) -> None:
    """Note what torch's own treespec reader would resolve from a JSON object, as a tree of one
    name: the module and name an enum (``__enum__``, ``fqn``) or a defaultdict's factory names,
    which torch imports; a namedtuple node's class, which torch calls with its children."""
    fqn, module, name = node.get("fqn"), node.get("default_factory_module"), None
    if "__enum__" in node and type(fqn) is str:
        name = fqn
    elif type(module) is str and type(node.get("default_factory_name")) is str:
        name = f"{module}:{node['default_factory_name']}"
    if name is not None:
        trees.append([_TORCH_IMPORT, name])
    if type(node.get("context")) is str and _reads_a_namedtuple(node.get("type")):
        trees.append([_TORCH_NAMEDTUPLE, node["context"]])


def _reads_a_namedtuple(name: Any) -> bool:
    """Whether torch reads a node of type ``name``'s context as a namedtuple's class: the type
    ``collections.namedtuple``, or a namedtuple registered with torch under ``name``."""
    if name == "collections.namedtuple":
        return True
    cls = torch_serialized_types().get(name) if type(name) is str else None
    return cls is not None and is_namedtuple(cls)


def is_namedtuple(cls: Any) -> bool:
    """Whether ``cls`` is a namedtuple class, read without running its code."""
    return is_class(cls) and issubclass(cls, tuple) and lookup(cls, "_fields") is not MISSING


def _json_string(
    node: str, level: int, scan: Scan, trees: list[Any], stack: list[tuple[Any, int]]
) -> None:
    """A string of the JSON the audit reads: static data, JSON to read, or neither. Each string
    is scanned once, so what a failed scan's error counts (its length) is linear in the text."""
    if node.startswith(MAGIC_TEXT):
        with contextlib.suppress(ValueError, StopIteration, RecursionError):
            _keep(scan(node, len(MAGIC_TEXT))[0], trees)
    elif level < _QUOTED and node.lstrip(" \t\n\r")[:1] in ("[", "{"):
        with contextlib.suppress(ValueError, RecursionError):
            stack.append((json.loads(node), level + 1))


# The audit decompresses the members of a zip archive up to a budget: 100 times the archive's
# size, and at most 256 MiB more than that size. An archive torch.export.save wrote is stored, not
# compressed (its members are smaller than it is); deflated JSON is about 10 times smaller, so an
# honest archive fits. Deflate reaches about 1000 times: past the budget an archive is refused, its
# audit time and memory bounded by the archive's size (a member of "PTK1 repeated, 57 kB deflated
# to 40 MB, took 25 s and 644 MB).
_AMPLIFICATION = 100
_EXTRA_CAP = 256 * 2**20


def _budget(size: int) -> int:
    """How many decompressed bytes the audit reads of a zip archive of ``size`` bytes."""
    return size + min((_AMPLIFICATION - 1) * size, _EXTRA_CAP)


def _archive_trees(data: bytes, scan: Scan, trees: list[Any]) -> None:
    """The trees in every member of a zip archive (a .pt2), compressed or not. Every member:
    ``torch.export.load`` reads a program from each ``models/`` member whatever its name ends
    with, and the members torch reads change between its versions."""
    archive = _archive(data)
    if archive is None:
        return
    left = _budget(len(data))
    for member in archive.infolist():
        content = _read_member(archive, member, left, len(data))
        left -= len(content)
        _raw_trees(content.decode("latin-1"), scan, trees)
        _json_trees(content, scan, trees)


_LOCAL_HEADER = b"PK\x03\x04"
_END_RECORD = b"PK\x05\x06"
_END_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_RECORD = b"PK\x06\x06"
_ZIP64_SIZES = (20, 56)  # the locator's and the record's sizes (the record without extra data)


def _end_record(data: bytes) -> int:
    """Where zipfile (and torch's reader) read ``data``'s end-of-central-directory record: its
    last 22 bytes if they are one without a comment, else the last signature in the last 64 KiB
    and 22 bytes (-1: none)."""
    last = len(data) - _END_SIZE
    if last >= 0 and data[last : last + 4] == _END_RECORD and data[-2:] == b"\0\0":
        return last
    return data.rfind(_END_RECORD, max(0, last - 0xFFFF))


def _archive(data: bytes) -> zipfile.ZipFile | None:
    """The zip archive ``data`` is (``None``: it does not look like one).
    Refused (a ``ValueError``): one zipfile cannot read, which torch's reader (miniz) may read;
    one whose central directory is not where its end record says (see ``_directory_found``)."""
    end = _end_record(data)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except Exception as error:  # BadZipFile, a bad extra field or name, ...
        if not _looks_like_zip(data, end):
            return None
        raise _unreadable("", error) from None
    found = _directory_found(data, end)
    if found != len(archive.infolist()):
        said = f"counts {found}" if isinstance(found, int) else found
        raise ValueError(
            f"artifact_references() reads {len(archive.infolist())} members in the zip archive "
            f"given, and its end record {said}: its central directory is not where the end "
            f"record says (data before it, a second directory, ...): torch's reader may read "
            f"another archive from it; do not load the archive."
        )
    return archive


def _looks_like_zip(data: bytes, end: int) -> bool:
    """Whether ``data`` starts with a local header or has an end record (at ``end``) locating a
    central directory entry or a zip64 record, as any archive torch's reader reads has."""
    if data.startswith(_LOCAL_HEADER):
        return True
    if end < 0 or len(data) - end < _END_SIZE:
        return False
    offset = int.from_bytes(data[end + 16 : end + 20], "little")
    return offset == 0xFFFFFFFF or data[offset : offset + 4] == b"PK\x01\x02"


def _directory_found(data: bytes, end: int) -> str | int:
    """How many members the end record at ``end`` (or its zip64 record) counts, if the central
    directory it locates ends where that record starts, as zipfile reads it (zipfile reads the
    directory just before the record, miniz at the offset the record gives: a file with two
    directories is two archives); else what is wrong."""
    record = end
    if end >= 0 and data[end - 20 : end - 16] == _ZIP64_LOCATOR:
        record = int.from_bytes(data[end - 12 : end - 4], "little")
        if data[record : record + 4] != _ZIP64_RECORD or record != end - sum(_ZIP64_SIZES):
            return "a zip64 record that is not where zipfile reads it"
        fields = [
            int.from_bytes(data[record + at : record + at + 8], "little") for at in (32, 40, 48)
        ]
    else:
        fields = [
            int.from_bytes(data[end + at : end + at + n], "little")
            for at, n in ((10, 2), (12, 4), (16, 4))
        ]
    entries, size, offset = fields
    if end < 0 or offset + size != record:
        return f"locates a central directory of {size} bytes at {offset}, not ending at {record}"
    return entries


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, left: int, size: int) -> bytes:
    """The bytes of ``member``, read up to ``left`` decompressed bytes: beyond that (or the size
    it declares beyond that) a ``ValueError``, as for a member that cannot be read."""
    name = member.filename
    if member.file_size <= left:
        try:
            with archive.open(member) as stream:
                content = stream.read(left + 1)  # streams: decompresses at most this much
        except Exception as error:  # a bad CRC, a compression zipfile does not know, ...
            raise _unreadable(f"{name!r:.200} in ", error) from None
        if len(content) <= left:
            return content
    raise ValueError(
        f"artifact_references() reads at most {_budget(size)} decompressed bytes of a zip "
        f"archive of {size} bytes ({_AMPLIFICATION} times its size, at most {_EXTRA_CAP} bytes "
        f"more than it), and its members reach that at {name!r:.200}: a .pt2 that "
        f"torch.export.save wrote is not compressed; this archive may be a zip bomb: do not "
        f"load it."
    )


def _unreadable(what: str, error: Exception) -> ValueError:
    return ValueError(
        f"artifact_references() cannot read {what}the zip archive given "
        f"({type(error).__name__}: {error!s:.200}), which torch's reader may read: do not load "
        f"the archive."
    )


def _collect(node: Any, names: dict[str, str], depth: int) -> None:
    if depth <= MAX_DEPTH:
        if type(node) is list and node[:1] == ["fp"]:
            _partial_status(node[1:], names)
        for part in _parts(node, names):
            _collect(part, names, depth + 1)


def _parts(node: Any, names: dict[str, str]) -> Iterable[Any]:
    """What ``node`` holds besides names, after noting the name it holds, if any."""
    if type(node) is dict:
        values: Iterable[Any] = node.values()
        return values
    if type(node) is not list or not node or type(node[0]) is not str or node[0] in _OPAQUE:
        return ()
    parts: list[Any] = node[1:]
    status = _NAMING.get(node[0])
    if status is not None:
        if parts and type(parts[0]) is str and parts[0] not in names:
            names[parts[0]] = status(parts[0])
        parts = parts[1:]
    return parts


def _partial_status(parts: list[Any], names: dict[str, str]) -> None:
    """Note a safe function as ``"refused"`` where loading refuses the partial of it (its
    arguments would make it write into the caller's arrays), whatever else names it."""
    name = _function_name(parts)
    if name is None or _status(name) != "safe":
        return
    args = tuple(parts[1][1:]) if type(parts[1]) is list and parts[1][:1] == ["t"] else ()
    stored = parts[2]
    keys = stored if type(stored) is dict else stored[1::2] if type(stored) is list else ()
    module, _, qualname = name.partition(":")
    keywords = {key: None for key in keys if type(key) is str}
    if refuses_partial(find_in(module, qualname)[0], args, keywords):
        names[name] = "refused"


def _function_name(parts: list[Any]) -> str | None:
    """The name of an ``"fp"`` node's function stored by name (``None``: it is not)."""
    if len(parts) != 3 or type(parts[0]) is not list or len(parts[0]) != 2:
        return None
    tag, name = parts[0]
    return name if tag == "r" and type(name) is str else None


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


# Tags of the trees ``_torch_routes`` notes: no tag of static data (``schema.TAGS``).
_TORCH_IMPORT, _TORCH_NAMEDTUPLE = "torch import", "torch namedtuple"


def _import_status(name: str) -> str:
    """A name torch's reader imports and reads with ``getattr``: refused where its module is not
    imported yet (torch would import it, running its code) or the name is in no namespace (a
    module's ``__getattr__`` or a descriptor would answer, running code), else as any name."""
    status = "refused" if name.partition(":")[0] not in sys.modules else _status(name)
    return "refused" if status == "missing" else status


def _namedtuple_status(name: str) -> str:
    """A namedtuple node's class, by its name in torch's registry: refused where it is no
    namedtuple (torch would call it; pytreekit's guard refuses it at load)."""
    if TORCH_PYTREE not in sys.modules:
        return "not imported"
    cls = torch_serialized_types().get(name)
    if cls is None:
        return "missing"
    return "safe" if is_namedtuple(cls) else "refused"


_NAMING: dict[str, Callable[[str], str]] = {
    **dict.fromkeys(("r", "k", "e", "n", "dc", "p"), _status),
    "x": _codec_status,
    _TORCH_IMPORT: _import_status,
    _TORCH_NAMEDTUPLE: _namedtuple_status,
}


# -- jax.export ---------------------------------------------------------------------------------


# jax.export's registries by type and by name: the same dicts for the life of the process.
_BY_TYPE, _BY_NAME = export_registries()


def _counted(nodes: NodeFunctions, from_children: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.export`` rebuilds a node from its aux data and the children its artifact gives it:
    as many as its layout has leaves, or the artifact was edited (a child dropped, a missing one
    a ``StopIteration`` from deep inside)."""

    def rebuilt(aux: Any, children: Any) -> Any:
        children = tuple(children)
        leaves_of(nodes, aux, len(children), "jax.export")
        return from_children(aux, children)

    return rebuilt


def leaves_of(nodes: NodeFunctions, aux: Any, count: int, what: str) -> int:
    """How many leaves the layout ``aux`` names holds: a ``StaticDataError`` naming the class if
    its node was given ``count`` children instead (an edited artifact: a child dropped, or a
    missing one a bare error from deep inside)."""
    layout = nodes.carrying(aux)[0]
    leaves = len(layout.child_names)
    if count != leaves:
        raise StaticDataError(
            f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: its node "
            f"has {count} children where its fields {layout.names} hold {leaves} leaves; the "
            f"artifact has been edited."
        )
    return leaves


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
            by_name[name] = (cls, deserialize_auxdata, _counted(nodes, jax_from_children(cls)))
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
        if dumpable.startswith(MAGIC_TEXT):
            return load_aux(nodes, dumpable, what)
        try:  # pickle as base64: what pytreekit wrote before, or for a class opted in
            data = base64.b64decode(dumpable, validate=True)
        except (binascii.Error, ValueError):  # not base64 (ValueError: not ASCII)
            raise StaticDataError(
                f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: its "
                f"context is neither static data (text starting {MAGIC_TEXT!r}) nor base64 of "
                f"a pickle, which is all pytreekit writes; the treespec has been edited."
            ) from None
        if not is_pickle(data):  # static data is text: as base64, it hides from the audit
            raise StaticDataError(
                f"{what} cannot read the serialized treedef of {nodes.cls.__qualname__}: "
                f"its context is base64 of {_start(data)}, where pytreekit writes only "
                f"pickle (static data is text starting {MAGIC_TEXT!r}); the treespec has "
                f"been edited."
            )
        return load_aux(nodes, data, what)

    return to_dumpable_context, from_dumpable_context


def _start(data: bytes) -> str:
    if data.startswith(MAGIC):
        return "static data"
    return f"data starting {data[:8]!r}"
