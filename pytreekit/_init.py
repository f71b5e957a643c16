"""``__init__`` of annotated classes: the generated one, and the wrapper around a user's own.

The generated ``__init__`` has exactly the signature the standard library's dataclasses would
give the class (the same parameters, defaults, keyword-only marker and ``InitVar`` handling) and
does what its ``__init__`` does, plus pytreekit's two additions: converters run on the values
passed in (and on defaults) before ``__post_init__``, and static values are checked for
hashability once ``__post_init__`` has returned. It is compiled in the class's module.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

from ._codegen import method_for
from ._fields import MISSING, Field
from ._frozen import initialising
from ._spec import SPEC_ATTR, ClassSpec
from ._static import check_static_value

# dataclasses' own marker for "the default factory was not overridden".
_HAS_DEFAULT_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object())
_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)


def make_init(
    cls: type, all_fields: Sequence[dataclasses.Field[Any]], frozen: bool
) -> types.FunctionType:
    """The generated ``__init__``; ``all_fields`` are the class's fields and ``InitVar`` pseudo
    fields, in dataclasses' order (``cls.__dataclass_fields__``)."""
    init_vars = [f for f in all_fields if f._field_type is _INITVAR]  # type: ignore[attr-defined]
    self_name = "__pytreekit_self__" if any(f.name == "self" for f in all_fields) else "self"
    helpers: dict[str, Any] = {
        "__pytreekit_has_factory__": _HAS_DEFAULT_FACTORY,
        "__pytreekit_setattr__": object.__setattr__,
        "__pytreekit_hash__": hash,
        "__pytreekit_static_error__": _static_error,
    }
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for index, f in enumerate(all_fields):
        default = f"__pytreekit_default_{index}__"
        if f.init:
            if f.default is not MISSING:
                helpers[default] = f.default
                parameter = f"{f.name}={default}"
            elif f.default_factory is not MISSING:
                parameter = f"{f.name}=__pytreekit_has_factory__"
            else:
                parameter = f.name
            (keyword if f.kw_only else positional).append(parameter)
        if f in init_vars:
            continue
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
            continue  # dataclasses leave it to the class attribute (or to __post_init__)
        if isinstance(f, Field) and f.converter is not None:
            helpers[f"__pytreekit_convert_{index}__"] = f.converter
            value = f"__pytreekit_convert_{index}__({value})"
        if frozen:
            body.append(f"__pytreekit_setattr__({self_name}, {f.name!r}, {value})")
        else:
            body.append(f"{self_name}.{f.name} = {value}")

    if hasattr(cls, "__post_init__"):
        call = f"{self_name}.__post_init__({', '.join(f.name for f in init_vars)})"
        if frozen:  # the instance may assign its fields while __post_init__ runs
            helpers["__pytreekit_initialising__"] = initialising
            helpers["__pytreekit_id__"] = id
            body += [
                f"__pytreekit_initialising__.add(__pytreekit_id__({self_name}))",
                "try:",
                f"    {call}",
                "finally:",
                f"    __pytreekit_initialising__.discard(__pytreekit_id__({self_name}))",
            ]
        else:
            body.append(call)
    statics = [f.name for f in all_fields if isinstance(f, Field) and f.static and f.init]
    statics += [
        f.name
        for f in all_fields
        if isinstance(f, Field) and f.static and not f.init and f not in init_vars
    ]
    if statics:
        body += [
            "try:",
            *(f"    __pytreekit_hash__({self_name}.{name})" for name in statics),
            # AttributeError: a static field __post_init__ was to set, and did not; the fields
            # after it are still checked.
            "except (TypeError, AttributeError):",
            f"    __pytreekit_static_error__({self_name}, {tuple(statics)!r})",
        ]
    parameters = [self_name, *positional, *(["*", *keyword] if keyword else [])]
    annotations = {f.name: f.type for f in all_fields if f.init} | {"return": None}
    init = method_for(cls, "__init__", ", ".join(parameters), body, helpers, annotations)
    init.__pytreekit_generated__ = True  # type: ignore[attr-defined]
    return init


def _static_error(obj: object, names: tuple[str, ...]) -> None:
    """Raise for the first static field holding an unhashable value; fields not set are
    skipped (flatten names them if they are still unset then)."""
    for name in names:
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        check_static_value(type(obj), name, value)


def check_constructed(obj: object, spec: ClassSpec) -> None:
    """After a user's own ``__init__`` of an annotated class: every field set (defaults filled
    in), nothing set that is not a field, static values hashable."""
    assert spec.fields is not None
    cls = type(obj)
    for f in spec.fields:
        try:
            value = getattr(obj, f.name)
        except AttributeError:
            if f.default_factory is MISSING:
                raise TypeError(
                    f"{cls.__qualname__}.__init__ returned without setting field {f.name!r}, "
                    f"which has no default. Set self.{f.name} in __init__, or give the field a "
                    f"default in the class body."
                ) from None
            factory: Callable[[], Any] = f.default_factory  # type: ignore[assignment]
            value = factory()
            object.__setattr__(obj, f.name, value)
        if f.static:
            check_static_value(cls, f.name, value)
    instance_dict = getattr(obj, "__dict__", None)
    if instance_dict:
        extras = [name for name in instance_dict if name not in spec.declared_names]
        # Each descriptor field may store its value under a name that is not a field's.
        if len(extras) <= len(spec.descriptor_fields):
            return
        extra = extras[-1]
        raise TypeError(
            f"{cls.__qualname__}.__init__ set attribute {extra!r}, which is not a field, "
            f"so JAX transformations would drop it. Declare it in the class body "
            f"(`{extra}: <type>`, with `= pytreekit.field(static=True)` if it is not an "
            f"array), or do not store it on the instance."
        )


def wrap_user_init(
    init: Callable[..., None], after: Callable[[object], None]
) -> Callable[..., None]:
    """Wrap a user's ``__init__``: it runs unchanged, as the instance's initialisation (so a
    frozen class may assign its fields), then ``after(instance)`` runs once, after the outermost
    ``__init__`` of a ``super().__init__`` chain."""

    @functools.wraps(init)
    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        key = id(self)
        if key in initialising:
            init(self, *args, **kwargs)
            return
        initialising.add(key)
        try:
            init(self, *args, **kwargs)
        finally:
            initialising.discard(key)
        after(self)

    __init__.__pytreekit_wraps_init__ = True  # type: ignore[attr-defined]
    return __init__


def after_annotated_init(obj: object) -> None:
    check_constructed(obj, getattr(type(obj), SPEC_ATTR))
