"""Field declarations: ``field()`` and ``Field``, the standard library's field with two additions.

Annotated pytree classes are dataclasses, so their fields are ``dataclasses.Field`` objects;
pytreekit's ``Field`` subclass adds ``static`` and ``converter``. ``dataclasses.field(...)`` works
as a specifier too: its fields are converted, taking ``static`` from ``metadata`` (Equinox's
``{"static": True}`` or flax's ``{"pytree_node": False}``) or from ``pytree_class(static=...)``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

T = TypeVar("T")
V = TypeVar("V")

MISSING: Any = dataclasses.MISSING
"""The "no default" sentinel (the standard library's ``dataclasses.MISSING``)."""

# Field.__init__'s parameters differ between Python versions (3.14 added ``doc``).
_FIELD_PARAMETERS = tuple(inspect.signature(dataclasses.Field.__init__).parameters)[1:]


class Field(dataclasses.Field[Any]):
    """A field of a pytree class: a ``dataclasses.Field`` that also knows whether it is
    ``static`` (part of the treedef, not a leaf) and its ``converter``.

    >>> import dataclasses
    >>> from pytreekit import Field, field
    >>> isinstance(field(static=True), dataclasses.Field)
    True
    """

    __slots__ = ("converter", "static")

    static: bool
    """Whether the field is part of the treedef (compared, hashed, never a leaf)."""
    converter: Callable[[Any], Any] | None
    """Applied by ``__init__`` to the value passed (or defaulted), or ``None``."""

    def __init__(
        self,
        *,
        static: bool = False,
        converter: Callable[[Any], Any] | None = None,
        **dataclass_field: Any,
    ) -> None:
        values: dict[str, Any] = {
            "default": MISSING,
            "default_factory": MISSING,
            "init": True,
            "repr": True,
            "hash": None,
            "compare": True,
            "metadata": None,
            "kw_only": MISSING,
        }
        values.update(dataclass_field)
        super().__init__(**{k: v for k, v in values.items() if k in _FIELD_PARAMETERS})
        self.static = static
        self.converter = converter

    def __repr__(self) -> str:
        extra = f",static={self.static!r},converter={self.converter!r})"
        return "pytreekit." + super().__repr__()[:-1] + extra


def named_field(name: str, static: bool) -> Field:
    """The record of a field found on an instance (classes without annotations)."""
    f = Field(static=static)
    f.name = name
    return f


def static_in_metadata(metadata: Mapping[str, Any]) -> bool:
    """Whether a field's metadata marks it static, in Equinox's or flax's convention."""
    return bool(metadata.get("static", False)) or metadata.get("pytree_node", True) is False


def as_pytree_field(f: dataclasses.Field[Any], static: bool) -> Field:
    """``f`` as a pytreekit ``Field`` (a copy; ``f`` may belong to another class too)."""
    converted = _copy(f)
    if not isinstance(f, Field):
        converted.converter = None
    converted.static = static
    return converted


def _copy(f: dataclasses.Field[Any]) -> Field:
    new = Field.__new__(Field)
    for klass in type(f).__mro__:
        for slot in klass.__dict__.get("__slots__", ()):
            if hasattr(f, slot):
                object.__setattr__(new, slot, getattr(f, slot))
    return new


# The overloads tell type checkers (through dataclass_transform) the field's type and whether it
# has a default. With a converter, the field holds what the converter returns (T) and __init__
# takes what it accepts (V), the default too: pyright reads converter= this way (as PEP 712
# proposed); mypy types the __init__ parameter by the annotation.
@overload
def field(
    *,
    static: bool = False,
    default: V = ...,
    default_factory: Callable[[], V] = ...,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: bool = ...,
    converter: Callable[[V], T],
) -> T: ...
@overload
def field(
    *,
    static: bool = False,
    default: T,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: bool = ...,
    converter: None = None,
) -> T: ...
@overload
def field(
    *,
    static: bool = False,
    default_factory: Callable[[], T],
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: bool = ...,
    converter: None = None,
) -> T: ...
@overload
def field(
    *,
    static: bool = False,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: bool = ...,
    converter: None = None,
) -> Any: ...
def field(
    *,
    static: bool = False,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: Any = MISSING,
    converter: Callable[[Any], Any] | None = None,
) -> Any:
    """Declare a field of a ``@pytree_class``: ``dataclasses.field`` plus two parameters.

    Args:
        static: Put the value in the treedef instead of the leaves. It must be hashable, and
            changing it makes ``jax.jit`` retrace. Use it for sizes, flags and functions.
        converter: Applied to the value passed to the generated ``__init__`` (and to the
            default), before ``__post_init__``; never when JAX rebuilds an instance.
        default, default_factory, init, repr, hash, compare, metadata, kw_only: As for
            ``dataclasses.field``.

    Returns:
        A ``pytreekit.Field`` (a ``dataclasses.Field``), which the class replaces by the default.

    Raises:
        ValueError: Both ``default`` and ``default_factory`` are given.
        TypeError: ``default_factory`` or ``converter`` is not callable, ``metadata`` is not a
            mapping, or a flag (``static``, ``init``, ``repr``, ``compare``, ``kw_only``,
            ``hash``) is not a bool (``hash`` may also be ``None``).

    >>> import jax
    >>> import jax.numpy as jnp
    >>> from pytreekit import field, pytree_class
    >>> @pytree_class
    ... class Linear:
    ...     weights: jax.Array = field(converter=jnp.asarray)
    ...     features: int = field(static=True, default=3)
    >>> jax.tree_util.tree_leaves(Linear([1.0, 2.0]))
    [Array([1., 2.], dtype=float32)]
    """
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError(
            "field() takes default= or default_factory=, not both: keep default= for an "
            "immutable value, default_factory= for a function making a fresh one."
        )
    if default_factory is not MISSING and not callable(default_factory):
        raise TypeError(
            f"field(default_factory=...) must be callable (called with no arguments to make each "
            f"instance's value), got {default_factory!r}."
        )
    if converter is not None and not callable(converter):
        raise TypeError(
            f"field(converter=...) must be callable (called on the value given to __init__), "
            f"got {converter!r}."
        )
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(
            f"field(metadata=...) takes a mapping (a dict of your own annotations) or None, "
            f"got {metadata!r}."
        )
    # dataclasses.field accepts any value for its flags; a wrong one would misconfigure silently.
    flags = {"static": static, "init": init, "repr": repr, "compare": compare}
    if kw_only is not MISSING:
        flags["kw_only"] = kw_only
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"field({name}=...) takes True or False, got {value!r}.")
    if hash is not None and not isinstance(hash, bool):
        raise TypeError(f"field(hash=...) takes True, False or None, got {hash!r}.")
    return Field(
        static=static,
        converter=converter,
        default=default,
        default_factory=default_factory,
        init=init,
        repr=repr,
        hash=hash,
        compare=compare,
        metadata=metadata,
        kw_only=kw_only,
    )
