"""The dataclass hand-over: ``prepare`` decides whether a class is annotated and makes an annotated
one a dataclass, returning what it made (``Prepared``); ``generated_init`` writes its
``__init__``.

``dataclasses.dataclass`` decides everything dataclasses decide (which annotations are fields,
``KW_ONLY``, ``InitVar``, ``ClassVar`` in all its spellings, defaults, field order under
inheritance, its errors, ``__match_args__``). It is asked not to write ``__init__``,
``__repr__`` and ``__eq__``: pytreekit writes its own with the same choices of fields.

The generated ``__init__`` has the signature dataclasses would give the class and does what its
``__init__`` does, plus two things: converters run on the values passed in (and on defaults)
before ``__post_init__``, and the layout's check runs once ``__post_init__`` has returned.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .. import _markers as markers
from .._compat import (
    DATACLASS_PARAMS,
    HAS_DEFAULT_FACTORY,
    IS_CLASSVAR,
    IS_TYPE,
    annotate_init,
    class_annotations,
    dataclass_entries,
    dataclass_option,
    frozen_dataclasses,
    own_dataclass_params,
    record_dataclass_params,
    static_hash,
    written_by_dataclasses,
)
from .._messages import SUGGEST, close_match, unhashable_error
from .fields import MISSING, Declared, Field, as_pytree_fields
from .frozen import is_frozen_setattr
from .init import prove_init
from .layouts import Layout, all_slots, check, resolved
from .methods import nearest_init
from .nodes import (
    INITIALISING_HELPERS,
    METHOD_HELPERS,
    METHOD_NAMES,
    check_lines,
    method,
    torch_guard,
    while_initialising,
)
from .spec import Options


class Prepared(NamedTuple):
    """What ``prepare`` made of a class: for an annotated one, its fields (``declared``) and its
    ``InitVar`` pseudo-fields in dataclasses' order (``entries``); ``own``, the class body as the
    user wrote it, without what dataclasses generated; ``params``, the dataclass parameters left
    on the class."""

    fields: tuple[Field, ...] | None
    declared: Declared | None
    entries: tuple[dataclasses.Field[Any], ...]
    init_vars: frozenset[str]
    own: Mapping[str, Any]
    was_dataclass: bool
    params: Any
    # What a user's @dataclass below decided: eq=False keeps identity (the subclasses' too),
    # repr=False the repr the class inherits, and frozen=True makes the class frozen.
    dataclass_eq: bool = True
    dataclass_frozen: bool = False
    dataclass_repr: bool = True


def prepare(
    cls: type, options: Options, as_written: Mapping[str, Any], annotated: bool | None
) -> Prepared:
    """Make ``cls`` (its namespace as written restored) a dataclass if it is annotated
    (``annotated``: as its pytree parent is; ``None``: decided here), and check its field names."""
    was_dataclass = DATACLASS_PARAMS in as_written
    if not (_is_annotated(cls, as_written) if annotated is None else annotated):
        _check_unannotated(cls, options)
        return Prepared(None, None, (), frozenset(), as_written, False, own_dataclass_params(cls))
    params, eq, frozen, shown = (_check_dataclass if was_dataclass else _make_dataclass)(
        cls, options
    )
    entries, init_vars, inherited = dataclass_entries(cls, Field)
    declared = _pytree_fields(cls, options, entries, init_vars, inherited)
    _refuse_properties(cls, [f.name for f in declared.fields], declared.static)
    own = as_written
    if was_dataclass:  # what dataclasses generated is pytreekit's to replace
        own = {k: v for k, v in own.items() if not written_by_dataclasses(cls.__dict__.get(k))}
    made = tuple(declared.made.get(f.name, f) for f in entries)
    return Prepared(
        declared.fields, declared, made, init_vars, own, was_dataclass, params, eq, frozen, shown
    )


def _check_unannotated(cls: type, options: Options) -> None:
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field):
            raise TypeError(
                f"{cls.__qualname__}.{name} = field(...) has no type annotation, so it is "
                f"not a field. Annotate it: `{name}: <type> = field(...)`."
            )
    _refuse_properties(cls, sorted(options.static), options.static)


def _has_fields(cls: type) -> bool:
    """Whether dataclasses would find fields: annotations (other than ``ClassVar``) in the class
    body, or fields of a dataclass base."""
    if any(not _is_classvar(cls, a) for a in class_annotations(cls).values()):
        return True
    return any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:])


def _is_classvar(cls: type, annotation: object) -> bool:
    """Whether dataclasses reads ``annotation`` in ``cls``'s body as a ``ClassVar`` (a string by
    what its name is in the class's module: an alias of ``ClassVar`` too)."""
    if IS_CLASSVAR(annotation, typing):
        return True
    return isinstance(annotation, str) and IS_TYPE(
        annotation, cls, typing, typing.ClassVar, IS_CLASSVAR
    )


def _is_annotated(cls: type, as_written: Mapping[str, Any]) -> bool:
    """A dataclass already (fields or none), or a class with fields, or one that runs no
    ``__init__`` but ``object``'s (or one pytreekit generated): a dataclass too."""
    return (
        DATACLASS_PARAMS in as_written
        or _has_fields(cls)
        or nearest_init(cls, as_written)[1] in ("object", "generated")
    )


def _make_dataclass(cls: type, options: Options) -> tuple[Any, bool, bool, bool]:
    """Make ``cls`` a dataclass with ``options``: its parameters, and no choice of the user's
    (``eq``, ``frozen``, ``repr``) to carry."""
    if len(cls.__mro__) > 2:  # object is no dataclass
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
    params = record_dataclass_params(
        cls, init=True, repr=options.repr, eq=options.eq, frozen=options.frozen
    )
    return params, True, False, True


def _check_dataclass(cls: type, options: Options) -> tuple[Any, bool, bool, bool]:
    """A ``@dataclass`` under ``@pytree_class``: the options it made must be those asked. Its
    parameters, and its ``eq``, ``frozen`` and ``repr``."""
    params = own_dataclass_params(cls)
    frozen = bool(dataclass_option(params, "frozen"))
    # Python 3.11's dataclass params do not record kw_only: its fields do.
    keyword_only = all(f.kw_only for f in dataclasses.fields(cls))
    for option, given, made in (
        ("frozen", options.frozen, frozen),
        ("kw_only", options.kw_only, keyword_only),
    ):
        if given and not made:
            raise TypeError(
                f"{cls.__qualname__} is already a dataclass, so @pytree_class cannot make it "
                f"{option}=True: pass {option}=True to @dataclasses.dataclass instead."
            )
    eq, shown = (bool(dataclass_option(params, option)) for option in ("eq", "repr"))
    return params, eq, frozen, shown


def _check_frozen_inheritance(cls: type, frozen: bool) -> None:
    """dataclasses' rule (frozen and non-frozen dataclasses do not mix), naming both classes."""
    for base, base_frozen in frozen_dataclasses(cls, 1):
        if base_frozen != frozen:
            this, that = ("frozen", "not frozen") if frozen else ("not frozen", "frozen")
            raise TypeError(
                f"{cls.__qualname__} is {this} but its base {base.__qualname__} is {that}; "
                f"dataclasses do not mix the two. Make both frozen or neither."
            )


def _pytree_fields(
    cls: type,
    options: Options,
    entries: list[dataclasses.Field[Any]],
    init_vars: frozenset[str],
    inherited: set[int],
) -> Declared:
    found = [f for f in entries if f.name not in init_vars]
    names = [f.name for f in found]
    unknown = [name for name in options.static if name not in names]
    if unknown:
        suggestion = close_match(unknown[0], names, SUGGEST)
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        raise TypeError(
            f"{cls.__qualname__}: static={unknown!r} names no field; the fields are "
            f"{tuple(names)}.{hint}"
        )
    declared = as_pytree_fields(found, frozenset(options.static), inherited)
    table: dict[str, dataclasses.Field[Any]] = cls.__dict__["__dataclass_fields__"]
    table.update(declared.made)
    return declared


def _refuse_properties(cls: type, names: list[str], statics: typing.Collection[str]) -> None:
    """A field name that the class or a base binds to a property names a computed value, which
    flatten would never see (or, for a static name, silently leave out)."""
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


def later_run(cls: type, left: object) -> dict[str, Any] | None:
    """The options of a ``@dataclass`` that ran on ``cls`` after pytreekit left ``left`` as its
    dataclass parameters, as ``dataclasses.dataclass`` takes them; ``None`` if none ran. (Python
    3.11's parameters do not record ``match_args`` and ``kw_only``; ``slots`` would make a new
    class, so a slotted dataclass is not run again.)"""
    params = own_dataclass_params(cls)
    if params is None or params is left:
        return None
    options = {name: dataclass_option(params, name) for name in _REPLAYED}
    if options["kw_only"] is None:  # Python 3.11: the class's own fields record it
        options["kw_only"] = _own_fields_kw_only(cls)
    return {name: value for name, value in options.items() if value is not None}


def _own_fields_kw_only(cls: type) -> bool:
    own = [f for f in dataclasses.fields(cls) if f.name in class_annotations(cls)]
    return bool(own) and all(f.kw_only for f in own)


_REPLAYED = ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only")


def changed_since(
    cls: type,
    options: Options,
    left: object,
    made: Mapping[str, Any],
    as_written: Mapping[str, Any],
) -> list[str]:
    """What a ``@dataclass`` run on ``cls`` after its automatic set-up (which left ``left`` as its
    dataclass parameters and ``made`` as its fields) decided otherwise than the set-up did: an
    option asked for (not at its default) that differs from the one applied, a field added or
    gone, or a field whose ``init``, ``kw_only`` or default differ. A field written with a
    specifier (``field(...)``) is compared by name only: the set-up replaced the specifier by its
    default, so a later ``@dataclass`` reads it otherwise."""
    now: Mapping[str, Any] = cls.__dict__.get("__dataclass_fields__") or {}
    return [*_options_changed(cls, options, left), *_fields_changed(now, made, as_written)]


def _options_changed(cls: type, options: Options, left: object) -> list[str]:
    """The options a later ``@dataclass`` asked for (not at dataclasses' default) that differ
    from those the set-up applied."""
    applied = {
        "init": True,
        "repr": options.repr,
        "eq": options.eq,
        "frozen": options.frozen,
        "match_args": True,
        "kw_only": options.kw_only,
    }
    later = later_run(cls, left) or {}
    if dataclass_option(own_dataclass_params(cls), "kw_only") is None:
        later.pop("kw_only", None)  # Python 3.11: read from the fields, compared there
    return [
        f"{name}={value!r} (the set-up applied {name}={applied[name]!r})"
        for name, value in later.items()
        if name in applied and value != _DEFAULTS[name] and value != applied[name]
    ]


def _fields_changed(
    now: Mapping[str, Any], made: Mapping[str, Any], as_written: Mapping[str, Any]
) -> list[str]:
    """Fields added or gone since the set-up made ``made``, and those whose ``init``,
    ``kw_only`` or default differ (one written with ``field(...)`` by name only)."""
    changes = _added_or_gone(now, made)
    compared = _compared(now, made, as_written)
    for attribute in ("init", "kw_only", "default"):
        names = [name for name, f, before in compared if _differs(attribute, f, before)]
        if names:
            changes.append(f"the {attribute} of fields {names!r}")
    return changes


def _added_or_gone(now: Mapping[str, Any], made: Mapping[str, Any]) -> list[str]:
    added = [n for n in now if n not in made]
    gone = [n for n in made if n not in now]
    changes = [f"fields {added!r} added, which the set-up did not see"] if added else []
    return changes + ([f"fields {gone!r} gone"] if gone else [])


def _compared(
    now: Mapping[str, Any], made: Mapping[str, Any], as_written: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    """The fields in both, each as it is now and as the set-up made it; one written with
    ``field(...)`` is compared by name only (the set-up replaced its specifier)."""
    written = {n for n, v in as_written.items() if isinstance(v, dataclasses.Field)}
    kept = [(n, f, made[n]) for n, f in now.items() if n in made and n not in written]
    return [(name, f, before) for name, f, before in kept if f is not before]


def _differs(attribute: str, now: Any, before: Any) -> bool:
    if attribute == "default":
        return not _missing(now.default) and not _same_default(now.default, before.default)
    return bool(getattr(now, attribute) != getattr(before, attribute))


def _missing(default: object) -> bool:
    # A class sent by value and sent back (cloudpickle) has a copy of dataclasses' MISSING.
    return default is MISSING or type(default) is type(dataclasses.MISSING)


def _same_default(now: object, before: object) -> bool:
    """By value and kind (a class sent by value and sent back has copies of its defaults;
    ``True == 1 == 1.0``), where ``==`` answers a bool: dataclasses takes hashable defaults."""
    if now is before or (_missing(now) and _missing(before)):
        return True
    try:
        return type(now) is type(before) and (now == before) is True
    except Exception:  # an == that cannot answer: another default, as far as this can tell
        return False


# dataclasses.dataclass's defaults: a later @dataclass at one of them asked for nothing.
_DEFAULTS = {
    "init": True,
    "repr": True,
    "eq": True,
    "frozen": False,
    "match_args": True,
    "kw_only": False,
}


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


# -- the generated __init__: each builder returns its lines and the helpers they call -----------

Lines = tuple[list[str], dict[str, Any]]


def generated_init(
    cls: type,
    prepared: Prepared,
    layout: Layout,
    frozen: bool,
) -> Callable[..., None]:
    """``__init__`` for the annotated ``cls``; ``layout``: its fields' layout."""
    assert prepared.declared is not None
    converters = prepared.declared.converters
    _check_static_defaults(cls, prepared.declared)
    entries = prepared.entries
    this = "__pytreekit_self__" if any(f.name == "self" for f in entries) else "self"
    parameters, defaults = _parameters(cls, entries)
    stores, values = _assignments(this, prepared, frozen)
    checks, checking = _checks(this, cls, prepared, layout, frozen)
    helpers = {
        "__pytreekit_has_factory__": HAS_DEFAULT_FACTORY,
        "__pytreekit_object__": object,
        **defaults,
        **values,
        **checking,
    }
    init = method(cls, "__init__", ", ".join([this, *parameters]), stores + checks, helpers)
    parameters_ = [f for f in entries if f.init]
    accepted = {
        f.name: functools.partial(_accepted, converters[f.name])
        for f in parameters_
        if f.name in converters
    }
    annotate_init(init, cls, [(f.name, f.type) for f in parameters_], accepted)
    setattr(init, markers.GENERATED, True)
    return init


def _check_static_defaults(cls: type, declared: Declared) -> None:
    """A static field's default must be hashable (a converter's input need not be): named when
    the class is defined."""
    for f in declared.fields:
        if f.name not in declared.static or f.name in declared.converters or f.default is MISSING:
            continue
        try:
            static_hash(f.default)
        except TypeError:
            raise unhashable_error(cls, f.name, f.default, "static") from None


def _parameters(cls: type, entries: tuple[dataclasses.Field[Any], ...]) -> Lines:
    """The parameters after ``self``, in dataclasses' order and with its ordering rule."""
    positional: list[str] = []
    keyword: list[str] = []
    defaults: dict[str, Any] = {}
    seen_default = ""
    for index, f in enumerate(entries):
        if not f.init:
            continue
        parameter = f.name
        if f.default is not MISSING:
            defaults[f"__pytreekit_default_{index}__"] = f.default
            parameter = f"{f.name}=__pytreekit_default_{index}__"
        elif f.default_factory is not MISSING:
            parameter = f"{f.name}=__pytreekit_has_factory__"
        if f.kw_only:
            keyword.append(parameter)
        elif parameter != f.name:
            seen_default = seen_default or f.name
            positional.append(parameter)
        elif seen_default:
            raise TypeError(
                f"{cls.__qualname__}: non-default argument {f.name!r} follows default "
                f"argument {seen_default!r}{_advice('non-default argument')}"
            )
        else:
            positional.append(parameter)
    return [*positional, *(["*", *keyword] if keyword else [])], defaults


def _assignments(this: str, prepared: Prepared, frozen: bool) -> Lines:
    """A store of each field's value; a field left to its class attribute (or to
    ``__post_init__``) is not stored, as dataclasses does."""
    assert prepared.declared is not None
    converters = prepared.declared.converters
    lines: list[str] = []
    helpers: dict[str, Any] = {}
    for index, f in enumerate(prepared.entries):
        if f.name in prepared.init_vars:
            continue
        value, more = _value(f, index, converters.get(f.name))
        if value is None:
            continue
        helpers.update(more)
        store = f"__pytreekit_object__.__setattr__({this}, {f.name!r}, {value})"
        lines.append(store if frozen else f"{this}.{f.name} = {value}")
    return lines, helpers


def _value(
    f: dataclasses.Field[Any], index: int, converter: Callable[[Any], Any] | None
) -> tuple[str | None, dict[str, Any]]:
    """The expression a field is set to (``None``: left to the class attribute, or to
    ``__post_init__``), and the helpers it calls."""
    default = f"__pytreekit_default_{index}__"
    helpers: dict[str, Any] = {}
    if f.default_factory is not MISSING:
        helpers[default] = f.default_factory
        value = f"{default}()"
        if f.init:
            value = f"{default}() if {f.name} is __pytreekit_has_factory__ else {f.name}"
    elif f.init:
        value = f.name
    elif converter is not None and f.default is not MISSING:
        helpers[default] = f.default
        value = default
    else:
        return None, helpers
    if converter is not None:
        helpers[f"__pytreekit_convert_{index}__"] = converter
        value = f"__pytreekit_convert_{index}__({value})"
    return value, helpers


def _checks(
    this: str,
    cls: type,
    prepared: Prepared,
    layout: Layout,
    frozen: bool,
) -> Lines:
    """What runs after the assignments: ``__post_init__``, then the layout's check and the
    table's ``after_post_init`` (which refuses attributes that are not fields). Without a
    ``__post_init__`` only arguments and defaults were stored, so only static values can be
    wrong, and a field left unset (``init=False`` without a default) is not read."""

    def failed(obj: object) -> None:  # a function: torch.compile cannot hold a Layout
        check(obj, layout)

    helpers = {**METHOD_HELPERS, "__pytreekit_failed__": failed}
    on_failure = [f"__pytreekit_failed__({this})"]
    if hasattr(cls, "__post_init__"):
        lines, more = _post_init(this, cls, prepared, layout, frozen, on_failure)
        return lines, helpers | more
    fields = {f.name: f for f in prepared.entries}
    statics = [f"{this}.{name}" for name in layout.static_names if _stored(fields[name])]
    return check_lines(statics, [], METHOD_NAMES, on_failure), helpers


def _stored(f: dataclasses.Field[Any]) -> bool:
    """Whether ``__init__`` stores the field: from an argument, a default or a factory."""
    return f.init or f.default is not MISSING or f.default_factory is not MISSING


def _post_init(
    this: str,
    cls: type,
    prepared: Prepared,
    layout: Layout,
    frozen: bool,
    on_failure: list[str],
) -> Lines:
    init_vars = ", ".join(f.name for f in prepared.entries if f.name in prepared.init_vars)
    call = f"{this}.__post_init__({init_vars})"
    # The instance may assign its fields while __post_init__ runs.
    lines = while_initialising(this, call) if frozen else [call]
    helpers: dict[str, Any] = dict(INITIALISING_HELPERS)
    statics = [f"{this}.{name}" for name in layout.static_names]
    # A __post_init__ that provably only reads and stores fields (prove_init) can set no other
    # attribute and store no method of the instance: only static values are checked.
    proof = prove_init(cls.__dict__.get("__post_init__"), layout.name_set)
    if proof.stores is not None and set(proof.stores) <= layout.name_set:
        return lines + check_lines(statics, [], METHOD_NAMES, on_failure), helpers
    values = [f"{this}.{name}" for name in layout.names]
    lines += check_lines(statics, values, METHOD_NAMES, on_failure, this, "__pytreekit_s")
    lines += _extras_lines(this, layout)
    helpers["__pytreekit_extras__"] = _after_post_init
    return lines, helpers


def _after_post_init(obj: object) -> None:
    # The table found through the instance: torch.compile's tracer, which may run this, follows
    # it there but can hold neither a table nor its bound method in a closure cell.
    getattr(obj.__class__, markers.SPEC).table.after_post_init(obj)


def _extras_lines(this: str, layout: Layout) -> list[str]:
    """After ``__post_init__``: the count of the instance's referents (its attribute values and
    its class) proves it holds nothing but fields, without reading its dict; anything else asks
    ``__pytreekit_extras__``. torch.compile cannot trace the garbage collector: while it traces,
    the dict is read instead."""
    cls = layout.cls
    slow = f"__pytreekit_extras__({this})"
    if (
        not getattr(cls, "__dictoffset__", 0)
        or all_slots(cls)
        or any(hasattr(type(resolved(cls, n)), "__set__") for n in layout.names)
    ):
        return [slow]
    refs = "__pytreekit_refs__"
    return [
        *torch_guard(METHOD_NAMES, [slow]),
        "else:",
        f"    {refs} = {METHOD_NAMES.referents}({this})",
        f"    if len({refs}) > {len(layout.names) + 1} or {refs}[0].__class__ is dict:",
        f"        {slow}",
    ]


def _accepted(converter: Callable[[Any], Any]) -> Any:
    """What ``__init__`` accepts for a converter's field: the converter's input (as type checkers
    read it), so that run-time checkers such as beartype take what the converter takes."""
    try:
        first = next(iter(inspect.signature(converter, eval_str=True).parameters.values()))
    except Exception:  # no signature, no parameter, or an annotation that does not evaluate
        return Any
    return Any if first.annotation is inspect.Parameter.empty else first.annotation
