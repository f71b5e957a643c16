"""What decoration decided about a class (``Options``, ``ClassSpec``, kept in one class attribute)
and the public queries on it: ``fields`` and ``is_pytree_class``.

A ``ClassSpec`` is complete and immutable when built; the decorator puts it on the class last,
once every registry accepted the class. What a class learns later (its layouts) lives in its
``LayoutTable``; the spec holds the table through the class's node functions.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple

from .. import _markers as markers
from .fields import Field
from .layouts import LayoutTable
from .nodes import NodeFunctions

# Decorating a class and registering it happen one class at a time: a class decorated from several
# threads at once is decorated once, and every thread sees it complete.
decoration_lock = threading.RLock()


class Options(NamedTuple):
    """The decorator's keyword arguments, as given (subclasses inherit them)."""

    static: tuple[str, ...] = ()
    frozen: bool = False
    kw_only: bool = False
    repr: bool = True
    eq: bool = True
    backends: tuple[str, ...] = ("jax",)


@dataclasses.dataclass(frozen=True, eq=False)
class ClassSpec:
    """Everything pytreekit knows about one class, decided once when it is decorated.

    Only decoration reads ``fields`` (``None`` for a class without annotations); everything else
    reads the layouts of ``table``.
    """

    cls: type
    options: Options
    fields: tuple[Field, ...] | None
    # Its layouts and storage; nodes follow it (a failed re-decoration: the old one again).
    table: LayoutTable
    nodes: NodeFunctions
    backends: tuple[str, ...]
    # The class's namespace as the user wrote it, before any decoration changed it.
    as_written: Mapping[str, Any]
    # The dataclass parameters pytreekit left on the class (a @dataclass run after replaces them).
    dataclass_params: Any = None
    # Made a pytree class by inheritance, not by an explicit @pytree_class.
    automatic: bool = False
    # What decoration proved about the user's __init__ (init.prove_init): "proven: ..." where
    # its wrapper checks only static values, else why every instance is observed.
    init_proof: str = ""


def own_spec(cls: type) -> ClassSpec | None:
    """The spec of ``cls`` itself (not one inherited from a base, nor one another class's
    namespace held when it was copied into ``cls``: dataclasses' ``slots=True`` makes a class
    so)."""
    spec = cls.__dict__.get(markers.SPEC)
    return spec if isinstance(spec, ClassSpec) and spec.cls is cls else None


def copied_spec(cls: type) -> ClassSpec | None:
    """The spec of another class that ``cls``'s namespace holds, copied from that class's."""
    spec = cls.__dict__.get(markers.SPEC)
    return spec if isinstance(spec, ClassSpec) and spec.cls is not cls else None


def spec_of(obj: Any, caller: str, takes: str = "a @pytree_class class or instance") -> ClassSpec:
    """The spec for a pytree class or instance, or a ``TypeError`` saying what ``caller`` needs
    (``takes``)."""
    cls = obj if isinstance(obj, type) else type(obj)
    spec = own_spec(cls)
    if spec is None:
        raise TypeError(
            f"{caller} expects {takes}, got "
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
    return spec_of(class_or_instance, "fields()").table.fields_of(class_or_instance)
