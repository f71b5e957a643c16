"""A class's node functions: the flatten, unflatten and keyed flattens the registries hold (made
once per class), ``observe`` and ``replace``, the code they run as the class's layout table learns,
and the generic paths behind them.

Aux data is ``(layout, *static_values)``: the layout says which fields the children and the static
values are, so any treedef can be unflattened, also after the class was decorated again and in a
process that never built an instance. The layout an annotated class declares is the exception,
whose aux data reads as ``register_dataclass``'s: its static values alone (``Layout.plain``), or,
without static fields, one object per class that prints as ``None`` (``Layout.bare``).
``carrying`` reads every form, ``aux_data`` writes the one flatten gives.

The source of generated code (the node functions', the ``__init__``s') is compiled here, the one
place: registered with ``linecache`` while its class lives, so tracebacks and debuggers show it.
"""

from __future__ import annotations

import builtins
import functools
import gc
import itertools
import linecache
import re
import sys
import threading
import types
import unicodedata
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

# The module itself, which generated code holds; by its name, not through this package.
import pytreekit._classes.torch_seen as torch_seen

from .. import _markers as markers
from .._compat import static_hash
from .._names import MISSING, lookup
from .frozen import begin_init, end_init
from .layouts import (
    FLAT,
    NESTED_HASHES,
    Layout,
    LayoutTable,
    Shadows,
    Storage,
    bound_inside,
    check,
)

# Each live class that owns generated code holds a slot number, given back when the class is
# freed, and numbers its compilations from 0: CPython keeps every code object's file name for good
# (from 3.12, interned and immortal), so a freed class's names must be reused, never new ones made.
_free_slots: list[int] = []
_slot_numbers = itertools.count()
_compiled: weakref.WeakKeyDictionary[type, tuple[int, list[str]]] = weakref.WeakKeyDictionary()


def _release(slot: int, filenames: list[str]) -> None:
    """A class that owned generated code was freed: its source leaves ``linecache``, then its slot
    is free for the next class (in this order, so no new entry is ever removed)."""
    for filename in filenames:
        linecache.cache.pop(filename, None)
    _free_slots.append(slot)


def compiled(source: str, label: str, owner: type) -> types.CodeType:
    """``source`` compiled: the one place generated source is. Its ``linecache`` entry (so that
    tracebacks and debuggers show it) lives as long as ``owner``, the class the code belongs to (a
    class defined in a loop or a function leaves nothing behind)."""
    entry = _compiled.get(owner)
    if entry is None:
        slot = _free_slots.pop() if _free_slots else next(_slot_numbers)
        entry = _compiled.setdefault(owner, (slot, []))
        if entry[0] == slot:
            weakref.finalize(owner, _release, *entry)
        else:  # another thread gave the class its slot first
            _free_slots.append(slot)
    slot, filenames = entry
    filename = f"<pytreekit generated {label} #{slot}.{len(filenames)}>"
    filenames.append(filename)
    # No modification time: linecache.checkcache keeps the entry (there is no file to check).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


def indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


def function(name: str, params: str, body: list[str]) -> str:
    return f"def {name}({params}):\n" + "\n".join(indent(body or ["pass"])) + "\n"


# -- methods: compiled in the class's module, so its globals resolve the user's annotations --------


def method(
    cls: type,
    name: str,
    params: str,
    body: list[str],
    helpers: Mapping[str, Any],
) -> types.FunctionType:
    """``def name(params): body`` as a method of ``cls``. The helpers it calls are closed over
    under ``__pytreekit_*__`` names, so neither a field (a parameter) nor a builtin shadows them."""
    assert all(h.startswith("__pytreekit_") and h.endswith("__") for h in helpers)
    module = sys.modules.get(cls.__module__)
    module_globals = module.__dict__ if module is not None else {"__name__": cls.__module__}
    inner = function(name, params, body).splitlines()
    source = function("__pytreekit_make__", ", ".join(helpers), [*inner, f"return {name}"])
    made = compiled(source, f"{cls.__qualname__}.{name}", cls)
    result = made_function(made, name, module_globals, helpers)
    result.__defaults__, result.__kwdefaults__ = _defaults(params, helpers)
    result.__qualname__ = f"{cls.__qualname__}.{name}"
    result.__module__ = cls.__module__
    return result


def made_function(
    module: types.CodeType, name: str, globals_: dict[str, Any], helpers: Mapping[str, Any]
) -> types.FunctionType:
    """The function ``name`` that ``module`` (compiled source) defines inside
    ``__pytreekit_make__``, made from its code with the ``helpers`` it closes over as its cells:
    nothing generated runs while a class is decorated. It may name itself (a wrapper compares a
    class's ``__init__`` with it)."""
    code = code_named(code_named(module, "__pytreekit_make__"), name)
    cells = tuple(types.CellType(None if n == name else helpers[n]) for n in code.co_freevars)
    made = types.FunctionType(code, globals_, name, None, cells)
    if name in code.co_freevars:
        cells[code.co_freevars.index(name)].cell_contents = made
    return made


def code_named(code: types.CodeType, name: str) -> types.CodeType:
    """The code of the function ``name`` defined directly in ``code``."""
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _defaults(
    params: str, helpers: Mapping[str, Any]
) -> tuple[tuple[Any, ...] | None, dict[str, Any] | None]:
    """``__defaults__`` and ``__kwdefaults__`` of generated ``params``, whose defaults are
    helpers' names or ``None`` (a wrapper's placeholders, replaced by the wrapped function's)."""
    positional: list[Any] = []
    keyword: dict[str, Any] = {}
    starred = False
    for parameter in params.split(", "):
        name, _, default = parameter.partition("=")
        starred = starred or name.startswith("*")
        if default:
            value = None if default == "None" else helpers[default]
            if starred:
                keyword[name] = value
            else:
                positional.append(value)
    return tuple(positional) or None, keyword or None


INITIALISING_HELPERS = {"__pytreekit_begin__": begin_init, "__pytreekit_end__": end_init}


def while_initialising(this: str, call: str) -> list[str]:
    """``call`` with a frozen instance open to assignment (``INITIALISING_HELPERS``)."""
    return [
        f"__pytreekit_begin__({this})",
        "try:",
        f"    {call}",
        "finally:",
        f"    __pytreekit_end__({this})",
    ]


# -- the check of a new instance, inlined wherever one is built ------------------------------


# How node functions name the primary layout and each child's key: names in the class's node
# namespace, given a suffix per generation of code (``node_functions_source``).
PRIMARY = "_P"
BARE = "_A"  # the primary's Layout.bare


def key_name(backend: str, index: int) -> str:
    return f"_K{backend}_{index}"


class CheckNames(NamedTuple):
    """How generated code names the check's helpers: node functions ``_hash``, in their own
    namespace; methods ``__pytreekit_hash__``, closed over (so no field or builtin shadows it)."""

    hash: str  # static_hash
    method: str  # types.MethodType
    nested: str  # layouts.NESTED_HASHES
    flat: str  # layouts.FLAT
    partial: str  # functools.partial
    inside: str  # layouts.bound_inside
    referents: str  # gc.get_referents
    torch: str  # the torch_seen module: whether torch is imported


_CHECK_HELPERS = (
    static_hash,
    types.MethodType,
    NESTED_HASHES,
    set(FLAT),  # not a frozenset: torch.compile's tracer cannot hold one in a closure cell
    functools.partial,
    bound_inside,
    gc.get_referents,
    torch_seen,
)
NODE_NAMES = CheckNames(*(f"_{n}" for n in CheckNames._fields))
METHOD_NAMES = CheckNames(*(f"__pytreekit_{n}__" for n in CheckNames._fields))
METHOD_HELPERS = dict(zip(METHOD_NAMES, _CHECK_HELPERS, strict=True))


def check_lines(
    statics: list[str],
    values: list[str],
    names: CheckNames,
    on_failure: list[str],
    this: str | None = None,
    local: str = "",
) -> list[str]:
    """``_layouts.check`` inline: ``statics`` (expressions) hashable and none of ``values`` a
    bound method, else ``on_failure`` (which calls the check to name the culprit, or takes the
    slow path). ``values`` lists what code that held the instance may have set: none where only
    arguments and defaults were stored, which cannot refer to an instance not yet returned;
    ``this``, the instance, when such code ran: a static value holding its methods is refused.
    Then each static value is read once, into a name starting with ``local``; one of a class in
    ``FLAT`` (hashable, holding no other value) costs a set lookup."""
    if this is None:
        body = [f"{names.hash}({value})" for value in statics]
    else:
        body = []
        for i, value in enumerate(statics):
            read, kind = f"{local}{i}", f"{local}c{i}"
            holds = f"{kind}.__hash__ in {names.nested} or {kind} is {names.partial}"
            body += [
                f"{read} = {value}",
                f"{kind} = {read}.__class__",
                f"if {kind} not in {names.flat}:",
                f"    {names.hash}({read})",
                f"    if ({holds} or {kind} is {names.method}) and {names.inside}({read}, {this}):",
                "        raise TypeError",
            ]
        values = [value for value in values if value not in statics]  # checked with the statics
    if values:
        bound = " or ".join(f"{value}.__class__ is {names.method}" for value in values)
        body += [f"if {bound}:", "    raise TypeError"]
    if not body:
        return []
    return ["try:", *indent(body), "except (TypeError, AttributeError):", *indent(on_failure)]


# -- node functions: compiled in the class's own namespace
# and the helpers under _-names; fields are only ever attribute names (obj.weights), so none
# shadows them. Each falls back to its generic path for any other instance.


def node_functions_source(
    layout: Layout,
    storage: Storage,
    *,
    exact: bool,
    varied: bool,
    keyed: tuple[str, ...],
    ordered: bool = False,
    suffix: str = "",
    held: list[str] | None = None,
    raw: bool = False,
) -> str:
    """``flatten``, ``flatten_with_keys_<backend>`` for each of ``keyed``, ``layout_of``,
    ``unflatten``, ``observe`` and ``replace`` for a class whose primary layout is ``layout``.
    ``exact``: an instance holding the layout's fields has that layout (``LayoutTable.exact``);
    ``varied``: instances of other layouts exist, and carry a marker; ``ordered``: ``observe``
    reads an instance's own order (``LayoutTable.ordered``); ``suffix``: added to
    the names of the primary layout (``_P``) and the keys (``key_name``); ``held``: lines that
    raise ``AttributeError`` unless ``obj`` holds the fields a read cannot tell unset
    (``unless_held``); ``raw``: fields are read past the class's own ``__getattribute__``."""
    held = held or []
    aux = f"({PRIMARY}, {_reads(layout.static_names, raw=raw)})"
    if layout.plain and layout.bare is not None:
        aux = BARE  # the one aux data of the class, which prints as None
    elif layout.plain:
        aux = f"({_reads(layout.static_names, raw=raw)})"  # the static values alone
    children = f"({_reads(layout.child_names, raw=raw)}), {aux}"
    generic = "_flatten_generic(obj)"
    sources = [_flatten("flatten", "obj", children, generic, exact, varied, held)]
    for backend in keyed:  # the default of backend is set on each function object
        pairs = "".join(
            f"({key_name(backend, i)}, {_read(n, raw)}), " for i, n in enumerate(layout.child_names)
        )
        name, generic = f"flatten_with_keys_{backend}", "_flatten_with_keys_generic(obj, backend)"
        result = f"({pairs}), {aux}"
        sources.append(_flatten(name, "obj, backend", result, generic, exact, varied, held))
    sources.append(_layout_of(layout, exact, varied, held))
    sources.append(_unflatten(layout, storage))
    sources.append(_observe(layout, storage, ordered))
    sources.append(_replace(layout, storage, exact, varied, held, raw))
    # Each says what it is, in a traceback or a debugger: "Generated for <layout of ...>."
    doc = f'    """Generated by pytreekit for {layout!r}."""\n'
    source = "\n".join(source.replace(":\n", ":\n" + doc, 1) for source in sources)
    # Each generation reads names of its own: a thread still running the code swapped out reads
    # the layout and keys it was written for.
    # (Not a field's name: obj._P, "_P".)
    return re.sub(
        rf"(?<![.\w'\"])({PRIMARY}|{BARE}|_K\w+_\d+)(?![\w'\"])", rf"\g<1>{suffix}", source
    )


def _reads(names: tuple[str, ...], obj: str = "obj", *, raw: bool = False) -> str:
    return "".join(f"{_read(n, raw, obj)}, " for n in names)


def _read(name: str, raw: bool, obj: str = "obj") -> str:
    """An expression reading the field ``name`` of ``obj`` (``raw``: as stored, ``_raw`` being
    ``object.__getattribute__``)."""
    return f"_raw({obj}, {name!r})" if raw else f"{obj}.{name}"


def _for_primary(lines: list[str], exact: bool, varied: bool) -> list[str]:
    """``lines``, a fast path for instances of the primary layout, where it is safe: nowhere
    unless ``exact``; behind the marker test once instances of other layouts exist."""
    if not exact:
        return []
    return [f"if obj.{markers.LAYOUT} is {PRIMARY}:", *indent(lines)] if varied else lines


def unless_held(exactly: tuple[str, ...], storage: Storage, shadows: Shadows) -> list[str]:
    """Lines that raise ``AttributeError`` unless ``obj`` holds a value for each field of
    ``exactly``, which a read may answer although it holds none (a class attribute or method of
    that name, a ``__getattr__``): a slot holds one if its own member (``_M<index>``) reads one;
    a field the class binds to a value, if a read gives another object than the class's (else
    if it is in the instance dict: on CPython before 3.13, reading ``__dict__`` makes the
    instance's attribute reads slower from then on); any other field if it is in the dict."""
    lines = _slots_held([name for name in exactly if name in storage.slots], storage, shadows)
    for name in exactly:
        if name in shadows.values:  # read from the class each time: it may be given another
            # _V_<name>: the class's value when the code was written; rebound since (to a
            # method or property too, whose reads give other objects), the dict says.
            seen = f"{SEEN}{name}"
            test = f"(_cls.{name} is not {seen} or obj.{name} is {seen})"
            lines += [f"if {test} and {name!r} not in obj.__dict__:", "    raise AttributeError"]
    keys = [n for n in exactly if n not in storage.slots and n not in shadows.values]
    if keys:
        unset = " or ".join(f"{name!r} not in _od" for name in keys)
        lines += ["_od = obj.__dict__", f"if {unset}:", "    raise AttributeError"]
    return lines


SEEN = "_V_"  # the class's value of a field's name, when the node functions were written


def _class_value(cls: type, name: str) -> object:
    """What ``cls.<name>`` gives if it gives the very object the class binds, else an object
    no read gives (a descriptor bound since: every read then asks the instance dict)."""
    value = lookup(cls, name)
    return object() if value is MISSING or hasattr(type(value), "__get__") else value


def _slots_held(slots: list[str], storage: Storage, shadows: Shadows) -> list[str]:
    """``unless_held`` for ``slots``: each read through its own member (``_M<index>``)."""
    lines = [
        f"_M{storage.slots.index(name)}.__get__(obj)"
        if name in shadows.members
        else "raise AttributeError"
        for name in slots
    ]
    if not lines:
        return []
    # torch.compile's tracer reads the slots of an instance it built by name only.
    torch = NODE_NAMES.torch
    return [f"if not ({torch}.imported and {torch}.compiling()):", *indent(lines)]


def _flatten(
    name: str, params: str, result: str, generic: str, exact: bool, varied: bool, held: list[str]
) -> str:
    attempt = ["try:", *indent(held), f"    return {result}", "except AttributeError:", "    pass"]
    return function(name, params, [*_for_primary(attempt, exact, varied), f"return {generic}"])


def _layout_of(layout: Layout, exact: bool, varied: bool, held: list[str]) -> str:
    """``layout_of(obj)`` for an instance of the class or of a subclass (whose own layouts the
    generic path finds)."""
    attempt = ["try:", *indent(held), f"    {_reads(layout.names) or 'pass'}"]
    attempt += ["except AttributeError:", "    pass", "else:", f"    return {PRIMARY}"]
    fast = _for_primary(attempt, exact, varied)
    if fast:
        fast = ["if obj.__class__ is _cls:", *indent(fast)]
    return function("layout_of", "obj", [*fast, "return _layout_of_generic(obj)"])


def _store(target: str, name: str, value: str, storage: Storage) -> str:
    """Write a field without the class's ``__setattr__`` (a plain store where it has none)."""
    if name in storage.slots or name in storage.descriptor_fields:
        return f"_setattr({target}, {name!r}, {value})"
    if storage.plain_setattr:
        return f"{target}.{name} = {value}"
    return f"_d[{name!r}] = {value}"  # frozen, or the class's own __setattr__


def _build(target: str, names: tuple[str, ...], values: list[str], storage: Storage) -> list[str]:
    """A new instance ``target`` holding ``values``, made without ``__init__``."""
    stores = [_store(target, n, v, storage) for n, v in zip(names, values, strict=True)]
    if any(line.startswith("_d[") for line in stores):
        stores.insert(0, f"_d = {target}.__dict__")
    return [f"{target} = _new(_cls)", *stores]


def _unflatten(layout: Layout, storage: Storage) -> str:
    children = iter(range(len(layout.names)))
    # Plain aux data with static fields is the static values alone (a Layout first: the aux
    # data of another layout).
    alone = layout.values_alone
    statics = iter(range(0 if alone else 1, len(layout.names) + 1))
    test = "aux[0].__class__ is not _Layout" if alone else f"aux[0] is {PRIMARY}"
    values = [
        f"aux[{next(statics)}]" if s else f"children[{next(children)}]" for s in layout.static
    ]
    build = [*_build("obj", layout.names, values, storage), "return obj"]
    if alone:  # too few static values: not this layout's (the generic path says so)
        build = ["try:", *indent(build), "except IndexError:", "    pass"]
    body = [f"if {test}:", *indent(build), "return _unflatten_generic(aux, children)"]
    return function("unflatten", "aux, children", body)


def _observe(layout: Layout, storage: Storage, ordered: bool) -> str:
    """``observe(obj)``, run when a user's ``__init__`` returns: counting (``counting``) where it
    can tell, else reading the instance's order (``ordered``); else the general path."""
    slow = ["_observe_slow(obj)"]
    if not in_dict(layout, storage):
        return function("observe", "obj", slow)  # a slot could stand in for an attribute
    guard = torch_guard(NODE_NAMES, ["return _observe_traced(obj)"])
    if ordered:  # the dict's keys say which attributes the instance holds, class attributes aside
        return function("observe", "obj", [*guard, *in_order(layout, "obj", NODE_NAMES), *slow])
    if not countable(layout, storage):
        return function("observe", "obj", slow)
    return function("observe", "obj", [*guard, *counting(layout, "obj", NODE_NAMES), *slow])


def countable(layout: Layout, storage: Storage) -> bool:
    """Whether ``counting`` can tell an instance holding exactly ``layout``'s fields: not where
    a slot or a class attribute (or ``__getattr__``) could stand in for an attribute."""
    if not in_dict(layout, storage):
        return False
    return not any(hasattr(layout.cls, n) for n in (*layout.names, "__getattr__"))


def in_dict(layout: Layout, storage: Storage) -> bool:
    """Whether ``layout``'s fields live in the instance dict alone (there are some, no slots)."""
    return bool(layout.names) and storage.has_dict and not storage.slots


def counting(layout: Layout, obj: str, names: CheckNames, local: str = "_") -> list[str]:
    """Lines that return if ``obj`` holds exactly ``layout``'s fields, their values checked,
    found without reading ``obj.__dict__`` (on CPython before 3.13 that turns the instance's
    compact attribute storage into a real dict, slowing every later flatten): the garbage
    collector's referents of such an instance are its attribute values and its class, so their
    count says whether ``__init__`` set other attributes (``countable`` says where it can).
    ``local``: the start of the names the lines bind, as in ``in_order``."""
    refs = f"{local}refs"
    counted = [f"if len({names.referents}({obj})) == {len(layout.names) + 1}:"]
    if len(layout.names) == 1:  # [dict, class] is also what a materialised __dict__ gives
        counted = [
            f"{refs} = {names.referents}({obj})",
            f"if len({refs}) == 2 and {refs}[0].__class__ is not dict:",
        ]
    reads = [f"{obj}.{n}" for n in layout.names]
    statics = [f"{obj}.{n}" for n in layout.static_names]
    checked = check_lines(statics, reads, names, ["pass"], obj, f"{local}s")
    return [*counted, *indent([*checked, "else:", "    return"])]


def torch_guard(names: CheckNames, tracing: list[str]) -> list[str]:
    """``tracing`` while torch.compile traces: it cannot trace the garbage collector (nor, in
    torch 2.13, a set among a function's globals: its guard on it fails at once), and may
    trace the ``__init__`` of any class (optree is torch's pytree engine; dynamo traces plain
    classes too). Until torch is imported the guard costs one attribute read; then one call of
    torch.compiler.is_compiling, which dynamo answers True while it traces."""
    test = f"if {names.torch}.imported and {names.torch}.compiling():"
    return [test, *indent(tracing)]


def in_order(layout: Layout, obj: str, names: CheckNames, local: str = "_") -> list[str]:
    """Lines that return if ``obj`` holds exactly ``layout``'s fields, assigned in its order,
    their values checked: only its dict knows that order (the garbage collector's referents come
    in the order the class's instances first used, and an attribute deleted and set again moves
    to the end). The values are read first, into names starting with ``local``: once its
    ``__dict__`` is made, reading an instance's attributes is slower (CPython keeps them inline
    until then, before 3.13)."""
    fields = layout.names
    values = [f"{local}v{i}" for i in range(len(fields))]
    statics = [v for v, s in zip(values, layout.static, strict=True) if s]
    checked = check_lines(statics, values, names, ["pass"], obj, f"{local}s")
    return [
        "try:",
        f"    {', '.join(values)}, = {_reads(fields, obj).rstrip(', ')},",
        "except AttributeError:",
        "    pass",
        "else:",
        f"    if (*{obj}.__dict__,) == {fields!r}:",
        *indent([*checked, "else:", "    return"], 2),
    ]


def _replace(
    layout: Layout, storage: Storage, exact: bool, varied: bool, held: list[str], raw: bool
) -> str:
    """``replace(obj, changes)``: a copy made without ``__init__``, static values checked."""
    values = [f"_v{i}" for i in range(len(layout.names))]
    attempt = [
        f"if changes.keys() <= {PRIMARY}.name_set:",
        "    try:",
        *indent(held, 2),
        *(
            f"        {v} = changes[{n!r}] if {n!r} in changes else {_read(n, raw)}"
            for v, n in zip(values, layout.names, strict=True)
        ),
        "    except AttributeError:",
        "        pass",
        "    else:",
        *indent(_build("new", layout.names, values, storage), 2),
        *indent(
            check_lines(
                [v for v, s in zip(values, layout.static, strict=True) if s],
                [],
                NODE_NAMES,
                [f"_check(new, {PRIMARY}, obj)"],
            ),
            2,
        ),
        "        for _v in changes.values():  # a method of obj: the copy would keep calling it",
        "            if _v.__class__ is _method or (",
        "                (_v.__class__.__hash__ in _nested or _v.__class__ is _partial)",
        "                and _inside(_v, obj)",
        "            ):",
        f"                _check(new, {PRIMARY}, obj)",
        "        return new",
    ]
    fast = _for_primary(attempt, exact and bool(layout.names), varied)
    return function("replace", "obj, changes", [*fast, "return _replace_generic(obj, changes)"])


# Until a class is first used, its functions run this generic code, shared by every class: nothing
# is compiled when a class is decorated.
_GENERIC: dict[str, types.FunctionType] = {}
exec(
    "def flatten(obj):\n    return _flatten_generic(obj)\n"
    "def flatten_with_keys(obj, backend):\n    return _flatten_with_keys_generic(obj, backend)\n"
    "def unflatten(aux, children):\n    return _unflatten_generic(aux, children)\n"
    "def layout_of(obj):\n    return _layout_of_generic(obj)\n"
    "def observe(obj):\n    _observe_slow(obj)\n"
    "def replace(obj, changes):\n    return _replace_generic(obj, changes)\n",
    {},
    _GENERIC,
)
# One function object each per class.
_SINGLE = ("flatten", "unflatten", "layout_of", "observe", "replace")
# The most fields a primary layout gets code generated for; the generic path serves a larger one.
# Hand-written classes stay far below (a model's largest have tens of fields), while a layout an
# artifact taught a class first may name 65,536: compiling code for it took seconds and a
# gigabyte, a cost the file's author would choose.
MAX_GENERATED_FIELDS = 1024


class NodeFunctions:
    """``flatten``, ``unflatten``, the keyed flattens (one per registry that takes them),
    ``layout_of``, ``observe`` (run when a user's ``__init__`` returns) and ``replace`` of one
    class, following its layout table.

    Each version of their code is correct on its own, so swapping one in is a single store any
    thread may observe: generic until first use; then generated for the primary layout, falling
    back to the generic path; then, once instances of other layouts exist, checking the
    instance's layout marker first.
    """

    def __init__(self, table: LayoutTable) -> None:
        self.namespace: dict[str, Any] = {
            "__builtins__": builtins,
            "_new": object.__new__,
            "_setattr": object.__setattr__,
            "_raw": object.__getattribute__,
            **dict(zip(NODE_NAMES, _CHECK_HELPERS, strict=True)),
            "_check": check,
            "_Layout": Layout,
            "_flatten_generic": self.flatten_generic,
            "_flatten_with_keys_generic": self.flatten_with_keys_generic,
            "_unflatten_generic": self.unflatten_generic,
            "_replace_generic": self.replace_generic,
            "_observe_traced": self.observe_traced,
            "_observe_slow": self.observe_slow,
            "_layout_of_generic": self.layout_of_generic,
        }
        made = [types.FunctionType(_GENERIC[n].__code__, self.namespace, n) for n in _SINGLE]
        self.flatten, self.unflatten, self.layout_of, self.observe, self.replace = made
        self.keyed: dict[str, types.FunctionType] = {}
        self.first_use_hooks: list[Callable[[], None]] = []
        # Every code object swapped out, kept alive: without the GIL a thread may still be
        # running one when it is replaced (a few per class: first use, varied, each backend).
        self.retired: list[types.CodeType] = []
        self.lock = threading.RLock()
        self._generations = itertools.count()
        self.attach(table)

    def attach(self, table: LayoutTable) -> None:
        """Follow ``table`` from now on (a class decorated again keeps its registered functions)."""
        # Under the functions' own lock, not the table's: a thread that holds an earlier table's
        # lock may be regenerating them (lock order: a table's, then this one).
        with self.lock:
            self.table = table
            self.cls = table.cls
            # One store each: a thread running these functions sees the old table or the new.
            self.namespace.update(_cls=table.cls)
            table.on_change = self.regenerate
            for name in _SINGLE:
                self._swap(getattr(self, name), _GENERIC[name].__code__)
            for function in self.keyed.values():
                self._swap(function, _GENERIC["flatten_with_keys"].__code__)
            self.regenerate()

    def flatten_with_keys(self, backend: str) -> types.FunctionType:
        """The keyed flatten for one registry, ``((key, child), ...), aux``: the same function
        object every time."""
        with self.table.lock:
            function = self.keyed.get(backend)
            if function is None:
                generic = _GENERIC["flatten_with_keys"]
                function = types.FunctionType(
                    generic.__code__, self.namespace, f"flatten_with_keys_{backend}", (backend,)
                )
                self.keyed[backend] = function
                self.regenerate()
            return function

    def add_first_use_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the class is first used (at once if it was)."""
        with self.table.lock:
            if self.table.used:
                hook()
            else:
                self.first_use_hooks.append(hook)

    def regenerate(self) -> None:
        """Put the code for what the current table knows now into the functions (any table may
        ask: the last to run writes code for the table followed now)."""
        with self.lock:
            self._regenerate()

    def _regenerate(self) -> None:
        table = self.table
        primary = table.primary
        if primary is None or not table.used:
            return
        while self.first_use_hooks:
            self.first_use_hooks.pop(0)()
        if len(primary.names) > MAX_GENERATED_FIELDS:
            return  # attach put in generic code; the primary a table has keeps its names after
        # A backend whose registration was undone keeps its function, unused, generic.
        keyed = tuple(backend for backend in self.keyed if backend in table.key_factories)
        # Names of this generation, put in the namespace before any code reading them runs: a
        # thread sees one version of each function, complete, and the names it reads.
        suffix = f"_{next(self._generations)}"
        fresh_names: dict[str, Any] = {
            f"{PRIMARY}{suffix}": primary,
            f"{BARE}{suffix}": primary.bare,
        }
        for backend in keyed:
            fresh_names.update(
                (f"{key_name(backend, i)}{suffix}", key)
                for i, key in enumerate(primary.keys[backend])
            )
        held = self._held(primary)
        self.namespace.update(fresh_names)
        source = node_functions_source(
            primary,
            table.storage,
            exact=table.exact(primary),
            varied=table.varied,
            keyed=keyed,
            ordered=table.ordered,
            suffix=suffix,
            held=held,
            raw=table.shadows.raw,
        )
        fresh: dict[str, Any] = {}
        label = f"{self.cls.__qualname__} nodes"
        exec(compiled(source, label, self.cls), self.namespace, fresh)
        for function in [*(getattr(self, n) for n in _SINGLE), *(self.keyed[b] for b in keyed)]:
            function.__doc__ = fresh[function.__name__].__doc__
            self._swap(function, fresh[function.__name__].__code__)

    def _held(self, primary: Layout) -> list[str]:
        """``unless_held`` for ``primary``, the slots' members it reads put in the namespace (the
        same objects for as long as the class lives)."""
        table = self.table
        members = table.shadows.members
        slots = table.storage.slots
        self.namespace.update((f"_M{slots.index(slot)}", m) for slot, m in members.items())
        self.namespace.update(
            (f"{SEEN}{n}", _class_value(self.cls, n)) for n in table.shadows.values
        )
        return unless_held(table.exactly(primary), table.storage, table.shadows)

    def _swap(self, function: types.FunctionType, code: types.CodeType) -> None:
        if function.__code__ is not code:
            self.retired.append(function.__code__)
            function.__code__ = code

    # -- the generic paths ---------------------------------------------------------------------

    def observe_slow(self, obj: object) -> None:
        self.table.observe_slow(obj)

    def layout_of_generic(self, obj: object) -> Layout:
        table = self.table
        table.first_use()  # instances built by a proven __init__ were never observed
        return table.layout_of(obj)

    def flatten_generic(self, obj: object) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        table = self.table
        table.first_use()
        layout = table.layout_of(obj)
        read = table.shadows.read
        try:
            children = tuple([read(obj, n) for n in layout.child_names])
            statics = [read(obj, n) for n in layout.static_names]
        except AttributeError:
            self._missing_field(obj, layout)
            raise
        return children, self.aux_data(layout, statics)

    def flatten_with_keys_generic(self, obj: object, backend: str) -> tuple[Any, Any]:
        children, aux = self.flatten(obj)
        keys = self.carrying(aux)[0].keys[backend]
        return tuple(zip(keys, children, strict=True)), aux

    @staticmethod
    def aux_data(layout: Layout, statics: Sequence[Any]) -> Any:
        """The aux data flatten gives an instance of ``layout`` holding ``statics``."""
        if not layout.plain:
            return (layout, *statics)
        return layout.bare if layout.bare is not None else tuple(statics)

    def carrying(self, aux: Any) -> tuple[Any, ...]:
        """``aux`` data, in any form flatten gave it (now or before), as ``(layout,
        *static_values)``, the layout interned in the class as it is now; refused if the data is
        not this class's."""
        if isinstance(aux, tuple) and aux:
            first = aux[0]
            if isinstance(first, Layout):
                if first.cls is self.cls:
                    return (self.table.intern(first.names, first.static), *aux[1:])
            else:
                declared = self.table.declared()  # aux data that is static values alone
                if declared is not None and len(aux) == len(declared.static_names):
                    return (declared, *aux)
        raise TypeError(
            f"cannot unflatten {self.cls.__qualname__} from aux data {aux!r}: it was not "
            f"made by flattening an instance of this class."
        )

    def unflatten_generic(self, aux: Any, children: Sequence[Any]) -> object:
        table = self.table
        table.first_use()
        layout, *static_values = self.carrying(aux)
        obj: Any = object.__new__(self.cls)
        statics = iter(static_values)
        child_iter = iter(children)
        for name, static in zip(layout.names, layout.static, strict=True):
            object.__setattr__(obj, name, next(statics) if static else next(child_iter))
        table.note(obj, layout)
        return obj

    def replace_generic(self, obj: object, changes: dict[str, Any]) -> object:
        """A copy of ``obj`` with ``changes``, made without ``__init__`` (``pytreekit.replace``)."""
        table = self.table
        table.first_use()
        layout = table.layout_of(obj)
        for name in changes:
            if name not in layout.names:
                raise TypeError(_no_such_field(self.cls, name, layout.names))
        new: Any = object.__new__(self.cls)
        read = table.shadows.read
        for name in layout.names:
            try:
                value = changes[name] if name in changes else read(obj, name)
            except AttributeError:
                self._missing_field(obj, layout)
                raise
            object.__setattr__(new, name, value)
        check(new, layout, obj)
        table.note(new, layout)
        return new

    def observe_traced(self, obj: object) -> None:
        """``observe`` while torch.compile traces ``__init__``: the garbage collector is out of
        its reach, reading the instance dict is not."""
        primary = self.table.primary
        if primary is not None and tuple(obj.__dict__) == primary.names:
            check(obj, primary)
            return
        self.table.observe_slow(obj)

    def _missing_field(self, obj: object, layout: Layout) -> None:
        """Name the field ``obj`` has no value for; return if it has them all (then the caller
        re-raises the AttributeError it caught)."""
        for name in layout.names:
            if not hasattr(obj, name):
                raise AttributeError(
                    f"{type(obj).__qualname__}.{name} is a field but this instance has no value "
                    f"for it, so it cannot be flattened. Set it in __init__; an instance made "
                    f"another way (object.__new__, a pickle written before the class had the "
                    f"field) must set it too, as no default is filled in there."
                ) from None


def _no_such_field(cls: type, name: str, names: tuple[str, ...]) -> str:
    """``replace()``'s error for ``name``, which is none of ``names``: names printed escaped (a
    name that is not NFKC-normal prints like its NFKC form)."""
    normal = unicodedata.normalize("NFKC", name)
    hint = ""
    if normal != name and normal in names:
        hint = (
            f" {normal!a} is, the NFKC form Python gives the identifier {name!a} in source "
            f"(`obj.{normal}`): pass replace(obj, **{{{normal!a}: ...}})."
        )
    return f"replace(): {cls.__qualname__} has no field {name!a}; its fields are {names!a}.{hint}"
