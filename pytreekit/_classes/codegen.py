"""Generated code: the one place source is compiled (registered with ``linecache``, so tracebacks
and debuggers show it), and pure builders from a layout or a signature to source text, one short
builder per kind of line."""

from __future__ import annotations

import dis
import functools
import inspect
import itertools
import linecache
import re
import sys
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .. import _markers as markers
from .._compat import copy_annotations, signature, static_hash
from .frozen import begin_init, end_init
from .layouts import FLAT, NESTED_HASHES, Layout, Storage, bound_inside
from .layouts import check as _check

_serial = itertools.count()
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


def compile_source(
    source: str,
    globals_: dict[str, Any],
    label: str,
    into: dict[str, Any] | None = None,
    owner: type | None = None,
) -> None:
    """Execute ``source`` with ``globals_``, defining its names ``into`` a dict of their own
    (default: the globals). Its ``linecache`` entry lives as long as ``owner``, the class the code
    belongs to (a class defined in a loop or a function leaves nothing behind)."""
    if owner is None:
        filename = f"<pytreekit generated {label} #{next(_serial)}>"
    else:
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
    exec(compile(source, filename, "exec"), globals_, into)


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
    made: dict[str, Any] = {}
    source = function("__pytreekit_make__", ", ".join(helpers), [*inner, f"return {name}"])
    compile_source(source, module_globals, f"{cls.__qualname__}.{name}", made, cls)
    result: types.FunctionType = made["__pytreekit_make__"](**helpers)
    result.__qualname__ = f"{cls.__qualname__}.{name}"
    result.__module__ = cls.__module__
    return result


def _forwarding(init: Callable[..., Any]) -> tuple[str, str]:
    """``(parameters, arguments)`` of a function with ``init``'s own parameters (after ``self``)
    that calls ``init`` with them; ``*args, **kwargs`` where that cannot be written out."""
    generic = ("*args, **kwargs", "*args, **kwargs")
    if type(init) is not types.FunctionType:
        return generic
    kind = inspect.Parameter
    every = list(signature(init, follow_wrapped=False).parameters.values())
    if not every or every[0].kind not in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD):
        return generic  # a wrapper's (*args, **kwargs): self is not a parameter of its own
    params = every[1:]
    if any(p.name.startswith("__pytreekit") for p in params):
        return generic
    spelled: dict[Any, str] = {kind.VAR_POSITIONAL: "*{}", kind.VAR_KEYWORD: "**{}"}
    spelled[kind.KEYWORD_ONLY] = "{0}={0}"
    arguments = [spelled.get(p.kind, "{}").format(p.name) for p in params]
    # Placeholder defaults: the wrapper takes init's own (__defaults__, __kwdefaults__).
    plain = [
        p.replace(annotation=kind.empty, default=kind.empty if p.default is kind.empty else None)
        for p in params
    ]
    return str(inspect.Signature(plain))[1:-1], ", ".join(arguments)


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


class InitProof(NamedTuple):
    """What decoration proved about a user's ``__init__`` from its bytecode: ``stores``, the
    attributes of ``self`` it sets, in order, when it only stores them (each on every path:
    branches may choose values, not what is stored; no loops, no other use of ``self``, no
    ``super()``, no frame access), else ``None``; ``reason`` says why (shown in the class spec's
    repr)."""

    stores: tuple[str, ...] | None
    reason: str


# Names through which code may reach the instance other than as ``self``: the frame, super().
_REACHING = frozenset({"super", "locals", "vars", "globals", "sys", "inspect", "eval", "exec"})
_FRAME_ATTRS = frozenset(
    {"_getframe", "currentframe", "f_locals", "f_back", "f_globals", "stack", "tb_frame"}
    | {"get_referrers", "get_objects", "getouterframes", "gi_frame", "cr_frame"}
)


_proofs: weakref.WeakKeyDictionary[types.CodeType, InitProof] = weakref.WeakKeyDictionary()


def prove_init(init: object, fields: frozenset[str] = frozenset()) -> InitProof:
    """Whether ``init`` provably only stores attributes of ``self`` (each once, in one order),
    reading none but ``fields`` and those it stored before."""
    code = getattr(init, "__code__", None)
    if type(init) is not types.FunctionType or code is None or code.co_argcount < 1:
        return InitProof(None, "general: not a plain function")
    if not fields:  # a class defined again (in a loop, a function) runs the same code
        known = _proofs.get(code)
        if known is None:
            known = _proofs[code] = _prove(code, fields)
        return known
    return _prove(code, fields)


def _prove(code: types.CodeType, fields: frozenset[str]) -> InitProof:
    this = code.co_varnames[0]
    if this in code.co_cellvars or "__class__" in code.co_freevars:
        return InitProof(None, f"general: {this} is captured by a closure or super() is used")
    if code.co_exceptiontable:
        return InitProof(None, "general: try/with blocks")
    instructions = list(dis.get_instructions(code))
    conditional = _conditional(instructions)
    if conditional is None:
        return InitProof(None, "general: loops")
    # Where the first path may end: a store after it is not made on every path.
    end = min((i.offset for i in instructions if i.opname.startswith("RETURN")), default=-1)
    stores: list[str] = []
    for ins, following in zip(instructions, [*instructions[1:], None], strict=True):
        refusal = _refusal(ins, this)
        if refusal is not None:
            return InitProof(None, refusal)
        use = _use_of_self(ins, following, this, fields.union(stores))
        if use is None or use == _READ:
            continue
        if use == _OTHER:
            return InitProof(None, f"general: uses {this} other than to store (line {_line(ins)})")
        if ins.offset > end or any(start < ins.offset < stop for start, stop in conditional):
            return InitProof(None, f"general: a store on some branches only (line {_line(ins)})")
        stores.append(use)
    return InitProof(tuple(dict.fromkeys(stores)), "proven: only stores attributes of self")


# What _use_of_self returns besides an attribute's name (neither is an identifier).
_READ, _OTHER = "<read>", "<other>"


def _use_of_self(
    ins: dis.Instruction, following: dis.Instruction | None, this: str, readable: frozenset[str]
) -> str | None:
    """How ``ins`` uses ``this``: not at all (``None``), to read a field of ``readable``
    (``_READ``), to store an attribute (its name), or otherwise (``_OTHER``)."""
    if not ins.opname.startswith("LOAD_FAST"):
        return None
    names = _names_of(ins.argval)
    if this not in names:
        return None
    if names[-1] != this or names.count(this) != 1 or following is None:
        return _OTHER  # loaded with another name after it (3.13's LOAD_FAST_LOAD_FAST)
    if following.opname in ("LOAD_ATTR", "LOAD_METHOD") and following.argval in readable:
        return _READ  # a field's value read (a plain value, stored already)
    return str(following.argval) if following.opname == "STORE_ATTR" else _OTHER


def _conditional(instructions: list[dis.Instruction]) -> list[tuple[int, int]] | None:
    """The stretches of code (between offsets) a forward jump skips, so that some paths run
    them and others do not; ``None`` where a jump goes back (a loop) or code yields."""
    stretches = []
    for ins in instructions:
        if ins.opname in ("FOR_ITER", "SEND", "YIELD_VALUE") or (
            "JUMP" in ins.opname and not ins.argval > ins.offset
        ):
            return None
        if "JUMP" in ins.opname:
            stretches.append((ins.offset, ins.argval))
    return stretches


def _refusal(ins: dis.Instruction, this: str) -> str | None:
    """Why ``ins`` may reach the instance other than through ``this``, if it may."""
    name = ins.opname
    if name in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in _REACHING:
        return f"general: uses {ins.argval}"
    if name == "IMPORT_NAME" or (name.startswith("LOAD_") and ins.argval in _FRAME_ATTRS):
        return f"general: imports, or reaches frames ({ins.argval})"
    if name.startswith(("STORE_FAST", "DELETE_FAST")) and this in _names_of(ins.argval):
        return f"general: rebinds {this}"
    return None


def _line(ins: dis.Instruction) -> int | None:
    return None if ins.positions is None else ins.positions.lineno


def _names_of(argval: Any) -> tuple[str, ...]:
    return argval if isinstance(argval, tuple) else (argval,)


def init_wrapper(
    cls: type, init: Callable[..., Any], frozen: bool, proven: Layout | None = None
) -> types.FunctionType:
    """Wrap a user's ``__init__``: it runs unchanged (in a frozen class it may assign), then, when
    the outermost ``__init__`` of a ``super().__init__`` chain returns, the class's ``observe``
    completes and checks what it set. The wrapper has ``init``'s signature, so a call costs one
    plain call more, not the packing of ``*args, **kwargs``; it finds the class through the
    instance, so a class pickled by value takes a working wrapper along."""
    params, arguments = _forwarding(init)
    this = "__pytreekit_self__"
    call = f"__pytreekit_init__({this}, {arguments})"
    body = [
        f"__pytreekit_kind__ = {this}.__class__",
        "if __pytreekit_kind__ is not __pytreekit_cls__ and (",
        "    __pytreekit_kind__.__init__ is not __init__",
        "):  # through super() in a subclass's __init__: that one checks when it returns",
        f"    {call}",
        "    return",
    ]
    body += while_initialising(this, call) if frozen else [call]
    helpers: dict[str, Any] = {
        "__pytreekit_init__": init,
        "__pytreekit_cls__": cls,
        **INITIALISING_HELPERS,
    }
    if proven is not None:
        # Proven at decoration (prove_init): the instance holds exactly the layout's fields and
        # no method of its own, so only the static values are checked (a subclass's instance,
        # whose layout may differ, is observed).
        statics = [f"{this}.{n}" for n in proven.static_names]

        def failed(obj: object) -> None:  # a function: torch.compile cannot hold a Layout
            _check(obj, proven)

        checked = check_lines(statics, [], METHOD_NAMES, [f"__pytreekit_failed__({this})"])
        helpers = {**helpers, **METHOD_HELPERS, "__pytreekit_failed__": failed}
        proven_body = [
            "if __pytreekit_kind__ is __pytreekit_cls__:",
            *indent([*checked, "return"]),
        ]
        if not frozen:
            # The instance's own class first: one test on the common path. A subclass's instance
            # comes through super() (returns unchecked: its __init__ checks) or inherits this
            # __init__ (observed), as below.
            body = [
                call,
                f"__pytreekit_kind__ = {this}.__class__",
                *proven_body,
                "if __pytreekit_kind__.__init__ is not __init__:",
                "    return",
            ]
        else:
            body += proven_body
    body.append(f"__pytreekit_kind__.{markers.SPEC}.nodes.observe({this})")
    wrapper = method(cls, "__init__", f"{this}, {params}", body, helpers)
    wrapper.__defaults__ = getattr(init, "__defaults__", None)
    wrapper.__kwdefaults__ = getattr(init, "__kwdefaults__", None)
    for attribute in ("__doc__", "__type_params__"):
        if hasattr(init, attribute):
            setattr(wrapper, attribute, getattr(init, attribute))
    copy_annotations(init, wrapper)
    wrapper.__dict__.update(getattr(init, "__dict__", {}))
    wrapper.__wrapped__ = init  # type: ignore[attr-defined]
    setattr(wrapper, markers.WRAPS_INIT, True)
    return wrapper


# -- the check of a new instance, inlined wherever one is built ------------------------------


# How node functions name the primary layout and each child's key: names in the class's node
# namespace, given a suffix per generation of code (``node_functions_source``).
PRIMARY = "_P"
BARE = "_A"  # the primary's Layout.bare


def key_name(backend: str, index: int) -> str:
    return f"_K{backend}_{index}"


class CheckNames(NamedTuple):
    """What generated code calls the check's helpers (node functions and methods differ)."""

    hash: str
    method: str
    check: str  # _layouts.check(obj, layout), which names the culprit
    layout: str
    nested: str  # _layouts.NESTED_HASHES
    flat: str  # _layouts.FLAT
    partial: str  # functools.partial
    inside: str  # _layouts.bound_inside


NODE_NAMES = CheckNames(
    hash="_hash",
    method="_Method",
    check="_check",
    layout=PRIMARY,
    nested="_nested",
    flat="_flat",
    partial="_partial",
    inside="_inside",
)
METHOD_NAMES = CheckNames(
    hash="__pytreekit_hash__",
    method="__pytreekit_method__",
    check="__pytreekit_check__",
    layout="__pytreekit_primary__",
    nested="__pytreekit_nested__",
    flat="__pytreekit_flat__",
    partial="__pytreekit_partial__",
    inside="__pytreekit_inside__",
)
METHOD_HELPERS = {
    "__pytreekit_hash__": static_hash,
    "__pytreekit_method__": types.MethodType,
    "__pytreekit_nested__": NESTED_HASHES,
    "__pytreekit_flat__": FLAT,
    "__pytreekit_partial__": functools.partial,
    "__pytreekit_inside__": bound_inside,
}


def check_lines(
    statics: list[str],
    values: list[str],
    names: CheckNames,
    on_failure: list[str],
    this: str | None = None,
) -> list[str]:
    """``_layouts.check`` inline: ``statics`` (expressions) hashable and none of ``values`` a
    bound method, else ``on_failure`` (which calls the check to name the culprit, or takes the
    slow path). ``values`` lists what code that held the instance may have set: none where only
    arguments and defaults were stored, which cannot refer to an instance not yet returned;
    ``this``, the instance, when such code ran: a static value holding its methods is refused."""
    body = [f"{names.hash}({value})" for value in statics]
    if values:
        bound = " or ".join(f"{value}.__class__ is {names.method}" for value in values)
        body += [f"if {bound}:", "    raise TypeError"]
    if this is not None and statics:
        inside = " or ".join(
            f"({value}.__class__ not in {names.flat} and ({value}.__class__.__hash__ in "
            f"{names.nested} or {value}.__class__ is {names.partial}) and "
            f"{names.inside}({value}, {this}))"
            for value in statics
        )
        body += [f"if {inside}:", "    raise TypeError"]
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
) -> str:
    """``flatten``, ``flatten_with_keys_<backend>`` for each of ``keyed``, ``layout_of``,
    ``unflatten``, ``observe`` and ``replace`` for a class whose primary layout is ``layout``.
    ``exact``: an instance holding the layout's fields has that layout (``LayoutTable.exact``);
    ``varied``: instances of other layouts exist, and carry a marker; ``ordered``: an instance's
    fields are in the order it assigned them (a class without annotations); ``suffix``: added to
    the names of the primary layout (``_P``) and the keys (``key_name``)."""
    aux = f"({PRIMARY}, {_reads(layout.static_names)})"
    if layout.bare is not None:
        aux = BARE  # the one aux data of the class, which prints as None
    elif layout.plain:
        aux = f"({_reads(layout.static_names)})"  # the static values alone
    children = f"({_reads(layout.child_names)}), {aux}"
    sources = [_flatten("flatten", "obj", children, "_flatten_generic(obj)", exact, varied)]
    for backend in keyed:  # the default of backend is set on each function object
        pairs = "".join(
            f"({key_name(backend, i)}, obj.{n}), " for i, n in enumerate(layout.child_names)
        )
        name, generic = f"flatten_with_keys_{backend}", "_flatten_with_keys_generic(obj, backend)"
        sources.append(_flatten(name, "obj, backend", f"({pairs}), {aux}", generic, exact, varied))
    sources.append(_layout_of(layout, exact, varied))
    sources.append(_unflatten(layout, storage))
    sources.append(_observe(layout, storage, ordered))
    sources.append(_replace(layout, storage, exact, varied))
    # Each says what it is, in a traceback or a debugger: "Generated for <layout of ...>."
    doc = f'    """Generated by pytreekit for {layout!r}."""\n'
    source = "\n".join(source.replace(":\n", ":\n" + doc, 1) for source in sources)
    # Each generation reads names of its own: a thread still running the code swapped out reads
    # the layout and keys it was written for.
    # (Not a field's name: obj._P, "_P".)
    return re.sub(
        rf"(?<![.\w'\"])({PRIMARY}|{BARE}|_K\w+_\d+)(?![\w'\"])", rf"\g<1>{suffix}", source
    )


def _reads(names: tuple[str, ...], obj: str = "obj") -> str:
    return "".join(f"{obj}.{n}, " for n in names)


def _for_primary(lines: list[str], exact: bool, varied: bool) -> list[str]:
    """``lines``, a fast path for instances of the primary layout, where it is safe: nowhere
    unless ``exact``; behind the marker test once instances of other layouts exist."""
    if not exact:
        return []
    return [f"if obj.{markers.LAYOUT} is {PRIMARY}:", *indent(lines)] if varied else lines


def _flatten(name: str, params: str, result: str, generic: str, exact: bool, varied: bool) -> str:
    attempt = ["try:", f"    return {result}", "except AttributeError:", "    pass"]
    return function(name, params, [*_for_primary(attempt, exact, varied), f"return {generic}"])


def _layout_of(layout: Layout, exact: bool, varied: bool) -> str:
    """``layout_of(obj)`` for an instance of the class or of a subclass (whose own layouts the
    generic path finds)."""
    attempt = ["try:", f"    {_reads(layout.names) or 'pass'}", "except AttributeError:"]
    attempt += ["    pass", "else:", f"    return {PRIMARY}"]
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
    # Plain aux data is the static values alone (a Layout first: the aux data of another layout).
    statics = iter(range(0 if layout.plain else 1, len(layout.names) + 1))
    test = "aux[0].__class__ is not _Layout" if layout.plain else f"aux[0] is {PRIMARY}"
    values = [
        f"aux[{next(statics)}]" if s else f"children[{next(children)}]" for s in layout.static
    ]
    build = [*_build("obj", layout.names, values, storage), "return obj"]
    if layout.plain:  # too few static values: not this layout's (the generic path says so)
        build = ["try:", *indent(build), "except IndexError:", "    pass"]
    body = [f"if {test}:", *indent(build), "return _unflatten_generic(aux, children)"]
    return function("unflatten", "aux, children", body)


def _observe(layout: Layout, storage: Storage, ordered: bool) -> str:
    """``observe(obj)``, run when a user's ``__init__`` returns. Its fast path recognises an
    instance of exactly the primary layout without reading ``obj.__dict__`` (on CPython that turns
    the instance's compact attribute storage into a real dict, slowing every later flatten): the
    garbage collector's referents of such an instance are its attribute values and its class, so
    their count says whether ``__init__`` set other attributes. Elsewhere the general path runs."""
    names = layout.names
    slow = ["_observe_slow(obj)"]
    if not names or not storage.has_dict or storage.slots:
        return function("observe", "obj", slow)  # a slot could stand in for an attribute
    if ordered:
        return function("observe", "obj", [*_observe_in_order(layout), *slow])
    if any(hasattr(layout.cls, n) for n in (*names, "__getattr__")):
        return function("observe", "obj", slow)  # a class attribute could stand in
    count = f"if len(refs) == {len(names) + 1}:"
    if len(names) == 1:  # [dict, class] is also what a materialised __dict__ gives
        count = "if len(refs) == 2 and refs[0].__class__ is not dict:"
    reads = [f"obj.{n}" for n in names]
    statics = [f"obj.{n}" for n in layout.static_names]
    checked = check_lines(statics, reads, NODE_NAMES, ["pass"], "obj")
    # torch.compile cannot trace the garbage collector, and may trace the __init__ of any class
    # (optree is torch's pytree engine; dynamo traces plain classes too). Until torch is imported
    # the guard costs one dict lookup; then one call of torch.compiler.is_compiling, which dynamo
    # answers True while it traces.
    guard = [
        'if "torch" in _modules and _modules["torch"].compiler.is_compiling():',
        "    return _observe_traced(obj)",
    ]
    refs = ["refs = _referents(obj)", count, *indent([*checked, "else:", "    return"])]
    return function("observe", "obj", [*guard, *refs, *slow])


def _observe_in_order(layout: Layout) -> list[str]:
    """``observe``'s fast path where an instance's fields are in the order it assigned them:
    only its dict knows that order (the garbage collector's referents come in the order the
    class's instances first used). The values are read first: once its ``__dict__`` is made,
    reading an instance's attributes is slower (CPython keeps them inline until then)."""
    names = layout.names
    values = [f"_v{i}" for i in range(len(names))]
    statics = [v for v, s in zip(values, layout.static, strict=True) if s]
    checked = check_lines(statics, values, NODE_NAMES, ["pass"], "obj")
    return [
        "try:",
        f"    {', '.join(values)}, = {_reads(names).rstrip(', ')},",
        "except AttributeError:",
        "    pass",
        "else:",
        f"    if (*obj.__dict__,) == {names!r}:",
        *indent([*checked, "else:", "    return"], 2),
    ]


def _replace(layout: Layout, storage: Storage, exact: bool, varied: bool) -> str:
    """``replace(obj, changes)``: a copy made without ``__init__``, static values checked."""
    values = [f"_v{i}" for i in range(len(layout.names))]
    attempt = [
        f"if changes.keys() <= {PRIMARY}.name_set:",
        "    try:",
        *(
            f"        {v} = changes[{n!r}] if {n!r} in changes else obj.{n}"
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
        "            if _v.__class__ is _Method or (",
        "                (_v.__class__.__hash__ in _nested or _v.__class__ is _partial)",
        "                and _inside(_v, obj)",
        "            ):",
        f"                _check(new, {PRIMARY}, obj)",
        "        return new",
    ]
    fast = _for_primary(attempt, exact and bool(layout.names), varied)
    return function("replace", "obj, changes", [*fast, "return _replace_generic(obj, changes)"])
