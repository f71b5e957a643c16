"""``@pytree_class``: turn a class into a registered pytree, in place.

Everything that depends only on the class happens here, once: reading its fields, generating
``__init__`` and the flatten/unflatten functions, installing the dunder methods, registering with
each backend. Subclasses get the same treatment automatically through ``__init_subclass__``.

Annotated classes are made dataclasses by the standard library (``_annotated``); classes without
annotations keep their own ``__init__`` and find their fields per instance (``_layouts``).

Decoration is all-or-nothing: the class's namespace is recorded before anything changes and put
back if any step fails. The record of the class as written also lets a later decoration (an
explicit ``@pytree_class(...)`` after the automatic one a subclass gets) start from the class as
the user wrote it, so the explicit options win.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast, overload

from typing_extensions import dataclass_transform

from . import _annotated, _backends
from ._dunders import pytree_eq, pytree_hash, pytree_repr
from ._fields import Field, field
from ._frozen import frozen_delattr, frozen_setattr, restore_state
from ._layouts import state_methods, wrap_unannotated_init
from ._nodes import NodeFunctions
from ._spec import SPEC_ATTR, ClassSpec, Options, own_spec

T = TypeVar("T")


@overload
@dataclass_transform(field_specifiers=(field, Field, dataclasses.field, dataclasses.Field))
def pytree_class(
    cls: type[T],
    /,
    *,
    static: Iterable[str] = (),
    frozen: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
    backends: Iterable[str] = ("jax",),
) -> type[T]: ...
@overload
def pytree_class(
    cls: None = None,
    /,
    *,
    static: Iterable[str] = (),
    frozen: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
    backends: Iterable[str] = ("jax",),
) -> Callable[[type[T]], type[T]]: ...
def pytree_class(
    cls: type[T] | None = None,
    /,
    *,
    static: Iterable[str] = (),
    frozen: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
    backends: Iterable[str] = ("jax",),
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` a pytree: registered with JAX, rebuilt without calling ``__init__``.

    A class with field annotations becomes a standard-library dataclass (``dataclasses.fields``,
    ``asdict``, ``replace``, ``KW_ONLY``, ``InitVar`` all work) with an array-aware ``__eq__`` and
    a summarising ``__repr__``. A class without annotations keeps its ``__init__``; its fields are
    the attributes that ``__init__`` sets. Subclasses become pytree classes automatically.

    Args:
        cls: The class; omit it to get a decorator taking the options.
        static: Names of fields kept in the treedef instead of the leaves (sizes, flags,
            functions); their values must be hashable.
        frozen: Refuse assignment after ``__init__`` (``FrozenInstanceError``); instances hash
            by value.
        kw_only: Make every field of this class keyword-only in the generated ``__init__``.
        repr: Generate ``__repr__`` (arrays shown as ``f32[3,2]``).
        eq: Generate ``__eq__`` (arrays compared as arrays).
        backends: Registries to register with: ``"jax"``, ``"optree"``, ``"torch"``.

    Returns:
        ``cls`` itself, changed in place (or a decorator doing so).

    Raises:
        TypeError: ``cls`` is not a class, or one pytreekit cannot support (a NamedTuple, an
            Equinox module, a class already registered with JAX); a ``static`` name is not a
            field; anything ``dataclasses.dataclass`` refuses. The class is left unchanged.
        BackendNotInstalledError: A backend's library is not installed.

    >>> import jax
    >>> import jax.numpy as jnp
    >>> from pytreekit import pytree_class
    >>> @pytree_class(static=("in_features", "out_features"))
    ... class Linear:
    ...     def __init__(self, key, in_features, out_features):
    ...         self.in_features, self.out_features = in_features, out_features
    ...         self.weights = jax.random.normal(key, (in_features, out_features))
    >>> layer = Linear(jax.random.key(0), 3, 2)
    >>> [leaf.shape for leaf in jax.tree_util.tree_leaves(layer)]
    [(3, 2)]
    """
    options = Options(
        static=_names(static, "static"),
        frozen=frozen,
        kw_only=kw_only,
        repr=repr,
        eq=eq,
        backends=_names(backends, "backends"),
    )
    if cls is None:

        def decorate(klass: type[T]) -> type[T]:
            return _decorate(klass, options)

        return decorate
    return _decorate(cls, options)


def _names(value: Iterable[str], argument: str) -> tuple[str, ...]:
    if isinstance(value, str):  # static="n" means the one name, not the letters
        return (value,)
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"pytree_class({argument}=...) takes names (str), got {name!r}")
    return names


_PENDING_ATTR = "__pytreekit_pending__"
_ABSENT: Any = object()


def _decorate(cls: type[T], options: Options, *, automatic: bool = False) -> type[T]:
    if not isinstance(cls, type):
        what = getattr(cls, "__qualname__", None) or type(cls).__qualname__
        raise TypeError(
            f"@pytree_class decorates classes, but got {what!r} ({type(cls).__qualname__}). "
            f"Apply it to a class statement or pass a class: pytree_class(MyClass)."
        )
    existing = own_spec(cls)  # set when decorated again, e.g. after the automatic subclass set-up
    pending = cls.__dict__.get(_PENDING_ATTR)  # an automatic set-up that failed
    if existing is None:
        _refuse_unsupported(cls)
    parent = _parent_spec(cls)
    if parent is not None:
        options = options._replace(
            static=tuple(dict.fromkeys((*parent.options.static, *options.static))),
            frozen=options.frozen or parent.options.frozen,  # no unfreezing a subclass
            backends=tuple(dict.fromkeys((*parent.backends, *options.backends))),
        )
    if existing is not None:
        options = options._replace(
            backends=tuple(dict.fromkeys((*existing.backends, *options.backends)))
        )
    _backends.check_backends(options.backends, cls)

    before = _snapshot(cls)
    as_written = existing.as_written if existing is not None else None
    if pending is not None:
        as_written = pending
    if as_written is None:
        as_written = before
    try:
        _restore(cls, as_written)
        spec = _make_spec(cls, options, parent)
        spec.as_written = as_written
        setattr(cls, SPEC_ATTR, spec)
        if spec.fields is None:
            _install_unannotated(cls, spec)
        if parent is None:
            _install_subclass_hook(cls)
        if existing is None:
            spec.nodes = NodeFunctions(spec)
        else:
            spec.nodes = existing.nodes
            spec.backends = existing.backends
            spec.nodes.reset(spec)
        _backends.register_with(spec, options.backends)
    except Exception as error:
        _restore(cls, before)
        if existing is not None:
            existing.nodes.reset(existing)
        if automatic:
            # An explicit @pytree_class(...) on this subclass may still follow and succeed; until
            # it does, building an instance reports why the automatic set-up failed.
            _defer(cls, as_written, error)
            return cls
        raise
    return cls


def _refuse_unsupported(cls: type) -> None:
    """Classes pytreekit cannot make pytrees, refused before anything changes."""
    name = cls.__qualname__
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        raise TypeError(
            f"@pytree_class cannot decorate {name}: it is a NamedTuple, which JAX already treats "
            f"as a pytree (every field a leaf). Use it as it is, or declare an ordinary class with "
            f"the same annotated fields and decorate that."
        )
    for klass in cls.__mro__:
        if klass.__name__ == "Module" and klass.__module__.split(".")[0] == "equinox":
            raise TypeError(
                f"@pytree_class cannot decorate {name}: it is an equinox.Module, which Equinox "
                f"already registers as a pytree. Keep it an Equinox module (pytreekit classes "
                f"and Equinox modules can hold each other), or drop the equinox.Module base."
            )
    if own_spec(cls) is None and _registered_with_jax(cls):
        raise TypeError(
            f"@pytree_class cannot decorate {name}: it is already registered with "
            f"jax.tree_util (by register_pytree_node, register_dataclass, flax.struct or "
            f"similar), and JAX allows one registration per class. Remove the other "
            f"registration, or leave the class as it is."
        )


def _registered_with_jax(cls: type) -> bool:
    from jax._src import tree_util  # JAX has no public query of its registry

    registry = getattr(tree_util, "_registry", None)
    return registry is not None and cls in registry


def _snapshot(cls: type) -> dict[str, Any]:
    """A copy of ``cls``'s namespace. Field specifiers are copied: dataclasses fills them in (name,
    type, ``kw_only``) when it processes the class."""
    return {
        name: copy.copy(value) if isinstance(value, dataclasses.Field) else value
        for name, value in cls.__dict__.items()
    }


def _restore(cls: type, namespace: dict[str, Any]) -> None:
    """Put ``cls``'s namespace back to ``namespace`` (a ``_snapshot``)."""
    for name in list(cls.__dict__):
        if name not in namespace and name not in ("__dict__", "__weakref__"):
            delattr(cls, name)
    for name, value in namespace.items():
        if name in ("__dict__", "__weakref__"):
            continue
        if isinstance(value, dataclasses.Field):
            setattr(cls, name, copy.copy(value))  # the snapshot's copy stays as written
        elif cls.__dict__.get(name, _ABSENT) is not value:
            setattr(cls, name, value)


def _defer(cls: type, as_written: dict[str, Any], error: Exception) -> None:
    message = (
        f"{cls.__qualname__} inherits from a pytree class, so it is made a pytree class too, "
        f"with its parent's options; that failed: {error} Decorate {cls.__qualname__} with "
        f"@pytree_class(...) and the options it needs."
    )

    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        raise TypeError(message) from error

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", __init__)
    setattr(cls, _PENDING_ATTR, as_written)


def _parent_spec(cls: type) -> ClassSpec | None:
    for base in cls.__mro__[1:]:
        spec = own_spec(base)
        if spec is not None:
            return spec
    return None


def _make_spec(cls: type, options: Options, parent: ClassSpec | None) -> ClassSpec:
    if parent is not None:
        annotated = parent.fields is not None
    else:
        annotated = _annotated.has_fields(cls) or _user_init(cls) is None
    if not annotated:
        _refuse_unannotated_fields(cls)
        static_names = set(options.static) | (parent.static_names if parent else set())
        return ClassSpec(cls, options, None, frozenset(static_names))
    inherits_init = parent is not None and _inherits_user_init(cls)
    fields = _annotated.make_dataclass(cls, options, inherits_init)
    return ClassSpec(cls, options, fields, frozenset(f.name for f in fields if f.static))


def _refuse_unannotated_fields(cls: type) -> None:
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field):
            raise TypeError(
                f"{cls.__qualname__}.{name} = field(...) has no type annotation, so it is not a "
                f"field. Annotate it: `{name}: <type> = field(...)`."
            )


def _user_init(cls: type) -> Callable[..., None] | None:
    """The nearest ``__init__`` someone wrote (not generated, not object's)."""
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if klass is object or getattr(init, "__pytreekit_generated__", False):
            return None
        return init  # type: ignore[no-any-return]
    return None  # pragma: no cover - object always has __init__


def _inherits_user_init(cls: type) -> bool:
    """Whether ``cls`` inherits an ``__init__`` a user wrote on a pytree base (an ``__init__`` of
    its own takes precedence in ``make_dataclass``)."""
    for klass in cls.__mro__[1:]:
        init = klass.__dict__.get("__init__")
        if init is not None and own_spec(klass) is not None:
            return bool(getattr(init, "__pytreekit_wraps_init__", False))
    return False


def _install_unannotated(cls: type, spec: ClassSpec) -> None:
    user_init = _user_init(cls)
    if user_init is not None and not getattr(user_init, "__pytreekit_wraps_init__", False):
        setattr(cls, "__init__", wrap_unannotated_init(cls, user_init, spec.options.frozen))
    for name, method in state_methods(cls).items():  # copy and pickle keep each layout
        setattr(cls, name, method)
    own = cls.__dict__
    if spec.options.frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(
                    f"{cls.__qualname__} defines {name} and asks for frozen=True; pytreekit "
                    f"needs to own {name} to freeze instances. Remove one of the two."
                )
        setattr(cls, "__setattr__", frozen_setattr)
        setattr(cls, "__delattr__", frozen_delattr)
        if "__setstate__" not in own:
            setattr(cls, "__setstate__", restore_state)
    if spec.options.repr and "__repr__" not in own:
        setattr(cls, "__repr__", pytree_repr)
    if spec.options.eq and "__eq__" not in own:
        setattr(cls, "__eq__", pytree_eq)
        # As with dataclasses: a class that defines __hash__ (``__hash__ = None`` too) keeps it;
        # otherwise frozen instances hash by value and mutable ones are unhashable. (Python's
        # implicit ``__hash__ = None`` comes with an own ``__eq__``, which this branch excludes.)
        if "__hash__" not in own:
            setattr(cls, "__hash__", pytree_hash if spec.options.frozen else None)


def _install_subclass_hook(root: type) -> None:
    """Subclasses of a pytree class become pytree classes too, with the parent's options."""
    original = root.__dict__.get("__init_subclass__")

    def __init_subclass__(sub: Any, /, **kwargs: Any) -> None:
        if original is not None:
            original.__func__(sub, **kwargs)
        else:
            super(cast(Any, root), sub).__init_subclass__(**kwargs)
        parent = _parent_spec(sub)
        assert parent is not None
        _decorate(sub, parent.options, automatic=True)

    setattr(root, "__init_subclass__", classmethod(__init_subclass__))
