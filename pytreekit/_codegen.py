"""Generated code: the one place source is compiled (registered with ``linecache``, so tracebacks
and debuggers show it), and pure builders from a layout or a signature to source text, one short
builder per kind of line."""

from __future__ import annotations

import inspect
import itertools
import linecache
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from ._frozen import begin_init, end_init
from ._layouts import LAYOUT_ATTR, Layout, Storage

# The class attribute holding a pytree class's ClassSpec (see _spec); generated code reads it.
SPEC_ATTR = "__pytreekit_spec__"

_serial = itertools.count()


def compile_source(
    source: str, globals_: dict[str, Any], label: str, into: dict[str, Any] | None = None
) -> None:
    """Execute ``source`` with ``globals_``, defining its names ``into`` a dict of their own
    (default: the globals)."""
    filename = f"<pytreekit generated {label} #{next(_serial)}>"
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
    annotations: dict[str, Any] | None = None,
) -> types.FunctionType:
    """``def name(params): body`` as a method of ``cls``. The helpers it calls are closed over
    under ``__pytreekit_*__`` names, so neither a field (a parameter) nor a builtin shadows them."""
    assert all(h.startswith("__pytreekit_") and h.endswith("__") for h in helpers)
    module = sys.modules.get(cls.__module__)
    module_globals = module.__dict__ if module is not None else {"__name__": cls.__module__}
    inner = function(name, params, body).splitlines()
    made: dict[str, Any] = {}
    source = function("__pytreekit_make__", ", ".join(helpers), [*inner, f"return {name}"])
    compile_source(source, module_globals, f"{cls.__qualname__}.{name}", made)
    result: types.FunctionType = made["__pytreekit_make__"](**helpers)
    result.__qualname__ = f"{cls.__qualname__}.{name}"
    result.__module__ = cls.__module__
    if annotations is not None:
        result.__annotations__ = annotations
    return result


def _forwarding(init: Callable[..., Any]) -> tuple[str, str]:
    """``(parameters, arguments)`` of a function with ``init``'s own parameters (after ``self``)
    that calls ``init`` with them; ``*args, **kwargs`` where that cannot be written out."""
    generic = ("*args, **kwargs", "*args, **kwargs")
    if type(init) is not types.FunctionType:
        return generic
    kind = inspect.Parameter
    every = list(inspect.signature(init, follow_wrapped=False).parameters.values())
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


def init_wrapper(cls: type, init: Callable[..., Any], frozen: bool) -> types.FunctionType:
    """Wrap a user's ``__init__``: it runs unchanged (in a frozen class it may assign), then, when
    the outermost ``__init__`` of a ``super().__init__`` chain returns, the class's ``after_init``
    checks what it set. The wrapper has ``init``'s signature, so a call costs one plain call more,
    not the packing of ``*args, **kwargs``; it finds the class through the instance, so a class
    pickled by value takes a working wrapper along."""
    params, arguments = _forwarding(init)
    this = "__pytreekit_self__"
    call = f"__pytreekit_init__({this}, {arguments})"
    body = [
        f"__pytreekit_owner__ = {this}.__class__",
        "if __pytreekit_owner__ is not __pytreekit_cls__ and (",
        "    __pytreekit_owner__.__init__ is not __init__",
        "):  # through super() in a subclass's __init__: that one checks when it returns",
        f"    {call}",
        "    return",
    ]
    body += while_initialising(this, call) if frozen else [call]
    body.append(f"__pytreekit_owner__.{SPEC_ATTR}.after_init({this})")
    helpers = {"__pytreekit_init__": init, "__pytreekit_cls__": cls, **INITIALISING_HELPERS}
    wrapper = method(cls, "__init__", f"{this}, {params}", body, helpers)
    wrapper.__defaults__ = getattr(init, "__defaults__", None)
    wrapper.__kwdefaults__ = getattr(init, "__kwdefaults__", None)
    for attribute in ("__doc__", "__annotations__", "__type_params__"):
        if hasattr(init, attribute):
            setattr(wrapper, attribute, getattr(init, attribute))
    wrapper.__dict__.update(getattr(init, "__dict__", {}))
    wrapper.__wrapped__ = init  # type: ignore[attr-defined]
    wrapper.__pytreekit_wraps_init__ = True  # type: ignore[attr-defined]
    return wrapper


# -- node functions: compiled in the class's own namespace, which holds the layout (_P) and the
# helpers under _-names; fields are only ever attribute names (obj.weights), so none shadows them.


def node_functions_source(
    layout: Layout, storage: Storage, *, declared: bool, varied: bool, traced_init: bool
) -> str:
    """``flatten``, ``unflatten`` and (classes without annotations) ``observe`` for a class whose
    primary layout is ``layout``."""
    sources = [_flatten(layout, storage, declared, varied), _unflatten(layout, storage, declared)]
    if not declared:
        sources.append(_observe(layout, storage, traced_init))
    return "\n".join(sources)


def _reads(names: tuple[str, ...]) -> str:
    return "".join(f"obj.{n}, " for n in names)


def _flatten(layout: Layout, storage: Storage, declared: bool, varied: bool) -> str:
    # Without a __dict__ there is no layout marker, so the slots themselves say which are fields:
    # code for the primary layout is only safe when it covers every slot.
    if not declared and not storage.has_dict and not set(storage.slots) <= set(layout.names):
        return function("flatten", "obj", ["return _flatten_generic(obj)"])
    # Aux data: an annotated class's static values (None without any), whose class fixes the
    # layout; otherwise the layout, then its static values.
    if declared:
        statics = f"({_reads(layout.static_names)})" if layout.static_names else "None"
    else:
        statics = f"(_P, {_reads(layout.static_names)})"
    attempt = [
        "try:",
        f"    return ({_reads(layout.child_names)}), {statics}",
        "except AttributeError:",
        "    pass",
    ]
    if varied:  # instances of other layouts carry a marker; unmarked ones read the class's
        attempt = [f"if obj.{LAYOUT_ATTR} is _P:", *indent(attempt)]
    return function("flatten", "obj", [*attempt, "return _flatten_generic(obj)"])


def _store(name: str, value: str, storage: Storage) -> str:
    """Write a field without the class's ``__setattr__`` (a plain store where it has none)."""
    if name in storage.slots or name in storage.descriptor_fields:
        return f"_setattr(obj, {name!r}, {value})"
    if storage.plain_setattr:
        return f"obj.{name} = {value}"
    return f"_d[{name!r}] = {value}"  # frozen, or the class's own __setattr__


def _unflatten(layout: Layout, storage: Storage, declared: bool) -> str:
    children = iter(range(len(layout.names)))
    statics = iter(range(0 if declared else 1, len(layout.names) + 1))
    stores = [
        _store(n, f"aux[{next(statics)}]" if s else f"children[{next(children)}]", storage)
        for n, s in zip(layout.names, layout.static, strict=True)
    ]
    if any(line.startswith("_d[") for line in stores):
        stores.insert(0, "_d = obj.__dict__")
    build = ["obj = _new(_cls)", *stores, "return obj"]
    if declared:
        return function("unflatten", "aux, children", build)
    body = ["if aux[0] is _P:", *indent(build), "return _unflatten_generic(aux, children)"]
    return function("unflatten", "aux, children", body)


def _observe(layout: Layout, storage: Storage, traced_init: bool) -> str:
    """``observe(obj)``, run when ``__init__`` returns. Its fast path recognises an instance of
    exactly the primary layout without reading ``obj.__dict__`` (on CPython that turns the
    instance's compact attribute storage into a real dict, slowing every later flatten): the
    garbage collector's referents of such an instance are its attribute values and its class, so
    their count says whether ``__init__`` set other attributes. Elsewhere the general path runs."""
    names = layout.names
    slow = ["_observe_slow(obj)"]
    if (
        not names
        or not storage.has_dict
        or storage.slots
        or any(hasattr(layout.cls, n) for n in names)
    ):
        return function("observe", "obj", slow)  # a slot or class attribute could stand in
    check = f"if len(refs) == {len(names) + 1}:"
    if len(names) == 1:  # [dict, class] is also what a materialised __dict__ gives
        check = "if len(refs) == 2 and refs[0].__class__ is not dict:"
    values = [f"_v{i}" for i in range(len(names))]
    hashes = [f"_hash({v})" for v, s in zip(values, layout.static, strict=True) if s]
    no_method = " and ".join(f"{v}.__class__ is not _Method" for v in values) or "True"
    body = [
        "refs = _referents(obj)",
        check,
        "    try:",
        *(f"        {v} = obj.{n}" for v, n in zip(values, names, strict=True)),
        *indent(hashes, 2),
        "    except (AttributeError, TypeError):",
        "        pass",
        "    else:",
        f"        if {no_method}:",
        "            return",
        *slow,
    ]
    if traced_init:  # torch.compile cannot trace the garbage collector
        body = ["if _torch_compiling():", "    return _observe_traced(obj)", *body]
    return function("observe", "obj", body)
