"""``@pytree_class``: turn a class into a registered pytree, in place.

Everything that depends only on the class happens here, once: reading its fields, generating
``__init__`` and the flatten/unflatten functions, installing the dunder methods, registering with
each backend. Subclasses get the same treatment automatically through ``__init_subclass__``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast, overload

from typing_extensions import dataclass_transform

from . import _backends
from ._dunders import pytree_eq, pytree_hash, pytree_repr
from ._fields import MISSING, Field, declared_fields, field
from ._frozen import frozen_delattr, frozen_setattr, restore_state
from ._init import make_init, wrap_user_init
from ._layouts import state_methods, wrap_unannotated_init
from ._nodes import NodeFunctions
from ._spec import SPEC_ATTR, ClassSpec, Options, own_spec

T = TypeVar("T")


@overload
@dataclass_transform(field_specifiers=(field, Field))
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

    Annotated classes get a dataclass-like ``__init__`` unless they define one; classes without
    annotations keep their ``__init__`` and their fields are the attributes it sets. ``static``
    names fields that belong in the treedef instead of the leaves.

    >>> @pytree_class(static=("in_features", "out_features"))
    ... class Linear:
    ...     def __init__(self, key, in_features, out_features): ...
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


def _decorate(cls: type[T], options: Options) -> type[T]:
    if not isinstance(cls, type):
        what = getattr(cls, "__qualname__", None) or type(cls).__qualname__
        raise TypeError(
            f"@pytree_class decorates classes, but got {what!r} ({type(cls).__qualname__}). "
            f"Apply it to a class statement or pass a class: pytree_class(MyClass)."
        )
    parent = _parent_spec(cls)
    existing = own_spec(cls)  # set when decorated again, e.g. after the automatic subclass set-up
    inherited = existing or parent  # an existing spec already folded in its parent's options
    if inherited is not None:
        options = options._replace(
            static=tuple(dict.fromkeys((*inherited.options.static, *options.static))),
            frozen=options.frozen or inherited.options.frozen,  # no unfreezing a subclass
            backends=tuple(dict.fromkeys((*inherited.backends, *options.backends))),
        )
    _backends.check_backends(options.backends, cls)

    spec = _make_spec(cls, options, parent, existing)
    _settle_class_attributes(cls)
    setattr(cls, SPEC_ATTR, spec)
    _install_init(cls, spec)
    if spec.fields is None:  # copy and pickle keep each instance's layout
        for name, method in state_methods(cls).items():
            setattr(cls, name, method)
    _install_dunders(cls, spec)
    if parent is None and existing is None:
        _install_subclass_hook(cls)
    if existing is None:
        spec.nodes = NodeFunctions(spec)
    else:
        spec.nodes = existing.nodes
        spec.backends = existing.backends
        spec.nodes.reset(spec)
    _backends.register_with(spec, options.backends)
    return cls


def _parent_spec(cls: type) -> ClassSpec | None:
    for base in cls.__mro__[1:]:
        spec = own_spec(base)
        if spec is not None:
            return spec
    return None


def _make_spec(
    cls: type, options: Options, parent: ClassSpec | None, existing: ClassSpec | None
) -> ClassSpec:
    static_names = set(options.static)
    if parent is not None:
        static_names |= parent.static_names
    if existing is not None:
        annotated = existing.fields is not None
        found = {f.name: f for f in existing.fields or ()}
    else:
        inherited = {f.name: f for f in (parent.fields or ())} if parent else {}
        found = declared_fields(cls, inherited)
        if parent is not None:
            annotated = parent.fields is not None
        else:
            annotated = bool(found) or not _user_init(cls)
    if not annotated:
        return ClassSpec(cls, options, None, frozenset(static_names))

    unknown = [name for name in options.static if name not in found]
    if unknown:
        suggestion = difflib.get_close_matches(unknown[0], found, n=1)
        hint = f" Did you mean {suggestion[0]!r}?" if suggestion else ""
        raise TypeError(
            f"{cls.__qualname__}: static={unknown!r} names no field; the fields are "
            f"{tuple(found)}.{hint}"
        )
    fields = tuple(
        f.evolve(static=True) if f.name in static_names and not f.static else f
        for f in found.values()
    )
    static_names |= {f.name for f in fields if f.static}
    return ClassSpec(cls, options, fields, frozenset(static_names))


def _settle_class_attributes(cls: type) -> None:
    """``x: int = field(default=3)`` leaves the default as class attribute, as in dataclasses."""
    for name, value in list(cls.__dict__.items()):
        if isinstance(value, Field):
            if value.default is not MISSING:
                setattr(cls, name, value.default)
            else:
                delattr(cls, name)


def _user_init(cls: type) -> Callable[..., None] | None:
    """The nearest ``__init__`` someone wrote (not generated by pytreekit, not object's)."""
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if klass is object or getattr(init, "__pytreekit_generated__", False):
            return None
        return init  # type: ignore[no-any-return]
    return None  # pragma: no cover - object always has __init__


def _install_init(cls: type, spec: ClassSpec) -> None:
    user_init = _user_init(cls)
    if user_init is None:
        if spec.fields is not None:
            init = make_init(
                cls,
                spec.fields,
                spec.static_names,
                kw_only=spec.options.kw_only,
                frozen=spec.options.frozen,
            )
            setattr(cls, "__init__", init)
    elif not getattr(user_init, "__pytreekit_wraps_init__", False):
        if spec.fields is None:
            wrapped = wrap_unannotated_init(cls, user_init, spec.options.frozen)
        else:
            wrapped = wrap_user_init(user_init)
        setattr(cls, "__init__", wrapped)


def _install_dunders(cls: type, spec: ClassSpec) -> None:
    own = cls.__dict__
    if spec.options.frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own and own[name] not in (frozen_setattr, frozen_delattr):
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
        # A class that defines __hash__ keeps it; otherwise, as with dataclasses, frozen
        # instances hash by value and mutable ones are unhashable.
        if "__hash__" not in own or (own["__hash__"] is None and "__eq__" in own):
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
        _decorate(sub, parent.options)

    setattr(root, "__init_subclass__", classmethod(__init_subclass__))
