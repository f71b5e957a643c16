"""Layouts of classes without field annotations: which attributes of an instance are its fields.

The rule, applied identically by flatten, ``fields()``, ``repr``, ``==``, ``replace``, copy and
pickle: **the fields of an instance are the attributes its outermost ``__init__`` had set when it
returned** (instance-dict entries and slots, in the order they were first assigned), except names
starting with ``__`` and name-mangled private names, and only while they still hold a value.
Attributes added later (by a method, or ``functools.cached_property``) are not fields. Instances
without a ``__dict__`` have nowhere to record what ``__init__`` set, so for them a slot is a field
whenever it holds a value.

Each distinct tuple of field names (with which of them are static) is one ``Layout``, interned per
class. The layout travels as the first element of the aux data, so a process that never built an
instance (an unpickled treedef, a ``jax.export`` artifact) can rebuild one, and two treedefs
compare by layout identity, which is cheap.
"""

from __future__ import annotations

import difflib
import functools
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._frozen import initialising

if TYPE_CHECKING:
    from ._nodes import NodeFunctions
    from ._spec import ClassSpec

# Where an instance records a layout other than its class's primary one (see NodeFunctions).
LAYOUT_ATTR = "__pytreekit_layout__"


class Layout:
    """The field names of one kind of instance, in order, and which of them are static."""

    __slots__ = ("child_names", "cls", "names", "static", "static_names")

    def __init__(self, cls: type, names: tuple[str, ...], static: tuple[bool, ...]) -> None:
        self.cls = cls
        self.names = names
        self.static = static
        self.child_names = tuple(n for n, s in zip(names, static, strict=True) if not s)
        self.static_names = tuple(n for n, s in zip(names, static, strict=True) if s)

    def __reduce__(self) -> tuple[Callable[..., Layout], tuple[Any, ...]]:
        # Unpickled into the interned layout of the receiving process: identity stays equality.
        return layout_for, (self.cls, self.names, self.static)

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{n} (static)" if s else n for n, s in zip(self.names, self.static, strict=True)
        )
        return f"<layout of {self.cls.__qualname__}: {fields}>"


class LayoutTable:
    """The interned layouts of one class. Interning happens under a lock; lookups do not lock
    (a dict read is atomic, also on free-threaded CPython)."""

    def __init__(self, spec: ClassSpec) -> None:
        self.spec = spec
        self.lock = threading.RLock()
        self._by_names: dict[tuple[tuple[str, ...], tuple[bool, ...]], Layout] = {}

    def intern(self, names: tuple[str, ...], static: tuple[bool, ...] | None = None) -> Layout:
        if static is None:
            static = tuple(n in self.spec.static_names for n in names)
        key = (names, static)
        layout = self._by_names.get(key)
        if layout is None:
            with self.lock:
                layout = self._by_names.get(key)
                if layout is None:
                    _check_names(self.spec, names)
                    layout = Layout(self.spec.cls, names, static)
                    self._by_names[key] = layout
        return layout


def _check_names(spec: ClassSpec, names: tuple[str, ...]) -> None:
    cls = spec.cls.__qualname__
    for name in names:
        if not name.isidentifier():
            raise TypeError(
                f"{cls}: attribute {name!r} is not a Python identifier, so it cannot be a pytree "
                f"field (key paths and generated code name fields as attributes). Store it under "
                f"an identifier, or inside a dict field."
            )
    # A static name that this instance does not set is fine (only some instances may set it),
    # unless it looks like a misspelling of one that it does set.
    for static_name in sorted(spec.static_names.difference(names)):
        close = difflib.get_close_matches(static_name, names, n=1, cutoff=0.85)
        if close:
            raise TypeError(
                f"{cls}: static={static_name!r} names no attribute that __init__ set, but "
                f"{close[0]!r} is one. Check the spelling in @pytree_class(static=...)."
            )


def layout_for(cls: type, names: tuple[str, ...], static: tuple[bool, ...]) -> Layout:
    """The interned layout of ``cls`` with these names (what unpickling a layout calls)."""
    from ._spec import own_spec

    spec = own_spec(cls)
    if spec is None or not hasattr(spec, "nodes"):
        # The class itself is being unpickled by value and this is its own class attribute,
        # which is set anew when the class first meets an instance here.
        return Layout(cls, tuple(names), tuple(static))
    nodes: NodeFunctions = spec.nodes
    return nodes.layouts.intern(tuple(names), tuple(static))


def wrap_unannotated_init(
    cls: type, init: Callable[..., None], frozen: bool
) -> Callable[..., None]:
    """Wrap the ``__init__`` of a class without annotations: it runs unchanged (a frozen class may
    assign its fields), then the instance's layout is recorded, once, after the outermost
    ``__init__`` of a ``super().__init__`` chain returns."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        owner = self.__class__
        if owner is not cls and owner.__init__ is not __init__:  # through super() in a subclass
            init(self, *args, **kwargs)
            return
        if frozen:
            key = id(self)
            initialising.add(key)
            try:
                init(self, *args, **kwargs)
            finally:
                initialising.discard(key)
        else:
            init(self, *args, **kwargs)
        owner.__pytreekit_spec__.nodes.observe(self)

    functools.update_wrapper(__init__, init)  # signature, annotations, docstring
    __init__.__module__ = cls.__module__
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__pytreekit_wraps_init__ = True  # type: ignore[attr-defined]
    return __init__


def _getstate(self: Any) -> Any:
    state: Any = object.__getstate__(self)  # typeshed says object; it is a dict, tuple or None
    nodes: NodeFunctions = type(self).__pytreekit_spec__.nodes
    if not nodes.has_dict:
        return state  # the slots that hold a value are the fields, wherever they are loaded
    # Record the layout explicitly: the receiving process may have another primary layout.
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    dict_state = {**(dict_state or {}), LAYOUT_ATTR: nodes.layout_of(self)}
    return dict_state if slot_state is None else (dict_state, slot_state)


def _setstate(self: Any, state: Any) -> None:
    # Written to storage directly, as unflatten does: no __setattr__ (frozen classes), no __init__.
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    if dict_state:
        self.__dict__.update(dict_state)
    for name, value in (slot_state or {}).items():
        object.__setattr__(self, name, value)
    layout = dict_state.get(LAYOUT_ATTR) if dict_state else None
    if isinstance(layout, Layout):
        type(self).__pytreekit_spec__.nodes._note(self, layout)


def state_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """``__getstate__``/``__setstate__`` for an unannotated class, so that copy and pickle keep
    each instance's layout (a class that defines its own pickling keeps it)."""
    own = cls.__dict__
    if any(name in own for name in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")):
        return {}
    methods: dict[str, Callable[..., Any]] = {}
    for name, function in (("__getstate__", _getstate), ("__setstate__", _setstate)):
        method = types.FunctionType(function.__code__, function.__globals__, name)
        method.__module__ = cls.__module__
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        methods[name] = method
    return methods
