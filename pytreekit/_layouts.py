"""Layouts: which attributes of an instance are its fields (the field rule), which are static,
and what each class has learnt about its instances' layouts (``LayoutTable``).

The field rule, for classes without annotations, applied alike by flatten, ``fields()``,
``repr``, ``==``, ``replace``, copy and pickle: the fields of an instance are the attributes its
outermost ``__init__`` had set when it returned (dict entries and slots, in the order first
assigned), except ``__`` names and name-mangled private ones, while they hold a value. Instances
without a ``__dict__`` cannot record what ``__init__`` set: there a slot is a field whenever it
holds a value.
"""

from __future__ import annotations

import keyword
import threading
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from ._fields import ACCUSE, check_static_value, close_match

LAYOUT_ATTR = "__pytreekit_layout__"
KeyFactory = Callable[[str], Any]

# How many distinct instance-dict key tuples ``observe_slow`` remembers per class (a class whose
# instances set arbitrary attributes must not grow this without bound).
_RAW_CACHE_SIZE = 256


class Layout:
    """One kind of instance: its field names in order, which are static, and each child's key in
    each registry (``keys[backend]``). Interned per class, so treedefs compare them by identity;
    aux data carries the layout, so a process that never built an instance can rebuild one."""

    __slots__ = ("child_names", "cls", "keys", "names", "static", "static_names")

    def __init__(self, cls: type, names: tuple[str, ...], static: tuple[bool, ...]) -> None:
        self.cls = cls
        self.names = names
        self.static = static
        self.child_names = tuple(n for n, s in zip(names, static, strict=True) if not s)
        self.static_names = tuple(n for n, s in zip(names, static, strict=True) if s)
        self.keys: dict[str, tuple[Any, ...]] = {}

    def __reduce__(self) -> tuple[Callable[..., Layout], tuple[Any, ...]]:
        # Unpickled into the interned layout of the receiving process: identity stays equality.
        return layout_for, (self.cls, self.names, self.static)

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{n} (static)" if s else n for n, s in zip(self.names, self.static, strict=True)
        )
        return f"<layout of {self.cls.__qualname__}: {fields}>"


# The table of each decorated class, published when its decoration commits (or it arrives,
# pickled by value): what unpickling a layout interns into.
_published: dict[type, LayoutTable] = {}


def publish(table: LayoutTable) -> None:
    _published[table.cls] = table


def layout_for(cls: type, names: tuple[str, ...], static: tuple[bool, ...]) -> Layout:
    """The interned layout of ``cls`` with these names (what unpickling a layout calls)."""
    table = _published.get(cls)
    if table is None:
        # The class itself is being unpickled by value and this is its own class attribute,
        # which is set anew when the class first meets an instance here.
        return Layout(cls, tuple(names), tuple(static))
    return table.intern(tuple(names), tuple(static))


class Storage(NamedTuple):
    """How instances of a class hold their fields, decided once when it is decorated."""

    has_dict: bool
    slots: tuple[str, ...]  # every slot that can hold a value, base first
    plain_setattr: bool  # no __setattr__ of its own (frozen or the user's): plain stores work
    descriptor_fields: frozenset[str]  # fields whose class attribute is a data descriptor
    private_prefixes: tuple[str, ...]  # name-mangled attributes: "_Linear__"

    @classmethod
    def of(cls, klass: type, field_names: tuple[str, ...], frozen: bool) -> Storage:
        return cls(
            has_dict=bool(getattr(klass, "__dictoffset__", 0)),
            slots=all_slots(klass),
            plain_setattr=not frozen
            and resolved(klass, "__setattr__") is object.__dict__["__setattr__"],
            descriptor_fields=frozenset(
                n for n in field_names if hasattr(type(resolved(klass, n)), "__set__")
            ),
            private_prefixes=tuple(
                f"_{k.__name__.lstrip('_')}__" for k in klass.__mro__ if k is not object
            ),
        )


class LayoutTable:
    """The interned layouts of one class and what it has learnt: its *primary* layout (declared,
    or the first an instance had), whether it was ``used`` as a pytree, and whether instances of
    other layouts exist (*varied*: each carries its layout in ``__pytreekit_layout__``, whose
    class attribute is the primary). ``on_change`` tells the class's node functions.

    Interning and every change of state happen under ``lock``; lookups do not lock (a dict read
    is atomic, also on free-threaded CPython).
    """

    def __init__(
        self,
        cls: type,
        static_names: frozenset[str],
        storage: Storage,
        declared: tuple[tuple[str, ...], tuple[bool, ...]] | None,
        key_factories: dict[str, KeyFactory],
    ) -> None:
        self.cls = cls
        self.static_names = static_names
        self.storage = storage
        self.key_factories = dict(key_factories)
        self.lock = threading.RLock()
        self._by_names: dict[tuple[tuple[str, ...], tuple[bool, ...]], Layout] = {}
        self._raw: dict[tuple[str, ...], Layout] = {}
        self.declared = declared is not None
        self.primary: Layout | None = self.intern(*declared) if declared is not None else None
        self.varied = False  # an instance of another layout than the primary exists
        self.used = False  # flattened, unflattened or built at least once
        self.on_change: Callable[[], None] = _nothing  # set by the class's node functions

    # -- interning --------------------------------------------------------------------------

    def intern(self, names: tuple[str, ...], static: tuple[bool, ...] | None = None) -> Layout:
        if static is None:
            static = tuple(n in self.static_names for n in names)
        key = (names, static)
        layout = self._by_names.get(key)
        if layout is None:
            with self.lock:
                layout = self._by_names.get(key)
                if layout is None:
                    self._check_names(names)
                    layout = Layout(self.cls, names, static)
                    for backend, make_key in self.key_factories.items():
                        layout.keys[backend] = tuple(make_key(n) for n in layout.child_names)
                    self._by_names[key] = layout
        return layout

    def add_key_factory(self, backend: str, make_key: KeyFactory) -> None:
        with self.lock:
            self.key_factories[backend] = make_key
            for layout in self._by_names.values():
                layout.keys[backend] = tuple(make_key(n) for n in layout.child_names)

    def _check_names(self, names: tuple[str, ...]) -> None:
        owner = self.cls.__qualname__
        for name in names:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise TypeError(
                    f"{owner}: attribute {name!r} is not a Python identifier (or is a keyword), "
                    f"so it cannot be a pytree field (key paths and generated code name fields "
                    f"as attributes). Store it under an identifier, or inside a dict field."
                )
        if self.declared:
            return
        # A static name this instance does not set is fine (only some instances may set it),
        # unless it looks like a misspelling of one it does set.
        for static_name in sorted(self.static_names.difference(names)):
            close = close_match(static_name, names, ACCUSE)
            if close:
                raise TypeError(
                    f"{owner}: static={static_name!r} names no attribute that __init__ set, but "
                    f"{close!r} is one. Check the spelling in @pytree_class(static=...)."
                )

    # -- the field rule -------------------------------------------------------------------------

    def attribute_names(self, obj: object) -> tuple[str, ...]:
        """The fields of ``obj`` by the field rule, read from the instance itself."""
        prefixes = self.storage.private_prefixes
        names = [
            slot
            for slot in self.storage.slots
            if not slot.startswith("__") and not slot.startswith(prefixes) and hasattr(obj, slot)
        ]
        if self.storage.has_dict:
            names.extend(
                n
                for n in obj.__dict__
                if not n.startswith("__") and not n.startswith(prefixes) and n not in names
            )
        return tuple(names)

    def layout_of(self, obj: object) -> Layout:
        """The layout of ``obj``: the declared one, its marker, the primary if it holds every
        primary field, else what it holds (a field deleted since, or an instance made without
        ``__init__``)."""
        if self.declared:
            assert self.primary is not None
            return self.primary
        if self.storage.has_dict:
            marker: Layout | None = obj.__dict__.get(LAYOUT_ATTR)
            known = marker or self.primary
            if known is not None:
                present = tuple(n for n in known.names if hasattr(obj, n))
                if present == known.names:
                    return known
                if marker is known:  # a field was deleted since
                    statics = known.static_names
                    return self.intern(present, tuple(n in statics for n in present))
        layout = self.intern(self.attribute_names(obj))
        if self.primary is None:
            self.note(obj, layout)
        return layout

    # -- what instances teach the class -------------------------------------------------------

    def note(self, obj: object, layout: Layout) -> None:
        """``obj`` (being built, not yet visible to others) has ``layout``: record it."""
        with self.lock:
            if self.primary is None:
                self.primary = layout
                setattr(self.cls, LAYOUT_ATTR, layout)  # the unmarked instances' layout
                self.used = True
                self.on_change()
            if not self.storage.has_dict:
                return  # no marker possible: a slot is a field whenever it holds a value
            instance_dict = obj.__dict__
            if layout is self.primary:
                instance_dict.pop(LAYOUT_ATTR, None)
                return
            instance_dict[LAYOUT_ATTR] = layout
            if not self.varied:
                self.varied = True
                self.on_change()

    def first_use(self) -> None:
        """The class is flattened or unflattened (generic code runs until the first time)."""
        if self.used:
            return
        with self.lock:
            if not self.used:
                self.used = True
                self.on_change()

    def observe_slow(self, obj: object) -> None:
        """After ``__init__``: record ``obj``'s layout and check its values (the general path of
        the generated ``observe``)."""
        raw = None
        if self.storage.has_dict and not self.storage.slots:
            raw = tuple(obj.__dict__)
            layout = self._raw.get(raw)
            if layout is not None:
                self.check_values(obj, layout)
                if layout is not self.primary:
                    self.note(obj, layout)
                return
        layout = self.intern(self.attribute_names(obj))
        self.check_values(obj, layout)
        if raw is not None and LAYOUT_ATTR not in raw and len(self._raw) < _RAW_CACHE_SIZE:
            self._raw[raw] = layout
        self.note(obj, layout)

    def check_values(self, obj: object, layout: Layout) -> None:
        """What ``__init__`` stored: static values hashable, no method bound to ``obj`` itself."""
        for name, static in zip(layout.names, layout.static, strict=True):
            value = getattr(obj, name)
            if static:
                check_static_value(self.cls, name, value)
            check_not_bound_to(obj, name, value)


def check_not_bound_to(obj: object, name: str, value: Any) -> None:
    """Refuse a field holding a method bound to the instance being built: every rebuilt copy
    (``tree_map``, ``replace``, unflatten) would keep calling the original instance."""
    if type(value) is types.MethodType and value.__self__ is obj:
        owner = type(obj).__qualname__
        function = value.__func__.__name__
        raise TypeError(
            f"{owner}.{name} holds self.{function}, a method bound to the instance being built; "
            f"copies JAX rebuilds would keep calling this instance's method, with its old "
            f"values. Call self.{function}(...) where it is needed, or store the function: "
            f"self.{name} = type(self).{function} (or a module-level function)."
        )


def _nothing() -> None:
    pass


def all_slots(cls: type) -> tuple[str, ...]:
    """Every slot of ``cls`` that holds a value (not ``__dict__``/``__weakref__``), base first."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):  # __slots__ = "x": the one slot x
            slots = (slots,)
        names.extend(s for s in slots if s not in ("__dict__", "__weakref__"))
    return tuple(dict.fromkeys(names))


def resolved(cls: type, name: str) -> Any:
    """What ``cls.<name>`` resolves to, as stored in the defining class's ``__dict__``."""
    return next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
