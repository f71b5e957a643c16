"""Field declarations: the ``field()`` specifier, ``Field`` records, reading fields off a class."""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

T = TypeVar("T")


class _MissingType:
    """Sentinel for "no default": ``None`` is a legitimate default."""

    _instance: _MissingType | None = None

    def __new__(cls) -> _MissingType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _MissingType()

_EMPTY_METADATA: Mapping[str, Any] = types.MappingProxyType({})


class Field:
    """One field of a pytree class: its name, whether it is static, how ``__init__`` fills it."""

    __slots__ = (
        "name",
        "type",
        "static",
        "default",
        "default_factory",
        "init",
        "repr",
        "converter",
        "metadata",
    )

    def __init__(
        self,
        *,
        name: str = "",
        type: Any = None,
        static: bool = False,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        init: bool = True,
        repr: bool = True,
        converter: Callable[[Any], Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.static = static
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.converter = converter
        self.metadata = _EMPTY_METADATA if not metadata else types.MappingProxyType(dict(metadata))

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING or self.default_factory is not MISSING

    def evolve(self, **changes: Any) -> Field:
        """A copy with some attributes changed (``Field`` records are shared between classes)."""
        values = {slot: getattr(self, slot) for slot in self.__slots__}
        values.update(changes)
        return Field(**values)

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"static={self.static}"]
        if self.default is not MISSING:
            parts.append(f"default={self.default!r}")
        if self.default_factory is not MISSING:
            parts.append(f"default_factory={self.default_factory!r}")
        if not self.init:
            parts.append("init=False")
        if self.converter is not None:
            parts.append(f"converter={self.converter!r}")
        if self.metadata:
            parts.append(f"metadata={dict(self.metadata)!r}")
        return f"Field({', '.join(parts)})"


# The overloads tell type checkers (through dataclass_transform) the field's type and whether it
# has a default. With a converter the argument type is unknown to them, hence Any.
@overload
def field(
    *,
    static: bool = False,
    default: Any = ...,
    default_factory: Callable[[], Any] = ...,
    init: bool = True,
    repr: bool = True,
    converter: Callable[[Any], Any],
    metadata: Mapping[str, Any] | None = None,
) -> Any: ...
@overload
def field(
    *,
    static: bool = False,
    default: T,
    init: bool = True,
    repr: bool = True,
    converter: None = None,
    metadata: Mapping[str, Any] | None = None,
) -> T: ...
@overload
def field(
    *,
    static: bool = False,
    default_factory: Callable[[], T],
    init: bool = True,
    repr: bool = True,
    converter: None = None,
    metadata: Mapping[str, Any] | None = None,
) -> T: ...
@overload
def field(
    *,
    static: bool = False,
    init: bool = True,
    repr: bool = True,
    converter: None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Any: ...
def field(
    *,
    static: bool = False,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    converter: Callable[[Any], Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """Declare a field of a ``@pytree_class``.

    ``static=True`` puts the value in the treedef instead of the leaves: it must be hashable,
    and changing it makes ``jax.jit`` retrace. ``converter`` runs in the generated ``__init__``
    only, never when JAX rebuilds an instance.

    >>> @pytree_class
    ... class Linear:
    ...     weights: jax.Array
    ...     features: int = field(static=True, default=3)
    """
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("field() takes default= or default_factory=, not both")
    if default_factory is not MISSING and not callable(default_factory):
        raise TypeError(f"field(default_factory=...) must be callable, got {default_factory!r}")
    if converter is not None and not callable(converter):
        raise TypeError(f"field(converter=...) must be callable, got {converter!r}")
    return Field(
        static=static,
        default=default,
        default_factory=default_factory,
        init=init,
        repr=repr,
        converter=converter,
        metadata=metadata,
    )


def own_annotations(cls: type) -> dict[str, Any]:
    """The annotations written in ``cls``'s own body, unevaluated where possible."""
    if sys.version_info >= (3, 14):  # pragma: no cover - annotations became lazy in 3.14
        import annotationlib

        return dict(annotationlib.get_annotations(cls, format=annotationlib.Format.FORWARDREF))
    return dict(inspect.get_annotations(cls))


_CLASSVAR_STRING = re.compile(r"^(?:typing\.|typing_extensions\.|t\.)?ClassVar\b")


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return _CLASSVAR_STRING.match(annotation) is not None
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def declared_fields(cls: type, inherited: Mapping[str, Field]) -> dict[str, Field]:
    """Fields of ``cls``: ``inherited`` first, then the annotations of every class in the MRO not
    already accounted for, base first (the order dataclasses use)."""
    result = dict(inherited)
    for klass in reversed(cls.__mro__):
        if klass is object or "__pytreekit_spec__" in klass.__dict__:
            continue
        for name, annotation in own_annotations(klass).items():
            if _is_classvar(annotation):
                continue
            value = klass.__dict__.get(name, MISSING)
            if isinstance(value, Field):
                declared = value.evolve(name=name, type=annotation)
            elif isinstance(value, types.MemberDescriptorType):  # a __slots__ entry, not a default
                declared = Field(name=name, type=annotation)
            else:
                declared = Field(name=name, type=annotation, default=value)
            if klass is cls:
                _check_default(cls, declared)
            result[name] = declared
    unannotated = [
        name
        for name, value in cls.__dict__.items()
        if isinstance(value, Field) and name not in own_annotations(cls)
    ]
    if unannotated:
        name = unannotated[0]
        raise TypeError(
            f"{cls.__qualname__}.{name} = field(...) has no type annotation, so it is not a field. "
            f"Annotate it: `{name}: <type> = field(...)`."
        )
    return result


def _check_default(cls: type, declared: Field) -> None:
    default = declared.default
    if default is not MISSING and type(default).__hash__ is None:
        # Same rule as dataclasses: a shared mutable default is almost always a bug.
        raise ValueError(
            f"{cls.__qualname__}.{declared.name}: mutable default {type(default).__name__} is not "
            f"allowed because every instance would share it; use "
            f"field(default_factory={type(default).__name__}) instead."
        )
