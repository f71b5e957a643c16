"""Annotated classes: made dataclasses by the standard library, given pytreekit's ``__init__``.

``dataclasses.dataclass`` decides everything dataclasses decide (which annotations are fields,
``KW_ONLY``, ``InitVar``, ``ClassVar`` in all its spellings, defaults and descriptor defaults,
field order under inheritance, mutable-default and frozen-inheritance errors,
``__match_args__``). It is asked not to write ``__init__``, ``__repr__`` and ``__eq__``:
pytreekit writes its own (``methods``) with the same choices of fields, so they are compiled
once, not twice.

The generated ``__init__`` has exactly the signature dataclasses would give the class and does
what its ``__init__`` does, plus two things: converters run on the values passed in (and on
defaults) before ``__post_init__``, and the layout's check runs once ``__post_init__`` has
returned (``_layouts.check``, inlined).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import inspect
import re
import sys
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import _markers as markers
from .._compat import (
    annotate_init,
    class_annotations,
    dataclass_option,
    is_field,
    is_init_var,
    own_dataclass_params,
    record_dataclass_frozen,
    record_dataclass_params,
    signature,
    written_by_dataclasses,
)
from .._messages import SUGGEST, close_match
from .codegen import (
    INITIALISING_HELPERS,
    METHOD_HELPERS,
    METHOD_NAMES,
    check_lines,
    method,
    prove_init,
    while_initialising,
)
from .fields import MISSING, Field, as_pytree_field, check_static_value, static_in_metadata
from .frozen import is_frozen_setattr
from .layouts import Layout, all_slots, check, resolved
from .spec import Options

_CLASSVAR_STRING = re.compile(r"^\s*(?:\w+\.)*ClassVar\b")


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (shown as dataclasses
    shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _Factory()


def has_fields(cls: type) -> bool:
    """Whether dataclasses would find fields: annotations (other than ``ClassVar``) in the class
    body, or fields of a dataclass base."""
    annotations = class_annotations(cls)
    for annotation in annotations.values():
        if isinstance(annotation, str):
            if not _CLASSVAR_STRING.match(annotation):
                return True
        elif annotation is not typing.ClassVar and typing.get_origin(annotation) is not (
            typing.ClassVar
        ):
            return True
    return any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:])


def make_dataclass(cls: type, options: Options) -> list[dataclasses.Field[Any]]:
    """Make ``cls`` (as written) a dataclass; return its fields and ``InitVar`` pseudo-fields in
    dataclasses' order, the fields as pytreekit ``Field``s with ``static`` decided."""
    if own_dataclass_params(cls) is not None:  # @dataclass under @pytree_class
        _check_existing_dataclass(cls, options)
    else:
        _check_frozen_inheritance(cls, options.frozen)
        had_doc = "__doc__" in cls.__dict__ and cls.__doc__
        if not had_doc:  # dataclasses would compute it from the __init__ it is not writing
            setattr(cls, "__doc__", "pending")
        # Decorated again while in use: pytreekit's frozen methods stay until replaced (other
        # threads never see the class unfrozen), so dataclasses must not write its own.
        kept = options.frozen and is_frozen_setattr(cls.__dict__.get("__setattr__"))
        try:
            dataclasses.dataclass(
                cls,
                init=False,
                repr=False,
                eq=False,
                frozen=options.frozen and not kept,
                kw_only=options.kw_only,
            )
        except (TypeError, ValueError) as error:
            raise type(error)(f"{cls.__qualname__}: {error}{_advice(str(error))}") from None
        finally:
            if not had_doc:
                setattr(cls, "__doc__", None)
        record_dataclass_params(cls, init=True, repr=options.repr, eq=options.eq)
        if kept:
            record_dataclass_frozen(cls)
    return _pytree_fields(cls, options)


def _pytree_fields(cls: type, options: Options) -> list[dataclasses.Field[Any]]:
    table: dict[str, dataclasses.Field[Any]] = cls.__dict__["__dataclass_fields__"]
    names = [name for name, f in table.items() if is_field(f)]
    unknown = [name for name in options.static if name not in names]
    if unknown:
        suggestion = close_match(unknown[0], names, SUGGEST)
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        raise TypeError(
            f"{cls.__qualname__}: static={unknown!r} names no field; the fields are "
            f"{tuple(names)}.{hint}"
        )
    inherited = {
        id(f)
        for base in cls.__mro__[1:]
        for f in base.__dict__.get("__dataclass_fields__", {}).values()
    }
    result: list[dataclasses.Field[Any]] = []
    for name, f in table.items():
        if is_field(f):
            static = static_in_metadata(f.metadata) or name in options.static
            f = as_pytree_field(f, static=static, owned=id(f) not in inherited)
            table[name] = f
        if is_field(f) or is_init_var(f):
            result.append(f)
    return result


def document(cls: type) -> None:
    """Give a class without a docstring the one dataclasses would: its name and signature."""
    if not cls.__doc__:
        try:
            text = str(signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        setattr(cls, "__doc__", cls.__name__ + text)


def fields_of(all_fields: Sequence[dataclasses.Field[Any]]) -> tuple[Field, ...]:
    return tuple(f for f in all_fields if isinstance(f, Field) and is_field(f))


def refuse_properties(cls: type, names: Iterable[str], statics: Iterable[str]) -> None:
    """A field name that the class or a base binds to a property names a computed value, which
    flatten would never see (or, for a static name, silently leave out)."""
    statics = set(statics)
    for name in names:
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not isinstance(vars(owner)[name], property):
            continue
        kind = "a static field" if name in statics else "a field"
        raise TypeError(
            f"{cls.__qualname__}.{name} is declared {kind}, but {owner.__qualname__} binds "
            f"{name!r} to a property, which is computed, not stored: pytreekit would never see "
            f"its value. Store the value under another name (say `_{name}`), declare that one, "
            f"and read it in the property."
        )


# -- the generated __init__, one builder per kind of line ---------------------------------------


def _parameter(f: dataclasses.Field[Any], default: str) -> str:
    if f.default is not MISSING:
        return f"{f.name}={default}"
    if f.default_factory is not MISSING:
        return f"{f.name}=__pytreekit_has_factory__"
    return f.name


def _value(f: dataclasses.Field[Any], index: int, helpers: dict[str, Any]) -> str | None:
    """The expression a field is set to, or ``None`` to leave it to the class attribute (or to
    ``__post_init__``), as dataclasses does."""
    default = f"__pytreekit_default_{index}__"
    if f.default_factory is not MISSING:
        helpers[default] = f.default_factory
        value = (
            f"{default}() if {f.name} is __pytreekit_has_factory__ else {f.name}"
            if f.init
            else f"{default}()"
        )
    elif f.init:
        value = f.name
    elif isinstance(f, Field) and f.converter is not None and f.default is not MISSING:
        helpers[default] = f.default
        value = default
    else:
        return None
    if isinstance(f, Field) and f.converter is not None:
        helpers[f"__pytreekit_convert_{index}__"] = f.converter
        value = f"__pytreekit_convert_{index}__({value})"
    return value


def _store(this: str, name: str, value: str, frozen: bool) -> str:
    if frozen:
        return f"__pytreekit_setattr__({this}, {name!r}, {value})"
    return f"{this}.{name} = {value}"


def _post_init(this: str, init_vars: list[str], frozen: bool) -> list[str]:
    call = f"{this}.__post_init__({', '.join(init_vars)})"
    # The instance may assign its fields while __post_init__ runs.
    return while_initialising(this, call) if frozen else [call]


def _parameters(
    cls: type, all_fields: Sequence[dataclasses.Field[Any]], helpers: dict[str, Any]
) -> list[str]:
    """The parameters after ``self``, in dataclasses' order and with its ordering rule."""
    positional: list[str] = []
    keyword: list[str] = []
    seen_default = ""
    for index, f in enumerate(all_fields):
        if not f.init:
            continue
        parameter = _parameter(f, f"__pytreekit_default_{index}__")
        if f.default is not MISSING:
            helpers[f"__pytreekit_default_{index}__"] = f.default
        if f.kw_only:
            keyword.append(parameter)
            continue
        if "=" in parameter:
            seen_default = seen_default or f.name
        elif seen_default:
            raise TypeError(
                f"{cls.__qualname__}: non-default argument {f.name!r} follows default "
                f"argument {seen_default!r}{_advice('non-default argument')}"
            )
        positional.append(parameter)
    return [*positional, *(["*", *keyword] if keyword else [])]


def _assignments(
    this: str, all_fields: Sequence[dataclasses.Field[Any]], helpers: dict[str, Any], frozen: bool
) -> list[str]:
    stores = []
    for index, f in enumerate(all_fields):
        value = None if is_init_var(f) else _value(f, index, helpers)
        if value is not None:
            stores.append(_store(this, f.name, value, frozen))
    return stores


def _checks(
    this: str,
    cls: type,
    all_fields: Sequence[dataclasses.Field[Any]],
    layout: Layout,
    helpers: dict[str, Any],
    frozen: bool,
    after_post_init: Callable[[object], None] | None,
) -> list[str]:
    """What runs after the assignments: ``__post_init__``, then the layout's check and
    ``after_post_init`` (which refuses attributes that are not fields). Without a
    ``__post_init__`` only arguments and defaults were stored, so only static values can be
    wrong, and a field left unset (``init=False`` without a default) is not read."""
    helpers.update(METHOD_HELPERS, __pytreekit_check__=check, __pytreekit_primary__=layout)
    on_failure = [f"__pytreekit_check__({this}, __pytreekit_primary__)"]
    fields = {f.name: f for f in fields_of(all_fields)}
    if hasattr(cls, "__post_init__"):
        helpers.update(INITIALISING_HELPERS)
        init_vars = [f.name for f in all_fields if is_init_var(f)]
        values = [f"{this}.{name}" for name in layout.names]
        statics = [f"{this}.{name}" for name in layout.static_names]
        # A __post_init__ that provably only reads and stores fields (prove_init) can set no
        # other attribute and store no method of the instance: only static values are checked.
        proof = prove_init(cls.__dict__.get("__post_init__"), frozenset(layout.names))
        if proof.stores is not None and set(proof.stores) <= set(layout.names):
            return [
                *_post_init(this, init_vars, frozen),
                *check_lines(statics, [], METHOD_NAMES, on_failure),
            ]
        extras = []
        if after_post_init is not None:
            helpers["__pytreekit_extras__"] = after_post_init
            extras = _extras_lines(this, len(layout.names), layout.cls, helpers)
        return [
            *_post_init(this, init_vars, frozen),
            *check_lines(statics, values, METHOD_NAMES, on_failure, this),
            *extras,
        ]
    statics = [
        f"{this}.{name}"
        for name in layout.static_names
        if fields[name].init
        or fields[name].default is not MISSING
        or fields[name].default_factory is not MISSING
    ]
    return check_lines(statics, [], METHOD_NAMES, on_failure)


def _extras_lines(this: str, count: int, cls: type, helpers: dict[str, Any]) -> list[str]:
    """After ``__post_init__``: the count of the instance's referents (its attribute values and
    its class) proves it holds nothing but fields, without reading its dict; anything else asks
    ``__pytreekit_extras__``. torch.compile cannot trace the garbage collector: while it traces,
    the dict is read instead."""
    slow = [f"__pytreekit_extras__({this})"]
    storage_ok = (
        getattr(cls, "__dictoffset__", 0)
        and not all_slots(cls)
        and not any(hasattr(type(resolved(cls, n)), "__set__") for n in _field_names(cls))
    )
    if not storage_ok:
        return slow
    helpers.update(__pytreekit_referents__=gc.get_referents, __pytreekit_modules__=sys.modules)
    refs = "__pytreekit_refs__"
    return [
        'if "torch" in __pytreekit_modules__ and '
        '__pytreekit_modules__["torch"].compiler.is_compiling():',
        f"    {slow[0]}",
        "else:",
        f"    {refs} = __pytreekit_referents__({this})",
        f"    if len({refs}) > {count + 1} or {refs}[0].__class__ is dict:",
        f"        {slow[0]}",
    ]


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def generated_init(
    cls: type,
    all_fields: Sequence[dataclasses.Field[Any]],
    layout: Layout,
    frozen: bool,
    after_post_init: Callable[[object], None] | None = None,
) -> Callable[..., None]:
    """``__init__`` for ``cls``; ``all_fields`` are its fields and ``InitVar`` pseudo-fields, in
    dataclasses' order; ``layout`` its fields' layout."""
    for f in fields_of(all_fields):  # a bad default, named when the class is defined
        if f.static and f.default is not MISSING and f.converter is None:
            check_static_value(cls, f.name, f.default)
    this = "__pytreekit_self__" if any(f.name == "self" for f in all_fields) else "self"
    helpers: dict[str, Any] = {
        "__pytreekit_has_factory__": _HAS_FACTORY,
        "__pytreekit_setattr__": object.__setattr__,
    }
    parameters = [this, *_parameters(cls, all_fields, helpers)]
    body = _assignments(this, all_fields, helpers, frozen)
    body += _checks(this, cls, all_fields, layout, helpers, frozen, after_post_init)
    init = method(cls, "__init__", ", ".join(parameters), body, helpers)
    parameter_fields = [f for f in all_fields if f.init]
    converted = {
        f.name: functools.partial(_accepted, f.converter)
        for f in parameter_fields
        if isinstance(f, Field) and f.converter is not None
    }
    annotate_init(init, cls, [(f.name, f.type) for f in parameter_fields], converted)
    setattr(init, markers.GENERATED, True)
    return init


def _accepted(converter: Callable[[Any], Any]) -> Any:
    """What ``__init__`` accepts for a converter's field: the converter's input (as type checkers
    read it), so that run-time checkers such as beartype take what the converter takes."""
    try:
        first = next(iter(inspect.signature(converter, eval_str=True).parameters.values()))
    except Exception:  # no signature, no parameter, or an annotation that does not evaluate
        return Any
    return Any if first.annotation is inspect.Parameter.empty else first.annotation


# -- classes that are dataclasses already, and dataclasses' rules -------------------------------


def _check_existing_dataclass(cls: type, options: Options) -> None:
    params = own_dataclass_params(cls)
    # Python 3.11's dataclass params do not record kw_only: its fields do.
    keyword_only = all(f.kw_only for f in dataclasses.fields(cls))
    for option, given, made in (
        ("frozen", options.frozen, dataclass_option(params, "frozen")),
        ("kw_only", options.kw_only, keyword_only),
    ):
        if given and not made:
            raise TypeError(
                f"{cls.__qualname__} is already a dataclass, so @pytree_class cannot make it "
                f"{option}=True: pass {option}=True to @dataclasses.dataclass instead."
            )


def later_run(cls: type, left: object) -> dict[str, Any] | None:
    """The options of a ``@dataclass`` that ran on ``cls`` after pytreekit left ``left`` as its
    dataclass parameters, as ``dataclasses.dataclass`` takes them; ``None`` if none ran. (Python
    3.11's parameters do not record ``match_args`` and ``kw_only``; ``slots`` would make a new
    class, so a slotted dataclass is not run again.)"""
    params = own_dataclass_params(cls)
    if params is None or params is left:
        return None
    options = {name: dataclass_option(params, name) for name in _REPLAYED}
    return {name: value for name, value in options.items() if value is not None}


_REPLAYED = ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only")


def generated_by_dataclasses(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is a method dataclasses wrote (compiled from a string)."""
    return written_by_dataclasses(cls.__dict__.get(name))


def _check_frozen_inheritance(cls: type, frozen: bool) -> None:
    """dataclasses' rule (frozen and non-frozen dataclasses do not mix), naming both classes."""
    for base in cls.__mro__[1:]:
        params = own_dataclass_params(base)
        if params is not None and bool(dataclass_option(params, "frozen")) != frozen:
            this, that = ("frozen", "not frozen") if frozen else ("not frozen", "frozen")
            raise TypeError(
                f"{cls.__qualname__} is {this} but its base {base.__qualname__} is {that}; "
                f"dataclasses do not mix the two. Make both frozen or neither."
            )


def _advice(message: str) -> str:
    if "non-default argument" in message:
        return (
            ". Give it a default, move it before the fields with defaults, or make it "
            "keyword-only (field(kw_only=True), a `_: KW_ONLY` marker, or "
            "@pytree_class(kw_only=True))."
        )
    if "has no type annotation" in message:
        return ". Annotate it: `name: <type> = field(...)`."
    if "Cannot overwrite attribute __setattr__" in message or "__delattr__" in message:
        return (
            ". frozen=True needs to own __setattr__ and __delattr__ to freeze instances: remove "
            "yours, or drop frozen=True."
        )
    return ""
