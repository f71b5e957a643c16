"""Layouts: which attributes of an instance are its fields, which are static, and what each class
knows about its instances' layouts (its *layout table*).

A ``Layout`` is one kind of instance: its fields in order, as ``Field`` records. Everything below
decoration reads layouts, never the kind of class. Decoration picks the table:

- ``FixedLayouts``: an annotated class has exactly one layout, built from its dataclass fields;
- ``LearnedLayouts``: a class without annotations learns one per set of attributes its instances
  hold, by the field rule: the fields of an instance are the attributes its outermost
  ``__init__`` had set when it returned (dict entries and slots, in the order first assigned),
  except ``__`` names, name-mangled private ones and names the class binds to a descriptor
  (a property, a ``cached_property``), while they hold a value. Instances without a ``__dict__``
  cannot record what ``__init__`` set: there a slot is a field whenever it holds a value.

``check`` is the one rule every value of a new instance follows, wherever it was built.
"""

from __future__ import annotations

import functools
import keyword
import operator
import threading
import types
import unicodedata
import weakref
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

# By its name: `from . import` would import this package's __init__, which imports this module.
import pytreekit._classes.torch_seen as torch_seen

from .. import _markers as markers
from .._messages import ACCUSE, close_match
from .fields import MISSING, Field, check_static_value

# The class attributes pytreekit sets: a pytree class's ClassSpec (see _spec), and the layout of
# the instances that carry no marker of their own (instance attribute of the same name).
KeyFactory = Callable[[str], Any]

# How many distinct instance-dict key tuples ``observe_slow`` remembers per class (a class whose
# instances set arbitrary attributes must not grow this without bound).
_RAW_CACHE_SIZE = 256


class Layout:
    """One kind of instance: its fields (``Field`` records, in order), the names each method
    covers, and each child's key in each registry (``keys[backend]``). Interned per class, so
    treedefs compare layouts by identity; aux data carries the layout (but for the layout a class
    declares, see ``bare`` and ``plain``), so a process that never built an instance can rebuild
    one."""

    __slots__ = (
        "bare",
        "child_names",
        "cls",
        "compared",
        "exactly",
        "fields",
        "hashed",
        "hashed_values",
        "keys",
        "name_set",
        "names",
        "plain",
        "read",
        "shown",
        "static",
        "static_names",
    )

    def __init__(self, cls: type, fields: tuple[Field, ...], *, hash_by_name: bool = False) -> None:
        self.cls = cls
        self.fields = fields
        self.names = tuple(f.name for f in fields)
        self.name_set = frozenset(self.names)
        self.static = tuple(f.static for f in fields)
        named = tuple(zip(self.names, self.static, strict=True))
        self.child_names = tuple(name for name, static in named if not static)
        self.static_names = tuple(name for name, static in named if static)
        # As dataclasses chooses them: __eq__ compares, __hash__ hashes, __repr__ shows.
        self.compared = tuple(f.name for f in fields if f.compare)
        self.hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        if hash_by_name:
            # Instances of a class without annotations may hold one set of fields in different
            # orders; == compares them by name, so the hash must not depend on the order.
            self.hashed = tuple(sorted(self.hashed))
        self.shown = tuple(f.name for f in fields if f.repr)
        # Every field (AttributeError if one is unset), and the tuple __hash__ hashes, each read in
        # one C call.
        self.read = _getter(self.names)
        self.hashed_values = _getter(self.hashed)
        self.keys: dict[str, tuple[Any, ...]] = {}
        # ``plain``: flatten gives aux data as register_dataclass's, where the class declares its
        # one layout (FixedLayouts): without static fields, ``bare`` (NodeData((self,)), shown as
        # None); with them, the tuple of static values alone (see ``declared``). Every layout
        # without static fields has its ``bare``: pickled aux data reads it (NodeData's reduce),
        # also once the class is decorated again and the layout is no longer its declared one.
        self.bare = NodeData((self,)) if not self.static_names else None
        self.plain = False
        # The fields whose "is it set" a read cannot tell (LayoutTable.exactly), once known.
        self.exactly: tuple[str, ...] | None = None

    @property
    def values_alone(self) -> bool:
        """Flatten gives the static values alone as aux data (``plain``, with static fields)."""
        return self.plain and self.bare is None

    def __reduce__(self) -> tuple[Callable[..., Layout], tuple[Any, ...]]:
        # Unpickled into the interned layout of the receiving process: identity stays equality.
        return layout_for, (self.cls, self.names, self.static)

    def __repr__(self) -> str:
        # Short: treedefs print it (in errors, jit cache misses, tools showing node data).
        fields = ", ".join(
            f"{n}*" if s else n for n, s in zip(self.names, self.static, strict=True)
        )
        return f"Layout({fields})"


class NodeData(tuple[Any, ...]):
    """The aux data ``(layout,)`` of an annotated class without static fields, one per class: it
    prints as ``None``, so treedefs read as for a class registered by hand with no node data
    (the layout is the class's declaration). Equal to, and hashed as, the plain tuple."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        # Unpickled as the receiving process's own NodeData of the layout (read off the layout,
        # which unpickles interned): pickles name no class of pytreekit's for it.
        return getattr, (self[0], "bare")


def records(names: Iterable[str], static: Iterable[bool]) -> tuple[Field, ...]:
    """``Field`` records for fields known by name and static flag only (found on instances)."""
    made = []
    for name, is_static in zip(names, static, strict=True):
        f = Field(static=is_static)
        f.name = name
        made.append(f)
    return tuple(made)


# The table of each decorated class, published when its decoration commits (or it arrives,
# pickled by value): what unpickling a layout interns into. Weak both ways (the class's spec
# keeps its table alive, and a table refers to its class): a class whose registrations are
# undone may be freed.
_published: weakref.WeakKeyDictionary[type, weakref.ref[LayoutTable]] = weakref.WeakKeyDictionary()


# Per class, the layout (names, static flags) whose aux data is its static values alone: that of
# the first table with static fields the class published (``publish``). Such aux data names no
# layout, so what it means must stay the same for as long as the class lives, and be the same in
# every process that runs the class's source; a class decorated again with other fields carries
# its layout in its aux data instead. A class arriving pickled by value declares what the sender
# declared (``declare_sent``), not what the set-up of the empty class pickle made first did.
Key = tuple[tuple[str, ...], tuple[bool, ...]]
_declared: weakref.WeakKeyDictionary[type, Key] = weakref.WeakKeyDictionary()


def publish(table: LayoutTable) -> None:
    """Make ``table`` the class's (the commit point of its decoration), and decide whether its
    aux data is its static values alone: where the class declared no other layout so. A table
    used before it is published declares its layout all the same (as it does in a process where
    it was not), but its own aux data keeps carrying the layout."""
    cls, primary = table.cls, table.primary
    with table.lock:  # its first use takes the lock: used or not, it stays so meanwhile
        if isinstance(table, FixedLayouts) and primary is not None and primary.static_names:
            key = (primary.names, primary.static)
            primary.plain = _declared.setdefault(cls, key) == key and not table.used
        _published[cls] = weakref.ref(table)


def declare_sent(cls: type, key: Key | None) -> None:
    """What a class arriving pickled by value declared where it was sent from (``None``:
    nothing), in place of what the set-up of the empty class pickle made first declared."""
    if key is None:
        _declared.pop(cls, None)
    else:
        _declared[cls] = key


def published(cls: type) -> LayoutTable | None:
    found = _published.get(cls)
    return None if found is None else found()


# Layouts unpickled while their own class arrives pickled by value, before its table exists (one
# of the class's attributes, a treedef sent in the same stream): the table built as the class
# arrives adopts them, so they are the interned ones and such a treedef equals its instances'.
_arriving: weakref.WeakKeyDictionary[
    type, dict[tuple[tuple[str, ...], tuple[bool, ...]], Layout]
] = weakref.WeakKeyDictionary()


# The tables that adopted them, until published; both under one lock, as threads may unpickle
# one stream's class at once.
_adopting: weakref.WeakKeyDictionary[type, weakref.ref[LayoutTable]] = weakref.WeakKeyDictionary()
_arrival_lock = threading.Lock()


def layout_for(cls: type, names: tuple[str, ...], static: tuple[bool, ...]) -> Layout:
    """The interned layout of ``cls`` with these fields (what unpickling a layout calls)."""
    key = (tuple(as_read(list(names)).values()), tuple(static))
    table = published(cls)
    if table is None:  # the class itself may be arriving: its table is built when its spec does
        with _arrival_lock:
            adopting = _adopting.get(cls)
            table = published(cls) or (adopting() if adopting is not None else None)
            if table is None:
                waiting = _arriving.setdefault(cls, {})
                layout = waiting.get(key)
                if layout is None:
                    layout = waiting[key] = Layout(cls, records(*key))
                return layout
    return table.intern(*key)


def as_read(names: list[str]) -> dict[str, str]:
    """Each of the pickled attribute ``names`` and the name to load it under: its NFKC form (the
    name ``obj.µ`` in source reads) for one that is not NFKC-normal, where no other name is so
    (pickled before the field rule refused such names: it was what tree_map gave it)."""
    taken = set(names)
    renamed = {}
    for name in names:
        normal = name if name.isascii() else unicodedata.normalize("NFKC", name)
        if normal != name and normal not in taken:
            taken.add(normal)
            renamed[name] = normal
        else:
            renamed[name] = name
    return renamed


# Pickles name layout_for where pytreekit 0.2.0 defined it (pytreekit/_layouts.py, now an alias of
# this function): new pickles keep that name, so every pickled layout names one path.
layout_for.__module__ = "pytreekit._layouts"


class Storage(NamedTuple):
    """How instances of a class hold their fields, decided once when it is decorated."""

    has_dict: bool
    slots: tuple[str, ...]  # every slot that can hold a value, base first
    plain_setattr: bool  # no __setattr__ of its own (frozen or the user's): plain stores work
    descriptor_fields: frozenset[str]  # fields whose class attribute is a data descriptor
    private_prefixes: tuple[str, ...]  # name-mangled attributes: "_Linear__"
    descriptors: frozenset[str]  # names bound to a descriptor on the class: never fields

    @classmethod
    def of(cls, klass: type, field_names: tuple[str, ...], frozen: bool) -> Storage:
        slots = all_slots(klass)
        return cls(
            has_dict=bool(getattr(klass, "__dictoffset__", 0)),
            slots=slots,
            plain_setattr=not frozen
            and resolved(klass, "__setattr__") is object.__dict__["__setattr__"],
            descriptor_fields=frozenset(
                n for n in field_names if hasattr(type(resolved(klass, n)), "__set__")
            ),
            private_prefixes=tuple(
                f"_{k.__name__.lstrip('_')}__" for k in klass.__mro__ if k is not object
            ),
            descriptors=descriptor_names(klass, slots),
        )


def descriptor_names(klass: type, slots: tuple[str, ...]) -> frozenset[str]:
    """The names bound to a cached_property, a property, any descriptor but a callable (a
    function or staticmethod at class level is a default an instance may override)."""
    # Each namespace copied in one step (dict.copy clones the table; iterating could let a
    # collection run and switch threads): another thread may be decorating the class again.
    return frozenset(
        name
        for k in klass.__mro__[:-1]
        for name, value in vars(k).copy().items()
        if hasattr(type(value), "__get__") and not callable(value) and name not in slots
    )


class Shadows(NamedTuple):
    """What answers a read of a field an instance does not hold, found when the class is first
    used: there "is it set" is read exactly (the instance dict's keys, the slot's own member),
    elsewhere an ``AttributeError`` on reading it says so."""

    names: frozenset[str]  # bound on the class or a base (not a slot's own member)
    everything: bool  # a __getattr__ (or __getattribute__) may answer for any name
    members: dict[str, Any]  # each slot's member descriptor, which raises for an empty slot
    # Of names, those read from the class as the very object a read of an unset field gives (a
    # value, no descriptor, not a slot): an instance holding another object holds a value.
    values: frozenset[str] = frozenset()
    # The class's own __getattribute__ may change what a read gives: fields are read as stored
    # (the dict entry, the slot's member), as every rebuild stores them, so no value compounds.
    raw: bool = False

    @property
    def read(self) -> Callable[[object, str], Any]:
        """``getattr``, or for a class with its own ``__getattribute__`` the read past it."""
        return object.__getattribute__ if self.raw else getattr

    def of(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Which of ``names`` a read may answer although the instance holds no value for it."""
        if self.everything:
            return names
        return tuple(n for n in names if n in self.names)

    def holds(self, obj: object, name: str) -> bool:
        """Whether ``obj`` holds a value for the field ``name`` (a slot or a dict entry)."""
        # Read past a __getattr__ (which may answer for __dict__ too): a slot's member, found
        # first, raises for an empty slot.
        try:
            if name not in self.members:
                return name in object.__getattribute__(obj, "__dict__")
            if torch_seen.imported and torch_seen.compiling():
                # torch.compile's tracer cannot: it reads the slots its __init__ set so far.
                return hasattr(obj, name)
            object.__getattribute__(obj, name)
        except AttributeError:
            return False
        return True


NO_SHADOWS = Shadows(frozenset(), False, {})


def slot_members(klass: type, slots: tuple[str, ...]) -> dict[str, Any]:
    """The member descriptor each of ``slots`` resolves to (none where a class attribute
    replaced it)."""
    resolving = {slot: resolved(klass, slot) for slot in slots}
    return {s: m for s, m in resolving.items() if type(m) is types.MemberDescriptorType}


def shadows_of(klass: type, slots: tuple[str, ...]) -> Shadows:
    """The names of fields a read of ``klass``'s instances may answer without their holding a
    value: bound on the class or a base (a class attribute, a method, a descriptor; a slot's own
    member reads the slot), or every name if the class has a ``__getattr__`` (or its own
    ``__getattribute__``)."""
    raw = _own_getattribute(klass)
    everything = raw or resolved(klass, "__getattr__") is not None
    members = slot_members(klass, slots)
    # Each namespace copied in one step, as descriptor_names does.
    bound = {name for k in klass.__mro__[:-1] for name in vars(k).copy()}
    names = frozenset(
        name
        for name in bound
        if not name.startswith("__")
        and not (name in members and resolved(klass, name) is members[name])
    )
    values = frozenset() if everything else _plain_values(klass, names, slots)
    return Shadows(names, everything, members, values, raw)


def _own_getattribute(klass: type) -> bool:
    """Whether ``klass`` (or a base) defines its own ``__getattribute__``."""
    return resolved(klass, "__getattribute__") is not object.__dict__["__getattribute__"]


def _plain_values(klass: type, names: Iterable[str], slots: tuple[str, ...]) -> frozenset[str]:
    """Those of ``names`` that ``klass`` binds to a value (no descriptor), where reading the class
    gives that value (its metaclass binds no such name) and no slot is named so."""
    meta = type(klass)
    return frozenset(
        name
        for name in names
        if not hasattr(type(resolved(klass, name)), "__get__")
        and resolved(meta, name) is None
        and name not in slots
    )


class LayoutTable:
    """The interned layouts of one class and what it has learnt: its *primary* layout (the one
    generated code is written for), whether it was ``used`` as a pytree, and whether instances of
    other layouts exist (*varied*: each carries its layout in ``__pytreekit_layout__``, whose
    class attribute is the primary). ``on_change`` tells the class's node functions.

    Interning and every change of state happen under ``lock``; lookups do not lock (a dict read
    is atomic, also on free-threaded CPython).
    """

    # Whether __hash__ hashes fields by name (instances may hold one set of fields in two orders).
    hash_by_name = False

    def __init__(self, cls: type, storage: Storage, key_factories: dict[str, KeyFactory]) -> None:
        self.cls = cls
        self.storage = storage
        self.key_factories = dict(key_factories)
        self.lock = threading.RLock()
        self._by_names: dict[tuple[tuple[str, ...], tuple[bool, ...]], Layout] = {}
        self.primary: Layout | None = None
        self.varied = False  # an instance of another layout than the primary exists
        self.marked = False  # and the generated code tests markers (varied, code regenerated)
        self.used = False  # flattened, unflattened or built at least once
        self.on_change: Callable[[], None] = _nothing  # set by the class's node functions
        # Set by the decorator: refuses a class changed since decoration (raising, it stays unused).
        self.before_use: Callable[[], None] = _nothing
        # Whether observe must read an instance's own order of assignment: not where an instance
        # holding exactly the primary's fields has them in its order (declared, or proven).
        self.ordered = False
        # What answers a read of an unset field (LearnedLayouts): the class as first used decides.
        self.shadows = NO_SHADOWS

    # -- interning --------------------------------------------------------------------------

    def intern(self, names: tuple[str, ...], static: tuple[bool, ...]) -> Layout:
        key = (names, static)
        layout = self._by_names.get(key)
        if layout is None:
            with self.lock:
                layout = self._by_names.get(key)
                if layout is None:
                    self.check_names(names)
                    made = Layout(self.cls, records(names, static), hash_by_name=self.hash_by_name)
                    layout = self._add(made)
        return layout

    def adopt(self, earlier: LayoutTable | None) -> None:
        """Intern the layouts unpickled while the class arrived (``layout_for``), as the very
        objects the treedefs sent with it hold, where the field rule keeps their names: those
        unpickled before the class had a table, and those ``earlier`` interned, the table the
        subclass hook set up on the empty class pickle made first (never used)."""
        arrived = {}
        if earlier is not None and not earlier.used:
            with earlier.lock:
                arrived.update(earlier._by_names)
        with _arrival_lock:
            _adopting[self.cls] = weakref.ref(self)  # weak: a table refers to its class
            arrived.update(_arriving.pop(self.cls, {}))
            for key, layout in arrived.items():
                known = self._by_names.get(key)
                if (known is not None and known is not self.primary) or self.refusal(key[0]):
                    continue
                # The class's own layout (an annotated class's, made with the table) is the
                # arrived object from now on, with the fields it declares.
                fields = layout.fields if known is None else known.fields
                Layout.__init__(layout, self.cls, fields, hash_by_name=self.hash_by_name)
                if known is not None:
                    layout.plain = known.plain
                    self.primary = layout
                self._add(layout)

    def _add(self, layout: Layout) -> Layout:
        for backend, make_key in self.key_factories.items():
            layout.keys[backend] = tuple(map(make_key, layout.child_names))
        self._by_names[layout.names, layout.static] = layout
        return layout

    def add_key_factory(self, backend: str, make_key: KeyFactory) -> None:
        with self.lock:
            self.key_factories[backend] = make_key
            for layout in self._by_names.values():
                layout.keys[backend] = tuple(map(make_key, layout.child_names))

    def check_names(self, names: tuple[str, ...]) -> None:
        """The field rule's refusal of names: ``TypeError`` naming the class unless every name can
        be a field (interning a layout asks it)."""
        refusal = self._refusal(names)
        if refusal is not None:
            raise TypeError(refusal[1])

    def refusal(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """The first of ``names`` no instance of the class can hold as a field, by the field rule,
        and why (``None``: they can): what an artifact's layout is asked before the table learns
        it."""
        return self._refusal(names) or self._unkept(names)

    def _unkept(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """The first name that is none of the class's one layout's fields."""
        known = self.primary.name_set if self.primary is not None else frozenset()
        name = next((name for name in names if name not in known), None)
        return None if name is None else (name, "the class declares no such field")

    def _refusal(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """The name the field rule refuses, and why."""
        for name in names:
            if not name.isidentifier() or keyword.iskeyword(name):
                return name, (
                    f"{self.cls.__qualname__}: attribute {name!r} is not a Python identifier (or "
                    f"is a keyword), so it cannot be a pytree field (key paths and generated code "
                    f"name fields as attributes). Store it under an identifier, or inside a dict "
                    f"field."
                )
            if not name.isascii() and not unicodedata.is_normalized("NFKC", name):
                normal = unicodedata.normalize("NFKC", name)
                return name, (
                    f"{self.cls.__qualname__}: attribute {name!a} is not in the form Python "
                    f"gives identifiers (NFKC: {normal!a}), so code naming it as an "
                    f"attribute (`obj.{normal}`, the generated flatten and unflatten) reads "
                    f"and writes {normal!a} instead. Store it as {normal!a}."
                )
        return None

    def declared(self) -> Layout | None:
        """The layout whose aux data is its static values alone, if the class has one."""
        key = _declared.get(self.cls)
        return None if key is None else self.intern(*key)

    # -- what each kind of table decides -------------------------------------------------------

    def layout_of(self, obj: object) -> Layout:
        """The layout of ``obj``, an instance of this class."""
        raise NotImplementedError

    def for_names(self, names: tuple[str, ...]) -> Layout:
        """The layout an instance holding the fields ``names`` has, by the class as it is now."""
        raise NotImplementedError

    def declared_for(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
        """The fields and static flags of ``for_names(names)``, without interning a layout."""
        raise NotImplementedError

    def observe_slow(self, obj: object) -> None:
        """After ``__init__`` returned: what it set completed and checked, its layout noted (the
        general path of the generated ``observe``)."""
        raise NotImplementedError

    def fields_of(self, class_or_instance: object) -> tuple[Field, ...]:
        """What ``pytreekit.fields`` returns."""
        raise NotImplementedError

    def exact(self, layout: Layout) -> bool:
        """Whether an instance holding ``layout``'s fields (and, with ``varied``, no marker) has
        exactly that layout: what generated code for it relies on."""
        return True

    def note(self, obj: object, layout: Layout) -> None:
        """``obj`` (being built, not yet visible to others) has ``layout``: record it."""

    def first_use(self) -> None:
        """The class is flattened, unflattened or built (generic code runs until the first time)."""
        if self.used:
            return
        with self.lock:
            if not self.used:
                self.before_use()
                self._read_class()
                self.on_change()

    def _read_class(self) -> None:
        """The class is used from now on: what it binds at its first use decides (under
        ``lock``)."""
        if self.used:
            return
        # A class decorator above @pytree_class, or a mixin's, may have added a cached_property
        # (or a class attribute named like a field) since decoration.
        storage = self.storage
        self.storage = storage._replace(descriptors=descriptor_names(self.cls, storage.slots))
        self.shadows = self.shadows_now()
        self.used = True

    def shadows_now(self) -> Shadows:
        """What answers a read of an unset field, by the class as it is now (an annotated class
        reads its fields as dataclasses do: a class default answers for a deleted field)."""
        return NO_SHADOWS

    def current_shadows(self) -> Shadows:
        """What answers a read of an unset field: as found at first use, or the class now."""
        return self.shadows if self.used else self.shadows_now()

    def exactly(self, layout: Layout) -> tuple[str, ...]:
        """The fields of ``layout`` whose "is it set" a read cannot tell (``Shadows``)."""
        found = layout.exactly
        if found is None:
            if not self.used:
                return self.shadows_now().of(layout.names)
            found = layout.exactly = self.shadows.of(layout.names)
        return found


class FixedLayouts(LayoutTable):
    """The table of an annotated class: one layout, its dataclass fields."""

    def __init__(
        self,
        cls: type,
        fields: tuple[Field, ...],
        storage: Storage,
        key_factories: dict[str, KeyFactory],
    ) -> None:
        super().__init__(cls, storage, key_factories)
        # A declared name the field rule refuses (built at run time: `µ` stays the micro sign,
        # the generated __init__ stores the NFKC `μ`): refused at decoration, not at flatten.
        refused = self._refusal(tuple(f.name for f in fields))
        if refused is not None:
            raise TypeError(refused[1])
        primary = self.primary = self._add(Layout(cls, fields))
        # Without static fields, the aux data names the layout (``bare``); with them, it carries
        # the layout until ``publish`` decides it may be the static values alone.
        primary.plain = not primary.static_names

    def layout_of(self, obj: object) -> Layout:
        assert self.primary is not None
        return self.primary

    def for_names(self, names: tuple[str, ...]) -> Layout:
        assert self.primary is not None
        return self.primary

    def declared_for(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
        assert self.primary is not None
        return self.primary.names, self.primary.static

    def fields_of(self, class_or_instance: object) -> tuple[Field, ...]:
        assert self.primary is not None
        return self.primary.fields

    def observe_slow(self, obj: object) -> None:
        """After a user's own ``__init__``: every field set (a ``default_factory`` fills one left
        unset), nothing set that is not a field, the values checked."""
        self.first_use()
        layout = self.primary
        assert layout is not None
        owner = self.cls.__qualname__
        for f in layout.fields:
            if hasattr(obj, f.name):
                continue
            if f.default_factory is MISSING:
                raise TypeError(
                    f"{owner}.__init__ returned without setting field {f.name!r}, which has no "
                    f"default. Set self.{f.name} in __init__, or give the field a default in the "
                    f"class body."
                )
            factory: Callable[[], Any] = f.default_factory  # type: ignore[assignment]
            object.__setattr__(obj, f.name, factory())
        self.refuse_extras(obj, "__init__")
        check(obj, layout)

    def refuse_extras(self, obj: object, where: str) -> None:
        """A ``TypeError`` if ``where`` (``__init__``, ``__post_init__``) set an attribute of
        ``obj`` that is not a field."""
        layout = self.primary
        assert layout is not None
        instance_dict = getattr(obj, "__dict__", None)
        if instance_dict:
            extras = self._extras(instance_dict, layout)
            # Each descriptor field may store its value under a name that is not a field's.
            if len(extras) > len(self.storage.descriptor_fields) and not self.used:
                self.first_use()  # a cached_property added since decoration is no extra
                extras = self._extras(instance_dict, layout)
            if len(extras) > len(self.storage.descriptor_fields):
                extra = extras[-1]
                refused = self._refusal((extra,))  # declaring it would not help
                if refused is not None:
                    raise TypeError(refused[1])
                raise TypeError(
                    f"{self.cls.__qualname__}.{where} set attribute {extra!r}, which is not a "
                    f"field, so JAX transformations would drop it. Declare it in the class body "
                    f"(`{extra}: <type>`, with `= pytreekit.field(static=True)` if it is not an "
                    f"array), or do not store it on the instance."
                )

    def _extras(self, instance_dict: dict[str, Any], layout: Layout) -> list[str]:
        descriptors = self.storage.descriptors
        return [n for n in instance_dict if n not in layout.names and n not in descriptors]

    def after_post_init(self, obj: object) -> None:
        """What the generated ``__init__`` runs once ``__post_init__`` returned, where the count
        of referents does not prove that it set nothing but fields."""
        self.refuse_extras(obj, "__post_init__")


class LearnedLayouts(LayoutTable):
    """The table of a class without annotations: layouts learnt from instances (the field rule);
    the primary is the one decoration proved (``declare``), else the first an instance had."""

    hash_by_name = True

    def __init__(
        self,
        cls: type,
        static_names: frozenset[str],
        storage: Storage,
        key_factories: dict[str, KeyFactory],
    ) -> None:
        super().__init__(cls, storage, key_factories)
        self.static_names = static_names
        self._raw: dict[tuple[str, ...], Layout] = {}
        # The layouts an instance can have now: by the fields it holds, in its order, with the
        # static flags the class declares now. Other interned layouts (an old pickle's, an old
        # treedef's, a layout of an earlier decoration) only tell which values a state or aux
        # data holds; an instance built from them gets the current layout of its fields.
        self._current: dict[tuple[str, ...], Layout] = {}
        self.ordered = True

    def for_names(self, names: tuple[str, ...]) -> Layout:
        layout = self._current.get(names)
        if layout is None:
            layout = self.intern(*self.declared_for(names))
            self._current[names] = layout
        return layout

    def declared_for(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
        return names, tuple(n in self.static_names for n in names)

    def is_current(self, layout: Layout) -> bool:
        """Whether ``layout`` is one an instance of the class as declared now can have."""
        return self._current.get(layout.names) is layout

    def declare(self, layout: Layout) -> bool:
        """Decoration proved that every instance ``__init__`` builds holds exactly ``layout``'s
        fields, in its order: make it the primary, unless instances of another exist (then
        ``False``)."""
        with self.lock:
            if self.primary is not None and self.primary is not layout:
                return False
            self.primary = layout
            self.ordered = False
            setattr(self.cls, markers.LAYOUT, layout)
            return True

    def follow(self, earlier: LayoutTable) -> None:
        """Decorated again: instances built before carry ``earlier``'s layouts (or none, meaning
        its primary). Unmarked ones keep meaning the same fields in the same order, with the static
        flags declared now; marked ones are read by their marker's names."""
        if earlier.primary is None:
            return
        with self.lock:
            self.primary = self.for_names(earlier.primary.names)
            self.varied = self.marked = earlier.varied  # generic code until the first use
            setattr(self.cls, markers.LAYOUT, self.primary)

    def _refusal(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        refusal = super()._refusal(names)
        if refusal is not None:
            return refusal
        # A static name this instance does not set is fine (only some instances may set it),
        # unless it looks like a misspelling of one it does set.
        for static_name in sorted(self.static_names.difference(names)):
            close = close_match(static_name, names, ACCUSE)
            if close:
                return close, (
                    f"{self.cls.__qualname__}: static={static_name!r} names no attribute that "
                    f"__init__ set, but {close!r} is one. Check the spelling in "
                    f"@pytree_class(static=...)."
                )
        return None

    def _unkept(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """The first name the rule does not keep of an instance holding exactly ``names``."""
        storage = self.storage
        named = frozenset(names)
        slots = [slot for slot in storage.slots if slot in named]
        kept = frozenset(self._kept(slots, names if storage.has_dict else ()))
        name = next((name for name in names if name not in kept), None)
        why = "the field rule keeps no dunder, name-mangled private or descriptor's name"
        return None if name is None else (name, why)

    def fields_of(self, class_or_instance: object) -> tuple[Field, ...]:
        if isinstance(class_or_instance, type):
            raise TypeError(
                f"fields({self.cls.__qualname__}): this class has no field annotations, so its "
                f"fields are the attributes each instance sets in __init__; call fields() on an "
                f"instance instead."
            )
        return self.layout_of(class_or_instance).fields

    def exact(self, layout: Layout) -> bool:
        # Without a __dict__ there is no marker: the slots themselves say which are fields.
        return self.storage.has_dict or set(self.storage.slots) <= set(layout.names)

    # -- the field rule -------------------------------------------------------------------------

    def attribute_names(self, obj: object) -> tuple[str, ...]:
        """The fields of ``obj`` by the field rule, read from the instance itself."""
        slots = self._holding(obj, self.storage.slots)
        return self._kept(slots, obj.__dict__ if self.storage.has_dict else ())

    def _holding(self, obj: object, names: tuple[str, ...]) -> tuple[str, ...]:
        """Those of ``names`` that ``obj`` holds a value for: read exactly where a read cannot
        tell (torch.compile's tracer, which may run this, reads only plain attributes)."""
        shadows = self.current_shadows()
        exactly = shadows.of(names)
        holds = shadows.holds
        return tuple(n for n in names if (holds(obj, n) if n in exactly else hasattr(obj, n)))

    def _kept(self, slots: Iterable[str], attributes: Iterable[str]) -> tuple[str, ...]:
        """The fields of an instance whose ``slots`` hold values and whose dict holds
        ``attributes``, by the field rule."""
        storage = self.storage
        refused = ("__", *storage.private_prefixes)
        names = [slot for slot in slots if not slot.startswith(refused)]
        if storage.has_dict:
            in_slots = frozenset(names) if names else ()  # an artifact may name thousands
            names.extend(
                n
                for n in attributes
                if not n.startswith(refused) and n not in storage.descriptors and n not in in_slots
            )
        return tuple(names)

    def shadows_now(self) -> Shadows:
        return shadows_of(self.cls, self.storage.slots)

    def holds_exactly(self, obj: object, layout: Layout) -> bool:
        """Whether ``obj`` holds a value for each field of ``layout`` that a read cannot tell
        unset (``exactly``)."""
        holds = self.current_shadows().holds
        return all(holds(obj, name) for name in self.exactly(layout))

    def layout_of(self, obj: object) -> Layout:
        """The layout of ``obj``: its marker, else the primary if it holds every primary field,
        else what it holds (a field deleted since, or an instance made without ``__init__``)."""
        if type(obj) is not self.cls:  # a method of this class on a subclass's instance
            table = published(type(obj))
            assert table is not None
            return table.layout_of(obj)
        # (A __getattr__ may answer for the marker before the class has one.)
        found = getattr(obj, markers.LAYOUT, None)
        if type(found) is Layout and found.cls is self.cls and self.exact(found):
            known: Layout = found
            try:
                known.read(obj)
                # (exactly is None until the class's first use has found it.)
                held = known.exactly == () or self.holds_exactly(obj, known)
            except AttributeError:
                held = False
            if held:
                # A marker from an earlier decoration (or static set) names the fields and their
                # order; their static flags are the class's now.
                return known if self.is_current(known) else self.for_names(known.names)
            if self.storage.has_dict and obj.__dict__.get(markers.LAYOUT) is known:
                return self.for_names(self._holding(obj, known.names))  # deleted since
        layout = self.for_names(self.attribute_names(obj))
        if self.primary is None:
            self.note(obj, layout)
        return layout

    # -- what instances teach the class -------------------------------------------------------

    def note(self, obj: object, layout: Layout) -> None:
        if not self.is_current(layout):  # an old pickle's or treedef's: what it holds, as now
            layout = self.for_names(layout.names)
        has_dict = self.storage.has_dict
        if self.primary is not None and (layout is self.primary or self.marked or not has_dict):
            # Nothing for the table to learn (torch.compile's tracer, which cannot take a lock,
            # may run this): only the instance, not shared yet, is marked.
            self._mark(obj, layout)
            return
        with self.lock:
            if self.primary is None:
                self.primary = layout
                setattr(self.cls, markers.LAYOUT, layout)  # the unmarked instances' layout
                self._read_class()
                self.on_change()
            self._mark(obj, layout)
            if has_dict and layout is not self.primary and not self.varied:
                self.varied = True
                self.on_change()
                self.marked = True

    def _mark(self, obj: object, layout: Layout) -> None:
        if not self.storage.has_dict:
            return  # no marker possible: a slot is a field whenever it holds a value
        if layout is self.primary:
            obj.__dict__.pop(markers.LAYOUT, None)
        else:
            obj.__dict__[markers.LAYOUT] = layout

    def observe_slow(self, obj: object) -> None:
        self.first_use()  # a primary declared at decoration: no instance noted it yet
        raw = None
        if self.storage.has_dict and not self.storage.slots:
            raw = tuple(obj.__dict__)
            layout = self._raw.get(raw)
            if layout is not None:
                check(obj, layout)
                if layout is not self.primary:
                    self.note(obj, layout)
                return
        names = self.attribute_names(obj)
        # Checked before interning: a refused instance leaves the table as it was.
        known = self._current.get(names)
        if known is None:
            static = tuple(n in self.static_names for n in names)
            check(obj, Layout(self.cls, records(names, static)))
        else:
            check(obj, known)
        layout = known or self.for_names(names)
        if raw is not None and markers.LAYOUT not in raw:
            with self.lock:  # the bound holds without the GIL too
                if len(self._raw) < _RAW_CACHE_SIZE:
                    self._raw[raw] = layout
        self.note(obj, layout)


def table_for(
    cls: type,
    fields: tuple[Field, ...] | None,
    static: Iterable[str],
    key_factories: dict[str, KeyFactory],
    storage: Storage | None = None,
    frozen: bool = False,
) -> LayoutTable:
    """An annotated class's table (its one layout: ``fields``), or the table a class without
    annotations learns its layouts in (``static``: its static names). ``storage``: how instances
    hold their fields (``None``: found, for a class ``frozen`` or not)."""
    if storage is None:
        names = () if fields is None else tuple(f.name for f in fields)
        storage = Storage.of(cls, names, frozen)
    if fields is not None:
        return FixedLayouts(cls, fields, storage, key_factories)
    return LearnedLayouts(cls, frozenset(static), storage, key_factories)


# -- the check of a new instance's values -----------------------------------------------------


def check(obj: object, layout: Layout, source: object = None) -> None:
    """The rule for the values of an instance ``obj`` of ``layout`` that was just built: static
    values hashable, no method bound to ``obj`` itself (inside a static value either). Generated
    code checks the same inline and calls this to name the culprit; an unset field is left for
    flatten to name. ``source``: the instance ``replace`` copied, whose methods are refused too."""
    cls = type(obj)
    for name, static in zip(layout.names, layout.static, strict=True):
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        for built in (obj, source) if source is not None else (obj,):
            if static:
                check_static_value(cls, name, value)
                inside = bound_inside(value, built)
                if inside is not None:
                    _refuse_bound(obj, name, inside, inside is not value)
            check_not_bound_to(built, name, value)


def check_not_bound_to(obj: object, name: str, value: Any) -> None:
    """Refuse a field holding a method bound to the instance being built: every rebuilt copy
    (``tree_map``, ``replace``, unflatten) would keep calling the original instance."""
    if type(value) is types.MethodType and value.__self__ is obj:
        _refuse_bound(obj, name, value, False)


def _refuse_bound(obj: object, name: str, method: types.MethodType, inside: bool) -> None:
    owner = type(obj).__qualname__
    function = method.__func__.__name__
    where = "holds, inside its value," if inside else "holds"
    raise TypeError(
        f"{owner}.{name} {where} self.{function}, a method bound to the instance being built; "
        f"copies JAX rebuilds would keep calling this instance's method, with its old "
        f"values. Call self.{function}(...) where it is needed, or store the function: "
        f"self.{name} = type(self).{function} (or a module-level function)."
    )


# The values bound_inside looks into.
NESTED = (tuple, list, set, frozenset, dict, functools.partial)
# How generated code tells the hashable ones (a static value is hashable) in two comparisons:
# by their __hash__ (tuples and NamedTuples share tuple's), and functools.partial by its class.
NESTED_HASHES = (tuple.__hash__, frozenset.__hash__)
# The classes whose values hold no other value, tested first: one set lookup for the usual
# static values, where reading a class's __hash__ and comparing it costs several times more.
FLAT = frozenset({int, float, complex, str, bytes, bool, type(None)})


def bound_inside(value: Any, obj: object) -> types.MethodType | None:
    """A method bound to ``obj`` that ``value`` is or holds (in tuples, lists, sets, dicts,
    ``functools.partial``), if any: the static values a rebuilt copy keeps share it."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if type(item) is types.MethodType:
            if item.__self__ is obj:
                return item
        elif isinstance(item, NESTED[:4]):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, functools.partial):
            stack.extend((item.func, *item.args, *item.keywords.values()))
    return None


def _nothing(*_: object) -> None:
    pass


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """``obj -> tuple(getattr(obj, name) for name in names)``, in C."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


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
