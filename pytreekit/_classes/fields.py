"""Field declarations (``field()``, ``Field``, ``MISSING``) and checks of the values fields hold.

Annotated pytree classes are dataclasses, so their fields are ``dataclasses.Field`` objects.
Whether a field is static, and its converter, live in the field's ``metadata`` (Equinox's,
flax's and ``jax.tree_util.register_dataclass``'s convention), so ``field(static=True)``,
``dataclasses.field(metadata={"static": True})`` and flax's ``{"pytree_node": False}`` all say the
same thing in the same place. ``Field`` is the standard field with two read-only views of that.
"""

from __future__ import annotations

import dataclasses
import inspect
import reprlib
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar, overload

from .._compat import FIELD_HAS_DOC, static_hash
from .._messages import unhashable_error

T = TypeVar("T")
V = TypeVar("V")

MISSING: Any = dataclasses.MISSING
"""The "no default" sentinel (the standard library's ``dataclasses.MISSING``)."""

# Field.__init__'s parameters differ between Python versions (3.14 added ``doc``).
_FIELD_PARAMETERS = tuple(inspect.signature(dataclasses.Field.__init__).parameters)[1:]
_FIELD_SLOTS = dataclasses.Field.__slots__


class Field(dataclasses.Field[Any]):
    """A field of a pytree class: a ``dataclasses.Field`` that also says whether it is ``static``
    (part of the treedef, not a leaf) and what its ``converter`` is, both read from its
    ``metadata``.

    >>> import dataclasses
    >>> from pytreekit import Field, field
    >>> f = field(static=True)
    >>> isinstance(f, dataclasses.Field), f.static, dict(f.metadata)
    (True, True, {'static': True})
    """

    __slots__ = ()  # the standard field's layout, so a dataclasses.Field can become one in place

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
            "doc": None,
        }
        values.update(dataclass_field)
        # Before Python 3.14 dataclasses' fields have no doc: it is kept in the metadata.
        doc = None if FIELD_HAS_DOC else values["doc"]
        values["metadata"] = with_pytree_metadata(values["metadata"], static, converter, doc)
        super().__init__(**{k: v for k, v in values.items() if k in _FIELD_PARAMETERS})

    if not FIELD_HAS_DOC:

        @property
        def doc(self) -> str | None:
            """The field's docstring: ``Field.doc`` of Python 3.14, kept in the metadata (under
            ``"doc"``) before 3.14, so code written for 3.14 runs there too."""
            doc: str | None = _get(self.metadata, "doc", None)
            return doc

    @property
    def static(self) -> bool:
        """Whether the field is part of the treedef (compared, hashed, never a leaf)."""
        return static_in_metadata(self.metadata)

    @property
    def converter(self) -> Callable[[Any], Any] | None:
        """Applied by the generated ``__init__`` to the value passed (or defaulted), or ``None``."""
        converter: Callable[[Any], Any] | None = _get(self.metadata, "converter", None)
        return converter

    @reprlib.recursive_repr()
    def __repr__(self) -> str:  # a field whose type is the field itself shows type=...
        extra = f",static={self.static!r},converter={self.converter!r})"
        if not FIELD_HAS_DOC:  # 3.14's repr shows doc among the standard attributes
            extra = f",doc={self.doc!r}{extra}"
        return "pytreekit." + super().__repr__()[:-1] + extra


def flags(where: str, **values: Any) -> tuple[bool, ...]:
    """Each of ``values`` as a bool (``flag``), refused as ``where(name=...)``."""
    return tuple(flag(value, f"{where}({name}=...)") for name, value in values.items())


def flag(value: Any, where: str, takes: str = "True or False") -> bool:
    """``value`` as a bool, for an option that is a flag. A value equal to its truth (``1``,
    ``np.True_``, from a config file or argparse) is accepted, as dataclasses accepts it; one
    that is not (``"no"``, ``None``, a list) could only set the flag by mistake, and is refused."""
    if value is True or value is False:
        return value
    truth = same = False
    try:
        truth = bool(value)
        same = not isinstance(value, (str, bytes)) and bool(value == truth)
    except Exception:  # an array of several elements, say
        pass
    if not same:
        raise TypeError(f"{where} takes {takes}, got {value!r} ({type(value).__name__}).")
    return truth


def static_in_metadata(metadata: Mapping[str, Any]) -> bool:
    """Whether a field's metadata marks it static, in Equinox's or flax's convention."""
    return bool(_get(metadata, "static", False)) or _get(metadata, "pytree_node", True) is False


def _get(metadata: Mapping[str, Any], key: str, default: Any) -> Any:
    # dataclasses stores a MappingProxyType; its get raises nothing, unless what it wraps has no
    # get: dataclasses.field takes any object with __getitem__ as metadata, whose __getitem__ may
    # say "absent" by any exception (CPython's own tests use one raising AttributeError).
    try:
        return metadata.get(key, default)
    except AttributeError:
        pass
    try:
        return metadata[key]
    except Exception:
        return default


def with_pytree_metadata(
    metadata: Any,
    static: bool,
    converter: Callable[[Any], Any] | None,
    doc: str | None = None,
) -> Any:
    """``metadata`` with ``static``, ``converter`` and ``doc`` recorded in it (unchanged without
    them)."""
    if not static and converter is None and doc is None:
        return metadata
    try:
        merged = dict(metadata or {})
    except (TypeError, ValueError):
        raise TypeError(
            f"field(metadata=...) is combined with static=, converter= (or, before Python 3.14, "
            f"doc=) by copying it into a "
            f"dict, which {metadata!r} does not allow; pass metadata as a dict."
        ) from None
    if static:
        merged["static"] = True
    if converter is not None:
        merged["converter"] = converter
    if doc is not None:
        merged["doc"] = doc
    return merged


class Declared(NamedTuple):
    """A class's fields as ``as_pytree_fields`` made them: in order, by name, and what the
    generated ``__init__`` needs of them."""

    fields: tuple[Field, ...]
    made: dict[str, Field]
    static: frozenset[str]
    converters: dict[str, Callable[[Any], Any]]


def as_pytree_fields(
    found: Sequence[dataclasses.Field[Any]], static: frozenset[str], inherited: set[int]
) -> Declared:
    """``found``, a class's fields, as pytreekit ``Field``s, static where their metadata or
    ``static`` (names) says. A field in ``inherited`` (ids) is a base's too and is copied to
    change; the others were made for this class only, and change in place (``dataclass_entries``
    made them ``Field``s)."""
    made: dict[str, Field] = {}
    for f in found:
        declared = static_in_metadata(f.metadata)
        new = f if isinstance(f, Field) and type(f) is Field else _copied(f)
        if not declared and f.name in static:
            if new is f and id(f) in inherited:
                new = _copied(f)
            new.metadata = types.MappingProxyType(with_pytree_metadata(new.metadata, True, None))
        made[f.name] = new
    return _declared(made)


def _declared(made: dict[str, Field]) -> Declared:
    statics = frozenset(name for name, f in made.items() if static_in_metadata(f.metadata))
    converters = {name: _get(f.metadata, "converter", None) for name, f in made.items()}
    converters = {name: c for name, c in converters.items() if c is not None}
    return Declared(tuple(made.values()), made, statics, converters)


def _copied(f: dataclasses.Field[Any]) -> Field:
    """A base's field, or another library's ``Field`` subclass, as a new ``Field``: the standard
    attributes copied."""
    new = Field.__new__(Field)
    for slot in _FIELD_SLOTS:
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
    doc: str | None = None,
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
    doc: str | None = None,
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
    doc: str | None = None,
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
    doc: str | None = None,
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
    doc: str | None = None,
    converter: Callable[[Any], Any] | None = None,
) -> Any:
    """Declare a field of a ``@pytree_class``: ``dataclasses.field`` plus two parameters.

    ``static`` and ``converter`` are recorded in the field's ``metadata`` (as ``"static"`` and
    ``"converter"``), where Equinox and flax keep them too.

    Args:
        static: Put the value in the treedef instead of the leaves. It must be hashable, and
            changing it makes ``jax.jit`` retrace. Use it for sizes, flags and functions.
        converter: Applied to the value passed to the generated ``__init__`` (and to the
            default), before ``__post_init__``; never when JAX rebuilds an instance.
        default: The default value, as for ``dataclasses.field``.
        default_factory: A function of no arguments giving the default, as for
            ``dataclasses.field``.
        init: Whether ``__init__`` takes the field, as for ``dataclasses.field``.
        repr: Whether ``__repr__`` shows the field, as for ``dataclasses.field``.
        hash: Whether ``__hash__`` uses the field (``None``: as ``compare``), as for
            ``dataclasses.field``.
        compare: Whether ``__eq__`` compares the field, as for ``dataclasses.field``.
        metadata: What ``dataclasses.field`` takes (a mapping, or an object with
            ``__getitem__``); combined with ``static`` or ``converter`` it must convert to a
            ``dict``.
        kw_only: Whether ``__init__`` takes the field by keyword only, as for
            ``dataclasses.field``.
        doc: The field's docstring, ``Field.doc`` (as for ``dataclasses.field`` on Python 3.14;
            on earlier Pythons it is kept in the metadata, under ``"doc"``).

    Returns:
        A ``pytreekit.Field`` (a ``dataclasses.Field``), which the class replaces by the default.

    Raises:
        ValueError: Both ``default`` and ``default_factory`` are given.
        TypeError: ``default_factory`` or ``converter`` is not callable, ``metadata`` is neither
            ``None`` nor mapping-like, or a flag (``static``, ``init``, ``repr``, ``compare``,
            ``kw_only``, ``hash``) is not a bool or a value equal to one such as ``1`` or
            ``np.True_`` (``hash`` may also be ``None``), or ``doc`` is neither a str nor
            ``None``.

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
    if metadata is not None:
        try:
            types.MappingProxyType(metadata)  # what dataclasses.field accepts
        except TypeError:
            raise TypeError(
                f"field(metadata=...) takes a mapping (a dict of your own annotations) or None, "
                f"got {metadata!r}."
            ) from None
    # dataclasses.field accepts any value for its flags; a wrong one would misconfigure silently.
    static, init, repr, compare = flags(
        "field", static=static, init=init, repr=repr, compare=compare
    )
    if kw_only is not MISSING:
        kw_only = flag(kw_only, "field(kw_only=...)")
    if hash is not None:
        hash = flag(hash, "field(hash=...)", "True, False or None")
    if doc is not None and not isinstance(doc, str):
        raise TypeError(f"field(doc=...) takes the field's docstring (a str) or None, got {doc!r}.")
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
        doc=doc,
    )


# -- the values fields hold ---------------------------------------------------------------------


def check_static_value(cls: type, name: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``cls.name`` unless ``value`` can live in a treedef."""
    try:
        static_hash(value)
    except TypeError:
        raise unhashable_error(cls, name, value, "static") from None
