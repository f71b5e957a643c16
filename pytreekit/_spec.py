"""Per-class metadata (``ClassSpec``, kept in one class attribute) and the queries built on it:
``fields`` and ``is_pytree_class``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, NamedTuple

from ._fields import Field, named_field

if TYPE_CHECKING:
    from ._nodes import NodeFunctions

SPEC_ATTR = "__pytreekit_spec__"


class Options(NamedTuple):
    """The decorator's keyword arguments, as given (subclasses inherit them)."""

    static: tuple[str, ...] = ()
    frozen: bool = False
    kw_only: bool = False
    repr: bool = True
    eq: bool = True
    backends: tuple[str, ...] = ("jax",)


class ClassSpec:
    """Everything pytreekit knows about one class, decided once at decoration time.

    ``fields`` is ``None`` for classes without field annotations: their fields are the attributes
    each instance's own ``__init__`` set, discovered from the instance.
    """

    def __init__(
        self,
        cls: type,
        options: Options,
        fields: tuple[Field, ...] | None,
        static_names: frozenset[str],
    ) -> None:
        self.cls = cls
        self.options = options
        self.fields = fields
        self.static_names = static_names
        self.backends: list[str] = []
        self.nodes: NodeFunctions
        # Fields whose class attribute is a data descriptor (dataclasses' descriptor-typed
        # fields, slots): the descriptor keeps the value where it likes, under a name of its own.
        self.declared_names = frozenset(f.name for f in fields or ())
        self.descriptor_fields = frozenset(
            f.name
            for f in fields or ()
            if hasattr(type(inspect.getattr_static(cls, f.name, None)), "__set__")
        )
        # The class's namespace as the user wrote it, before any decoration changed it.
        self.as_written: dict[str, Any] = {}
        # Name-mangled attributes (``self.__cache`` is stored as ``_Linear__cache``) are private.
        self._private_prefixes = tuple(
            f"_{klass.__name__.lstrip('_')}__" for klass in cls.__mro__ if klass is not object
        )

    def is_private(self, name: str) -> bool:
        return name.startswith("__") or name.startswith(self._private_prefixes)

    def attribute_names(self, obj: object) -> tuple[str, ...]:
        """Field names of an instance of an unannotated class: its attributes, in the order set."""
        names: list[str] = []
        for klass in reversed(type(obj).__mro__):
            for slot in own_slots(klass):
                if not self.is_private(slot) and hasattr(obj, slot):
                    names.append(slot)
        instance_dict = getattr(obj, "__dict__", None)
        if instance_dict is not None:
            names.extend(name for name in instance_dict if not self.is_private(name))
        return tuple(names)

    def field_names(self, obj: object) -> tuple[str, ...]:
        """The field names of ``obj``, as flatten sees them (see ``_layouts`` for the rule)."""
        if self.fields is not None:
            return tuple(f.name for f in self.fields)
        return self.nodes.layout_of(obj).names

    def instance_fields(self, obj: object) -> tuple[Field, ...]:
        if self.fields is not None:
            return self.fields
        layout = self.nodes.layout_of(obj)
        return tuple(
            named_field(name, static)
            for name, static in zip(layout.names, layout.static, strict=True)
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Only a class pickled by value (cloudpickle, as Ray, Dask and loky send classes defined
        # in a notebook or a function) carries its spec: the receiving process rebuilds the node
        # functions and registers the class there. Locks and generated code stay behind.
        state = {
            k: v for k, v in self.__dict__.items() if k not in ("nodes", "backends", "as_written")
        }
        return restore_spec, (type(self), state)


def restore_spec(spec_type: type[ClassSpec], state: dict[str, Any]) -> ClassSpec:
    """Unpickle a spec: the class is registered with its backends in this process (once, also
    when the same class arrives again)."""
    from ._backends import register_with
    from ._nodes import NodeFunctions

    cls = state["cls"]
    existing = own_spec(cls)
    if existing is not None and hasattr(existing, "nodes"):
        return existing
    spec = object.__new__(spec_type)
    spec.__dict__.update(state)
    spec.backends = []
    spec.as_written = {}
    # Set at once: the rest of the class's state (a layout) may need it while being unpickled.
    setattr(cls, SPEC_ATTR, spec)
    spec.nodes = NodeFunctions(spec)
    register_with(spec, spec.options.backends)
    return spec


def own_slots(klass: type) -> tuple[str, ...]:
    slots = klass.__dict__.get("__slots__", ())
    if isinstance(slots, str):
        slots = (slots,)
    return tuple(s for s in slots if s not in ("__dict__", "__weakref__"))


def own_spec(cls: type) -> ClassSpec | None:
    """The spec of ``cls`` itself (not one inherited from a base)."""
    spec = cls.__dict__.get(SPEC_ATTR)
    return spec if isinstance(spec, ClassSpec) else None


def spec_of(obj: Any, caller: str) -> ClassSpec:
    """The spec for a pytree class or instance, or a ``TypeError`` saying what ``caller`` needs."""
    cls = obj if isinstance(obj, type) else type(obj)
    spec = own_spec(cls)
    if spec is None:
        raise TypeError(
            f"{caller} expects a @pytree_class class or instance, got "
            f"{'class' if isinstance(obj, type) else 'an instance of'} {cls.__qualname__}; "
            f"decorate it with @pytreekit.pytree_class first."
        )
    return spec


def is_pytree_class(class_or_instance: Any) -> bool:
    """Whether ``class_or_instance`` is (an instance of) a class made a pytree by ``pytree_class``.

    Args:
        class_or_instance: Any object or class.

    Returns:
        ``True`` for pytree classes and their instances, subclasses included (they are made pytree
        classes automatically); ``False`` for anything else. Never raises.

    >>> from pytreekit import is_pytree_class, pytree_class
    >>> @pytree_class
    ... class Point:
    ...     x: float
    >>> is_pytree_class(Point), is_pytree_class(Point(1.0)), is_pytree_class(1.0)
    (True, True, False)
    """
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    return own_spec(cls) is not None


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The fields of a pytree class or instance, in order: ``dataclasses.Field`` records that
    also say whether each is ``static``.

    Args:
        class_or_instance: A pytree class or an instance of one. For a class without field
            annotations the fields are found on instances, so pass an instance: ``fields(linear)``
            lists the attributes its ``__init__`` set.

    Returns:
        A tuple of ``pytreekit.Field``; for annotated classes the same records as
        ``dataclasses.fields``.

    Raises:
        TypeError: ``class_or_instance`` is not a pytree class or instance, or is a class without
            annotations (pass an instance).

    >>> from pytreekit import field, fields, pytree_class
    >>> @pytree_class
    ... class Linear:
    ...     weights: list
    ...     features: int = field(static=True, default=3)
    >>> [(f.name, f.static) for f in fields(Linear)]
    [('weights', False), ('features', True)]
    """
    spec = spec_of(class_or_instance, "fields()")
    if isinstance(class_or_instance, type):
        if spec.fields is None:
            raise TypeError(
                f"fields({spec.cls.__qualname__}): this class has no field annotations, so its "
                f"fields are the attributes each instance sets in __init__; call fields() on an "
                f"instance instead."
            )
        return spec.fields
    return spec.instance_fields(class_or_instance)
