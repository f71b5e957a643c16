"""A user's ``__init__`` under pytreekit: what decoration can prove about it from its bytecode
(``prove_init``), and the ``__init__`` the class gets (``init_wrapper``): a wrapper that runs it
unchanged and then checks what it set, or, where it is proven and its source is its code, that
code compiled again with the check appended (one frame)."""

from __future__ import annotations
import __future__

import ast
import dis
import functools
import inspect
import linecache
import operator
import symtable
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from .. import _markers as markers
from .._compat import copy_annotations, signature
from .layouts import Layout, LayoutTable
from .layouts import check as _check
from .nodes import (
    INITIALISING_HELPERS,
    METHOD_HELPERS,
    METHOD_NAMES,
    CheckNames,
    check_lines,
    code_named,
    countable,
    counting,
    in_dict,
    in_order,
    indent,
    made_function,
    method,
    torch_guard,
    while_initialising,
)


def _forwarding(init: Callable[..., Any]) -> tuple[str, str, str]:
    """``(parameters, arguments, instance)`` of a function with ``init``'s own parameters that
    calls ``init`` with them (``instance``: its first parameter's name, so ``self=`` works as it
    does on ``init``); ``*args, **kwargs`` where that cannot be written out."""
    this = "__pytreekit_self__"
    generic = (f"{this}, *args, **kwargs", "*args, **kwargs", this)
    if type(init) is not types.FunctionType:
        return generic
    kind = inspect.Parameter
    every = list(signature(init, follow_wrapped=False).parameters.values())
    if not every or every[0].kind not in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD):
        return generic  # a wrapper's (*args, **kwargs): self is not a parameter of its own
    if any(p.name.startswith("__pytreekit") for p in every):
        return generic
    spelled: dict[Any, str] = {kind.VAR_POSITIONAL: "*{}", kind.VAR_KEYWORD: "**{}"}
    spelled[kind.KEYWORD_ONLY] = "{0}={0}"
    arguments = [spelled.get(p.kind, "{}").format(p.name) for p in every[1:]]
    # Placeholder defaults: the wrapper takes init's own (__defaults__, __kwdefaults__).
    plain = [
        p.replace(annotation=kind.empty, default=kind.empty if p.default is kind.empty else None)
        for p in every
    ]
    return str(inspect.Signature(plain))[1:-1], ", ".join(arguments), every[0].name


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
    if this in code.co_cellvars:
        return InitProof(None, f"general: {this} is captured by a closure or super() is used")
    if "__class__" in code.co_freevars:
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
            reason = f"general: uses {this} other than to store (line {_line(ins)})"
            return InitProof(None, reason)
        if ins.offset > end or any(start < ins.offset < stop for start, stop in conditional):
            reason = f"general: a store on some branches only (line {_line(ins)})"
            return InitProof(None, reason)
        stores.append(use)
    return InitProof(tuple(dict.fromkeys(stores)), "proven: only stores attributes of self")


def _branches(ins: dis.Instruction) -> bool:
    return "JUMP" in ins.opname or ins.opname in ("FOR_ITER", "SEND", "YIELD_VALUE")


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
        if not _branches(ins):
            continue
        if "JUMP" not in ins.opname or not ins.argval > ins.offset:
            return None
        stretches.append((ins.offset, ins.argval))
    return stretches


def _refusal(ins: dis.Instruction, this: str) -> str | None:
    """Why ``ins`` may reach the instance other than through ``this``, if it may."""
    name = ins.opname
    if name in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in _REACHING:
        return f"general: uses {ins.argval}"
    if name == "IMPORT_NAME" or (name.startswith("LOAD_") and ins.argval in _FRAME_ATTRS):
        return f"general: imports, or reaches frames ({ins.argval})"
    if _rebinds(ins, this):
        return f"general: rebinds {this}"
    return None


def _line(ins: dis.Instruction) -> int | None:
    return None if ins.positions is None else ins.positions.lineno


def _names_of(argval: Any) -> tuple[str, ...]:
    return argval if isinstance(argval, tuple) else (argval,)


def _inline(table: LayoutTable) -> tuple[Callable[[str], list[str]], tuple[object, ...]] | None:
    """How the check of an instance known at decoration tells one holding the primary's fields
    in its order: by counting its attributes where every instance holding exactly those has them
    in that order (declared, or proven: not ``ordered``), else by reading its order; ``None``
    where neither can tell (no primary yet, slots, a class attribute named like a field). With
    it, what tells the lines apart: names only (a Layout would keep its class alive)."""
    primary = table.primary
    if primary is None or not in_dict(primary, table.storage):
        return None
    if table.ordered:
        tells = in_order
    elif countable(primary, table.storage):
        tells = counting
    else:
        return None
    key = (tells.__name__, primary.names, primary.static_names)
    return functools.partial(_general_check, primary, tells), key


def init_wrapper(
    cls: type,
    init: Callable[..., Any],
    frozen: bool,
    proven: Layout | None = None,
    table: LayoutTable | None = None,
) -> types.FunctionType:
    """Wrap a user's ``__init__``: it runs unchanged (in a frozen class it may assign), then, when
    the outermost ``__init__`` of a ``super().__init__`` chain returns, the class's ``observe``
    completes and checks what it set. The wrapper has ``init``'s signature, so a call costs one
    plain call more, not the packing of ``*args, **kwargs``; it finds the class through the
    instance, so a class pickled by value takes a working wrapper along. ``proven``: the layout
    ``prove_init`` proved; else an instance of ``cls`` whose ``table`` has a primary is checked
    inline (``_inline``), and observed only where that fails."""
    shown: object = init
    if type(init) is not types.FunctionType:
        init, shown = _as_python_calls(init, cls)
    params, arguments, this = _forwarding(init)
    call = f"__pytreekit_returned__ = __pytreekit_init__({this}, {arguments})"
    helpers: dict[str, Any] = {
        "__pytreekit_init__": init,
        "__pytreekit_cls__": cls,
        **INITIALISING_HELPERS,
        **METHOD_HELPERS,
    }
    checked: Callable[[str], list[str]]  # the check of an instance of cls itself
    key: tuple[object, ...]  # tells one kind of checked lines from another
    if proven is not None:
        # Proven at decoration (prove_init): the instance holds exactly the layout's fields and
        # no method of its own, so only the static values are checked (a subclass's instance,
        # whose layout may differ, is observed).

        def failed(obj: object) -> None:  # a function: torch.compile cannot hold a Layout
            _check(obj, proven)

        helpers["__pytreekit_failed__"] = failed
        checked = functools.partial(_proven_check, proven)
        key = ("proven", proven.static_names)
    elif table is not None and (inline := _inline(table)) is not None:
        checked, key = inline
    else:
        checked, key = _observed, ("observed",)
    if not frozen:
        one = _one_frame(cls, init, checked, key, helpers)
        if one is not None:
            return _like(one, init)
    own = checked(this)
    # What init returns other than None (a generator, say) is returned on, unchecked: Python
    # refuses it, as it would without pytreekit.
    returned = ["if __pytreekit_returned__ is not None:", "    return __pytreekit_returned__"]
    body = [call, *returned]
    if frozen:
        # Through super() in a subclass's __init__: runs inside that one's opening of the
        # instance to assignment (closing it here would end that one's assignments).
        body = [
            f"if {this}.__class__ is not __pytreekit_cls__ and (",
            f"    {this}.__class__.__init__ is not __init__",
            "):",
            f"    {call}",
            "    return __pytreekit_returned__",
            *while_initialising(this, call),
            *returned,
        ]
    body += _after(this, own, "__init__")
    return _like(method(cls, "__init__", params, body, helpers), init, shown)


def _as_python_calls(init: Any, cls: type) -> tuple[Callable[..., Any], object]:
    """A function calling an ``__init__`` that is not one as Python calls it (bound to the
    instance through its type's ``__get__``, as ``functools.partialmethod`` is, else without
    it), and what ``inspect`` reads its signature from (as it does on the plain class)."""
    get = getattr(type(init), "__get__", None)

    def calls(this: object, /, *args: Any, **kwargs: Any) -> Any:
        return (init if get is None else get(init, this, type(this)))(*args, **kwargs)

    return calls, init if get is None else get(init, None, cls)


def _observe(this: str, how: str = "observe") -> str:
    return f"__pytreekit_kind__.{markers.SPEC}.nodes.{how}({this})"


def _proven_check(proven: Layout, this: str) -> list[str]:
    """The check of an instance ``this`` of a proven layout: its static values alone."""
    statics = [f"{this}.{n}" for n in proven.static_names]
    return check_lines(statics, [], METHOD_NAMES, [f"__pytreekit_failed__({this})"]) or ["pass"]


def _observed(this: str) -> list[str]:
    return [_observe(this)]


def _general_check(
    primary: Layout, tells: Callable[[Layout, str, CheckNames, str], list[str]], this: str
) -> list[str]:
    """The check of an instance ``this`` that ``__init__`` may have reached: where ``tells`` it
    holds exactly the primary's fields, their values; else it is observed."""
    fast = tells(primary, this, METHOD_NAMES, "__pytreekit_")
    traced = [_observe(this, "observe_traced"), "return"]  # the collector is out of its reach
    return [*torch_guard(METHOD_NAMES, traced), *fast, _observe(this)]


def _after(this: str, own: list[str], name: str) -> list[str]:
    """What runs when the user's ``__init__`` (the function ``name``) returns: ``own`` for an
    instance of the class itself (on the common path, one test); a subclass's instance that
    inherits this ``__init__`` is observed; one whose own ``__init__`` called this one through
    ``super()`` is left to that one, which checks when it returns."""
    return [
        f"__pytreekit_kind__ = {this}.__class__",
        "if __pytreekit_kind__ is __pytreekit_cls__:",
        *indent(own),
        f"elif __pytreekit_kind__.__init__ is {name}:",
        f"    {_observe(this)}",
    ]


def _like(
    wrapper: types.FunctionType, init: Callable[..., Any], shown: object = None
) -> types.FunctionType:
    """``wrapper`` with ``init``'s defaults and the documentation and annotations of ``shown``
    (what it wraps, for ``inspect``; ``init`` unless said), and marked."""
    shown = init if shown is None else shown
    wrapper.__defaults__ = getattr(init, "__defaults__", None)
    wrapper.__kwdefaults__ = getattr(init, "__kwdefaults__", None)
    for attribute in ("__doc__", "__type_params__"):
        if hasattr(shown, attribute):
            setattr(wrapper, attribute, getattr(shown, attribute))
    copy_annotations(shown, wrapper)
    wrapper.__dict__.update(getattr(shown, "__dict__", {}))
    wrapper.__wrapped__ = shown  # type: ignore[attr-defined]
    setattr(wrapper, markers.WRAPS_INIT, True)
    return wrapper


# -- a proven __init__ in one frame: its own code, compiled again with the check appended -------

_FUTURE = functools.reduce(
    operator.or_, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
)


def _one_frame(
    cls: type,
    init: Callable[..., Any],
    checked: Callable[[str], list[str]],
    key: tuple[object, ...],
    helpers: dict[str, Any],
) -> types.FunctionType | None:
    """``init`` compiled again from its source, with ``checked`` (the lines that check an
    instance of ``cls``, given the name of ``self``; ``key`` tells them apart) and the wrapper's
    handling of other instances appended: one frame where the wrapper makes two. Its lines keep
    their file and numbers (tracebacks, debuggers and coverage see the user's code). ``None``
    unless the source compiles to exactly ``init``'s code (it may have changed on disk, use
    private names that only its class mangles, close over variables, be decorated), or where it
    may return before its end or rebind ``self``."""
    code = getattr(init, "__code__", None)
    if type(init) is not types.FunctionType or code is None:
        return None
    key = (*key, tuple(helpers), code.co_filename)  # equal code may come from another file
    known = _one_frames.setdefault(code, {})  # a class defined again runs the same code
    if key not in known:
        known[key] = _one_frame_code(init, code, checked, tuple(helpers))
    compiled_again = known[key]
    if compiled_again is None:
        return None
    made = made_function(compiled_again, code.co_name, init.__globals__, helpers)
    made.__name__ = "__init__"
    made.__qualname__ = f"{cls.__qualname__}.__init__"
    made.__module__ = cls.__module__
    return made


_one_frames: weakref.WeakKeyDictionary[
    types.CodeType, dict[tuple[object, ...], types.CodeType | None]
] = weakref.WeakKeyDictionary()


def _one_frame_code(
    init: Callable[..., Any],
    code: types.CodeType,
    checked: Callable[[str], list[str]],
    helpers: tuple[str, ...],
) -> types.CodeType | None:
    """The source that ``_one_frame`` makes its function from, compiled: ``init``'s def inside
    ``__pytreekit_make__``, which closes over ``helpers``."""
    found = _definition(init, code) if _appendable(code) else None
    if found is None or any(isinstance(node, ast.Return) for node in _own_nodes(found[0])):
        return None
    definition, prelude = found
    this = code.co_varnames[0]
    # One parse: the factory that closes over the helpers and returns the function, and (at top
    # level here) the lines appended to the function's body.
    factory = ast.parse(
        "\n".join(
            [
                f"def __pytreekit_make__({', '.join(helpers)}):",
                f"    return {code.co_name}",
                *_after(this, checked(this), code.co_name),
            ]
        )
    )
    make, *appended = factory.body
    returned = make.body[0] if isinstance(make, ast.FunctionDef) else None
    assert isinstance(make, ast.FunctionDef) and isinstance(returned, ast.Return)
    assert returned.value is not None
    end = definition.end_lineno or definition.lineno
    for node in (node for stmt in appended for node in ast.walk(stmt)):
        if "lineno" in node._attributes:
            _place(node, end)
    for node in (make, *make.args.args, returned, returned.value):
        _place(node, definition.lineno)  # the factory's own lines: the def's first
    definition.body.extend(appended)
    make.body.insert(0, definition)
    factory.body = [*prelude, make]
    flags = code.co_flags & _FUTURE
    module: types.CodeType = compile(
        factory, code.co_filename, "exec", flags=flags, dont_inherit=True
    )
    return module


def _appendable(code: types.CodeType) -> bool:
    """Whether lines appended to the function's body run on its one way out, reading what they
    mean there: no closure (the factory would add one), none of their names among its own, the
    instance still named by its first parameter (an unproven ``__init__`` may rebind it), not a
    generator (whose body the wrapper never runs)."""
    this = code.co_varnames[0]
    return not (
        code.co_freevars
        or code.co_flags & _SUSPENDS
        or any(n.startswith("__pytreekit") for n in _names_in(code))
        or code.co_name in code.co_names  # as a global, it would become the function itself
        or sum(op in _RETURNS for op in code.co_code[::2]) != 1
        or any(_rebinds(ins, this) for ins in dis.get_instructions(code))
    )


_RETURNS = frozenset(dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)
_SUSPENDS = (
    inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
    | inspect.CO_ITERABLE_COROUTINE
)


def _names_in(code: types.CodeType) -> Iterator[str]:
    """The names ``code`` and the functions, lambdas and comprehensions inside it use: the
    factory's parameters would be theirs too."""
    yield from (*code.co_names, *code.co_varnames, *code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names_in(const)


def _own_nodes(definition: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``definition``'s body, not those of functions or classes defined in it."""
    stack: list[ast.AST] = list(definition.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def _rebinds(ins: dis.Instruction, this: str) -> bool:
    return ins.opname.startswith(("STORE_FAST", "DELETE_FAST")) and this in _names_of(ins.argval)


def _definition(
    init: Callable[..., Any], code: types.CodeType
) -> tuple[ast.FunctionDef, list[ast.stmt]] | None:
    """``init``'s ``def`` parsed from its source at its lines and columns, if compiling it gives
    exactly its code; with the imports to compile before it (``_prelude``)."""
    first = code.co_firstlineno
    last = max((p[1] for p in code.co_positions() if p[1] is not None), default=first)
    lines = linecache.getlines(code.co_filename, init.__globals__)
    source = "".join(lines[first - 1 : last])
    if not source:
        return None  # defined by exec, say: no source to compile
    wrapped = source[:1].isspace()  # a method: its block parses inside one of its own
    # Blank lines before it: every node has its line in the user's file.
    padding = "\n" * (first - 2) + "if 1:\n" if wrapped else "\n" * (first - 1)
    try:
        tree = ast.parse(padding + source)
    except (SyntaxError, ValueError):
        return None
    definition = tree.body[0].body[0] if wrapped else tree.body[0]  # type: ignore[attr-defined]
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        return None
    # A generic def (3.12's ``def f[T]``) is compiled inside a scope of its type parameters.
    if getattr(definition, "type_params", None):  # pragma: Python 3.12+
        return None
    if _compiles_to(code, [definition]):
        return definition, []
    prelude = _prelude(code, code.co_filename, lines)
    if prelude and _compiles_to(code, [*prelude, definition]):
        return definition, prelude
    return None


def _compiles_to(code: types.CodeType, body: list[ast.stmt]) -> bool:
    """Whether ``body``, compiled as a module, defines a function of exactly ``code``."""
    try:
        module = compile(
            ast.Module(body=body, type_ignores=[]),
            code.co_filename,
            "exec",
            flags=code.co_flags & _FUTURE,
            dont_inherit=True,
        )
    except SyntaxError:
        return False
    again = code_named(module, code.co_name)
    return again.replace(co_flags=code.co_flags, co_qualname=code.co_qualname) == code


def _prelude(code: types.CodeType, filename: str, lines: list[str]) -> list[ast.stmt]:
    """Imports binding the names of ``code`` that an import binds in its module: CPython compiles
    ``name.attr(...)`` differently where ``name`` is imported (3.11 to 3.13), so a ``def``
    compiled without them is not its code. Compiled, never run."""
    cached = _imported.get(filename)
    if cached is None or cached[0] is not lines:
        cached = (lines, _imported_names("".join(lines), filename))
        _imported[filename] = cached
    names = sorted(cached[1].intersection(_names_in(code)))
    return ast.parse("import " + ", ".join(f"_ as {name}" for name in names)).body if names else []


# The names a module's imports bind, per file, with the lines they were read from (a module
# changed on disk is read again).
_imported: dict[str, tuple[list[str], frozenset[str]]] = {}


def _imported_names(source: str, filename: str) -> frozenset[str]:
    """The names imports bind in a module's own scope: the flag CPython's compiler asks."""
    try:
        table = symtable.symtable(source, filename, "exec")
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(s.get_name() for s in table.get_symbols() if s.is_imported())


def _place(node: ast.AST, line: int) -> None:
    """Put a node pytreekit adds on ``line`` of the user's file."""
    node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
    node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
