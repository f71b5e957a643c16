"""``__init__``: the generated, dataclass-like one for annotated classes without their own, and
the thin wrapper around a user's own.

Both end construction the same way: static fields are checked for hashability (once, here, rather
than on every flatten), and for classes without annotations the instance's attributes tell the
class its layout.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from ._codegen import compile_function, indent
from ._fields import MISSING, Field
from ._frozen import initialising
from ._spec import SPEC_ATTR, ClassSpec
from ._static import check_static_fields


class _FactorySentinel:
    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _FactorySentinel()


def check_parameter_order(cls: type, fields: tuple[Field, ...], kw_only: bool) -> None:
    if kw_only:
        return
    first_default: Field | None = None
    for f in fields:
        if not f.init:
            continue
        if f.has_default:
            first_default = first_default or f
        elif first_default is not None:
            raise TypeError(
                f"{cls.__qualname__}: non-default argument {f.name!r} follows default argument "
                f"{first_default.name!r} in the generated __init__. Give {f.name!r} a default, "
                f"move it before {first_default.name!r}, or use @pytree_class(kw_only=True)."
            )


def make_init(
    cls: type,
    fields: tuple[Field, ...],
    static_names: frozenset[str],
    *,
    kw_only: bool,
    frozen: bool,
) -> types.FunctionType:
    check_parameter_order(cls, fields, kw_only)
    self_name = "__pytreekit_self__" if any(f.name == "self" for f in fields) else "self"
    namespace: dict[str, Any] = {
        "_pytreekit_setattr": object.__setattr__,
        "_pytreekit_has_factory": _HAS_FACTORY,
        "_pytreekit_check_statics": check_static_fields,
        "_pytreekit_static_names": tuple(sorted(static_names)),
        "_pytreekit_initialising": initialising,
    }
    params: list[str] = []
    body: list[str] = []
    for f in fields:
        if f.default is not MISSING:
            namespace[f"_pytreekit_default_{f.name}"] = f.default
        if f.default_factory is not MISSING:
            namespace[f"_pytreekit_factory_{f.name}"] = f.default_factory
        if f.converter is not None:
            namespace[f"_pytreekit_convert_{f.name}"] = f.converter

        if f.init:
            if f.default is not MISSING:
                params.append(f"{f.name}=_pytreekit_default_{f.name}")
            elif f.default_factory is not MISSING:
                params.append(f"{f.name}=_pytreekit_has_factory")
                body.append(f"if {f.name} is _pytreekit_has_factory:")
                body.append(f"    {f.name} = _pytreekit_factory_{f.name}()")
            else:
                params.append(f.name)
            value = f.name
        elif f.default is not MISSING:
            value = f"_pytreekit_default_{f.name}"
        elif f.default_factory is not MISSING:
            value = f"_pytreekit_factory_{f.name}()"
        else:
            continue  # init=False and no default: left for __post_init__ to set
        if f.converter is not None:
            value = f"_pytreekit_convert_{f.name}({value})"
        body.append(f"_pytreekit_setattr({self_name}, {f.name!r}, {value})")

    if hasattr(cls, "__post_init__"):
        if frozen:
            body += [
                f"_pytreekit_initialising.add(id({self_name}))",
                "try:",
                f"    {self_name}.__post_init__()",
                "finally:",
                f"    _pytreekit_initialising.discard(id({self_name}))",
            ]
        else:
            body.append(f"{self_name}.__post_init__()")
    if static_names:
        body.append(f"_pytreekit_check_statics({self_name}, _pytreekit_static_names)")
    body = body or ["pass"]

    if kw_only and params:
        params.insert(0, "*")
    source = f"def __init__({', '.join([self_name, *params])}):\n" + "\n".join(indent(body)) + "\n"
    init = compile_function("__init__", source, namespace, f"{cls.__qualname__}.__init__")
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    init.__pytreekit_generated__ = True  # type: ignore[attr-defined]
    return init


def constructed(obj: object) -> None:
    """What every user ``__init__`` is followed by: static checks and layout observation."""
    spec: ClassSpec = getattr(type(obj), SPEC_ATTR)
    check_static_fields(obj, spec.static_names)
    if spec.fields is None:
        spec.nodes.observe(obj)


def wrap_user_init(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a user's ``__init__``: it runs unchanged, as the instance's initialisation (so a
    frozen class may assign its fields), then ``constructed`` runs once, after the outermost
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
        constructed(self)

    __init__.__pytreekit_wraps_init__ = True  # type: ignore[attr-defined]
    return __init__
