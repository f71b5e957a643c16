"""Annotated classes: made dataclasses by the standard library, given pytreekit's ``__init__``.

``dataclasses.dataclass`` decides everything dataclasses decide (which annotations are fields,
``KW_ONLY``, ``InitVar``, ``ClassVar`` in all its spellings, defaults and descriptor defaults,
field order under inheritance, mutable-default and frozen-inheritance errors,
``__match_args__``). It is asked not to write ``__init__``, ``__repr__`` and ``__eq__``:
pytreekit writes its own (``_dunders``) with the same choices of fields, so they are compiled
once, not twice.

The generated ``__init__`` has exactly the signature dataclasses would give the class and does
what its ``__init__`` does, plus two things: converters run on the values passed in (and on
defaults) before ``__post_init__``, and static values are checked for hashability once
``__post_init__`` has returned.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._codegen import INITIALISING_HELPERS, method, while_initialising
from ._compat import is_field, is_init_var, record_dataclass_params
from ._fields import (
    MISSING,
    SUGGEST,
    Field,
    as_pytree_field,
    check_static_value,
    close_match,
    static_in_metadata,
)
from ._layouts import Storage, check_not_bound_to
from ._spec import Options

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
    annotations: dict[str, Any] = inspect.get_annotations(cls)
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
    if "__dataclass_params__" in cls.__dict__:  # @dataclass under @pytree_class
        _check_existing_dataclass(cls, options)
    else:
        _check_frozen_inheritance(cls, options.frozen)
        had_doc = "__doc__" in cls.__dict__ and cls.__doc__
        if not had_doc:  # dataclasses would compute it from the __init__ it is not writing
            setattr(cls, "__doc__", "pending")
        try:
            dataclasses.dataclass(
                cls,
                init=False,
                repr=False,
                eq=False,
                frozen=options.frozen,
                kw_only=options.kw_only,
            )
        except (TypeError, ValueError) as error:
            raise type(error)(f"{cls.__qualname__}: {error}{_advice(str(error))}") from None
        finally:
            if not had_doc:
                setattr(cls, "__doc__", None)
        record_dataclass_params(cls, init=True, repr=options.repr, eq=options.eq)
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
            signature = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            signature = ""
        setattr(cls, "__doc__", cls.__name__ + signature)


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


def _static_checks(this: str, statics: list[str]) -> list[str]:
    if not statics:
        return []
    return [
        "try:",
        *(f"    __pytreekit_hash__({this}.{name})" for name in statics),
        "except TypeError:",
        f"    __pytreekit_check__({this})",
    ]


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
    storage: Storage,
    helpers: dict[str, Any],
    frozen: bool,
) -> list[str]:
    """What runs after the assignments: ``__post_init__`` and then a check of every field (it
    may store anything), or else a check of the static values that were passed."""
    fields = fields_of(all_fields)
    helpers["__pytreekit_check__"] = value_checker(fields, storage, set_defaults=False)
    if hasattr(cls, "__post_init__"):
        helpers.update(INITIALISING_HELPERS)
        init_vars = [f.name for f in all_fields if is_init_var(f)]
        return [*_post_init(this, init_vars, frozen), f"__pytreekit_check__({this})"]
    helpers["__pytreekit_hash__"] = hash
    # A static default is checked once, at decoration (generated_init), not on every call.
    defaulted = {
        f.name for f in fields if f.init and f.default is not MISSING and f.converter is None
    }
    return _static_checks(this, [f.name for f in fields if f.static and f.name not in defaulted])


def generated_init(
    cls: type, all_fields: Sequence[dataclasses.Field[Any]], storage: Storage, frozen: bool
) -> Callable[..., None]:
    """``__init__`` for ``cls``; ``all_fields`` are its fields and ``InitVar`` pseudo-fields, in
    dataclasses' order."""
    for f in fields_of(all_fields):
        if f.static and f.default is not MISSING and f.converter is None:
            check_static_value(cls, f.name, f.default)
    this = "__pytreekit_self__" if any(f.name == "self" for f in all_fields) else "self"
    helpers: dict[str, Any] = {
        "__pytreekit_has_factory__": _HAS_FACTORY,
        "__pytreekit_setattr__": object.__setattr__,
    }
    parameters = [this, *_parameters(cls, all_fields, helpers)]
    body = _assignments(this, all_fields, helpers, frozen)
    body += _checks(this, cls, all_fields, storage, helpers, frozen)
    annotations = {f.name: _accepted(f) for f in all_fields if f.init} | {"return": None}
    init = method(cls, "__init__", ", ".join(parameters), body, helpers, annotations)
    init.__pytreekit_generated__ = True  # type: ignore[attr-defined]
    return init


def _accepted(f: dataclasses.Field[Any]) -> Any:
    """What ``__init__`` accepts for ``f``: a converter's input (as type checkers read it), so
    that run-time checkers such as beartype take what the converter takes."""
    converter = f.converter if isinstance(f, Field) else None
    if converter is None:
        return f.type
    try:
        first = next(iter(inspect.signature(converter, eval_str=True).parameters.values()))
    except Exception:  # no signature, no parameter, or an annotation that does not evaluate
        return Any
    return Any if first.annotation is inspect.Parameter.empty else first.annotation


# -- a user's own __init__: what it set is checked when it returns -----------------------------


def value_checker(
    fields: tuple[Field, ...], storage: Storage, *, set_defaults: bool
) -> Callable[[object], None]:
    """The check run when an ``__init__`` returns: every field set (a ``default_factory``
    fills one left unset when ``set_defaults``), nothing set that is not a field, static values
    hashable, no method bound to the instance itself."""
    declared = frozenset(f.name for f in fields)

    def check_constructed(obj: object) -> None:
        cls = type(obj)
        for f in fields:
            try:
                value = getattr(obj, f.name)
            except AttributeError:
                if not set_defaults:
                    continue  # flatten names it if it is still unset then
                if f.default_factory is MISSING:
                    raise TypeError(
                        f"{cls.__qualname__}.__init__ returned without setting field "
                        f"{f.name!r}, which has no default. Set self.{f.name} in __init__, or "
                        f"give the field a default in the class body."
                    ) from None
                factory: Callable[[], Any] = f.default_factory  # type: ignore[assignment]
                value = factory()
                object.__setattr__(obj, f.name, value)
            if f.static:
                check_static_value(cls, f.name, value)
            check_not_bound_to(obj, f.name, value)
        if not set_defaults:
            return
        instance_dict = getattr(obj, "__dict__", None)
        if instance_dict:
            extras = [name for name in instance_dict if name not in declared]
            # Each descriptor field may store its value under a name that is not a field's.
            if len(extras) > len(storage.descriptor_fields):
                extra = extras[-1]
                raise TypeError(
                    f"{cls.__qualname__}.__init__ set attribute {extra!r}, which is not a "
                    f"field, so JAX transformations would drop it. Declare it in the class body "
                    f"(`{extra}: <type>`, with `= pytreekit.field(static=True)` if it is not an "
                    f"array), or do not store it on the instance."
                )

    return check_constructed


# -- classes that are dataclasses already, and dataclasses' rules -------------------------------


def _check_existing_dataclass(cls: type, options: Options) -> None:
    params = cls.__dict__["__dataclass_params__"]
    # Python 3.11's dataclass params do not record kw_only: its fields do.
    keyword_only = all(f.kw_only for f in dataclasses.fields(cls))
    for option, given, made in (
        ("frozen", options.frozen, params.frozen),
        ("kw_only", options.kw_only, keyword_only),
    ):
        if given and not made:
            raise TypeError(
                f"{cls.__qualname__} is already a dataclass, so @pytree_class cannot make it "
                f"{option}=True: pass {option}=True to @dataclasses.dataclass instead."
            )


def generated_by_dataclasses(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is a method dataclasses wrote (compiled from a string)."""
    found: Callable[..., Any] | None = cls.__dict__.get(name)
    code = getattr(getattr(found, "__wrapped__", found), "__code__", None)
    return code is not None and code.co_filename in ("<string>", "__create_fn__")


def _check_frozen_inheritance(cls: type, frozen: bool) -> None:
    """dataclasses' rule (frozen and non-frozen dataclasses do not mix), naming both classes."""
    for base in cls.__mro__[1:]:
        params = base.__dict__.get("__dataclass_params__")
        if params is not None and bool(params.frozen) != frozen:
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
