"""``@pytree_class``: turn a class into a registered pytree, in place.

A class walks down through the layers once, when it is decorated:

1. check the options and refuse classes pytreekit cannot support (nothing changed yet);
2. make it a dataclass (annotated classes: ``prepare``, which returns what it made), build its
   layout table, plan its methods and apply the plan (``_classes.methods``);
3. build its node functions (``_classes.nodes``: nothing is compiled);
4. register it with every backend, all or nothing (``_backends``);
5. put the ``ClassSpec`` on the class: the commit point, last (optree's rule).

Any failure before the commit puts the class's namespace back as it was, so class and registries
are exactly as before and decorating again works. Decoration runs under one lock, so a class
decorated from several threads at once is decorated once and every thread gets it complete.

Subclasses become pytree classes automatically through ``__init_subclass__``, with the parent's
options. The class as the user wrote it is kept, so a later explicit ``@pytree_class(...)`` starts
from it and its options win.
"""

from __future__ import annotations

import copy
import copyreg
import dataclasses
import functools
import keyword
import types
import unicodedata
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar, cast, overload

from typing_extensions import dataclass_transform

from . import _backends
from . import _markers as markers
from ._classes import (
    ClassSpec,
    Field,
    FixedLayouts,
    Layout,
    LayoutTable,
    LearnedLayouts,
    NodeFunctions,
    Options,
    Storage,
    apply_methods,
    changed_since,
    copied_spec,
    declare_sent,
    decoration_lock,
    field,
    flags,
    generated_init,
    init_wrapper,
    later_run,
    own_spec,
    plan_methods,
    prepare,
    prove_init,
    publish,
    resolved,
    table_for,
)
from ._compat import (
    ANNOTATION_ENTRIES,
    DATACLASS_PARAMS,
    annotations_given_since,
    dataclass_option,
    frozen_dataclasses,
    own_dataclass_params,
    registered_with_jax,
    travelling,
)
from ._derivatives import inherit_rules

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
    init: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    match_args: bool = True,
    slots: bool = False,
    weakref_slot: bool = False,
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
    init: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    match_args: bool = True,
    slots: bool = False,
    weakref_slot: bool = False,
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
    init: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    match_args: bool = True,
    slots: bool = False,
    weakref_slot: bool = False,
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
        frozen: Refuse assignment after ``__init__`` (``FrozenInstanceError``); with ``eq``,
            instances hash by value.
        kw_only: Make every field of this class keyword-only in the generated ``__init__``.
        repr: Generate ``__repr__`` (arrays shown as ``f32[3,2]``).
        eq: Generate ``__eq__`` (arrays compared as arrays).
        backends: Registries to register with: ``"jax"``, ``"optree"``, ``"torch"``.
        init: Only ``True``, accepted so that ``dataclasses.make_dataclass(...,
            decorator=pytree_class)`` (Python 3.14) works: an annotated class always gets the
            ``__init__`` pytreekit generates, and a class with its own ``__init__`` keeps it.
        order: Only ``False``: pytreekit generates no ordering methods (``__lt__``, ``__le__``,
            ``__gt__``, ``__ge__``); define them in the class body if instances must sort.
        unsafe_hash: Only ``False``: a frozen class hashes by value; a class that is not frozen
            is unhashable with ``eq=True`` (the default) and hashes by identity with
            ``eq=False``.
        match_args: Only ``True``: an annotated class gets ``__match_args__`` (the fields
            dataclasses makes positional ``__init__`` parameters, for ``match`` statements), as
            dataclasses sets it, with its own ``__init__`` too; a class without annotations
            gets none.
        slots: Only ``False``: pytreekit adds no ``__slots__``; a class that declares its own
            keeps them.
        weakref_slot: Only ``False``: to make instances of a class with ``__slots__`` weakly
            referenceable, put ``"__weakref__"`` in its own ``__slots__``.

    Returns:
        ``cls`` itself, changed in place (or a decorator doing so).

    Raises:
        TypeError: ``cls`` is not a class, or one pytreekit cannot support (a NamedTuple, an
            Equinox module, a class already registered with JAX); an option has the wrong type
            (or a dataclasses argument, ``order`` say, is not its default);
            a ``static`` name is not a field; anything ``dataclasses.dataclass`` refuses. The
            class is left unchanged.
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
    if cls is not None and not isinstance(cls, type):
        raise _not_a_class(cls)
    _refuse_dataclass_arguments(
        init=init,
        order=order,
        unsafe_hash=unsafe_hash,
        match_args=match_args,
        slots=slots,
        weakref_slot=weakref_slot,
    )
    names = _static_names(static)
    is_frozen, is_kw_only, has_repr, has_eq = flags(
        "pytree_class", frozen=frozen, kw_only=kw_only, repr=repr, eq=eq
    )
    options = Options(names, is_frozen, is_kw_only, has_repr, has_eq, _names(backends, "backends"))
    if cls is None:

        def decorate(klass: type[T]) -> type[T]:
            return _decorate(klass, options)

        return decorate
    return _decorate(cls, options)


def _not_a_class(cls: object) -> TypeError:
    what = getattr(cls, "__qualname__", None) or type(cls).__qualname__
    hint = "Apply it to a class statement or pass a class: pytree_class(MyClass)."
    if isinstance(cls, (str, tuple, list)):  # static names given positionally
        hint = f"Static field names go by keyword: @pytree_class(static={_as_names(cls)!r})."
    return TypeError(
        f"@pytree_class decorates classes, but got {cls!r:.60} ({type(cls).__qualname__}"
        f"{'' if what == type(cls).__qualname__ else ' ' + repr(what)}). {hint}"
    )


def _as_names(value: object) -> tuple[str, ...]:
    """What ``value`` most likely meant as names: ``"n, k"`` -> ``("n", "k")``."""
    if isinstance(value, str):
        return tuple(n for n in value.replace(",", " ").split() if n)
    return tuple(str(n) for n in value) if isinstance(value, (tuple, list)) else ()


def _static_names(value: Iterable[str]) -> tuple[str, ...]:
    """``static=``: an iterable of identifiers. A bare string is refused: ``static="n, k"`` would
    name no field and leave ``n`` and ``k`` leaves, silently, in a class without annotations."""
    if isinstance(value, str):
        raise TypeError(
            f"pytree_class(static={value!r}) takes an iterable of field names, not a string: "
            f"write static={_as_names(value)!r}."
        )
    # As Python reads `self.µ` in source: the identifier's normal form (`μ`, NFKC).
    names = tuple(unicodedata.normalize("NFKC", name) for name in _names(value, "static"))
    for name in names:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise TypeError(
                f"pytree_class(static=...): {name!r} is not a Python identifier, so it names no "
                f"field (fields are attributes, as `self.{name}` would have to be written). Give "
                f"the names of attributes: static=('n', 'k')."
            )
    return names


# dataclasses.dataclass's arguments pytree_class takes at their defaults only (make_dataclass
# passes them all), and what to do instead.
_DATACLASS_ARGUMENTS = {
    "init": (True, "pytreekit generates __init__, or wraps the one the class defines"),
    "order": (False, "define __lt__ and the other comparisons in the class body"),
    "unsafe_hash": (False, "pass frozen=True (instances hash by value), or define __hash__"),
    "match_args": (True, "set __match_args__ in the class body"),
    "slots": (False, "declare __slots__ in the class body"),
    "weakref_slot": (False, "declare __slots__ with '__weakref__' in the class body"),
}


def _refuse_dataclass_arguments(**given: bool) -> None:
    for name, value in given.items():
        default, instead = _DATACLASS_ARGUMENTS[name]
        if value is not default:
            raise TypeError(
                f"pytree_class({name}={value!r}) is not supported: pytreekit accepts "
                f"dataclasses' {name}= (which make_dataclass passes) only at its default, "
                f"{default}. Instead, {instead}."
            )


def _names(value: Iterable[str], argument: str) -> tuple[str, ...]:
    if isinstance(value, str):  # backends="optree" means the one backend, not its letters
        return (value,)
    try:
        names = tuple(value)
    except TypeError:
        raise TypeError(
            f"pytree_class({argument}=...) takes names (a str, or a tuple or list of str), got "
            f"{value!r}."
        ) from None
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"pytree_class({argument}=...) takes names (str), got {name!r}")
    return names


_ABSENT: Any = object()
# What decorating a class again replaces in place rather than removes first (dataclasses reads
# neither of these names on the class it processes).
_REPLACED_IN_PLACE = (
    markers.SPEC,
    markers.LAYOUT,
    "__init__",
    "__repr__",
    "__eq__",
    "__getstate__",
    "__setstate__",
    "__replace__",
)


class _Start(NamedTuple):
    """Where a decoration starts: the namespace now (``before``, put back on failure), the class
    as written, a ``@dataclass`` to run again on it, and what stays in place until replaced."""

    before: dict[str, Any]
    as_written: dict[str, Any]
    replay: dict[str, Any] | None
    kept: dict[str, Any]


def _decorate(cls: type[T], options: Options, *, automatic: bool = False) -> type[T]:
    if not isinstance(cls, type):
        raise _not_a_class(cls)
    with decoration_lock:
        existing = own_spec(cls)  # decorated before (the automatic set-up a subclass gets, say)
        if existing is None:
            _refuse_unsupported(cls)
        parent = _parent_spec(cls)
        if not automatic:
            _refuse_unfreezing(cls, options, parent, existing)
        options = _merged(options, parent, existing)
        start = _start(cls, options, existing, automatic)
        if start is None:
            return cls
        try:
            spec = _change(cls, options, parent, existing, automatic, start)
        except Exception as error:
            _restore(cls, start.before)
            if existing is not None:  # the functions the registries hold follow the old table
                existing.nodes.attach(existing.table)
            if automatic:
                # An explicit @pytree_class(...) on this subclass may still follow and succeed;
                # until it does, building an instance reports why the automatic set-up failed.
                _defer(cls, start.as_written, error)
                return cls
            raise
        if automatic and spec.fields is not None:
            made = cls.__dict__["__dataclass_fields__"]
            spec.table.before_use = functools.partial(_refuse_changed, spec, made)
        publish(spec.table)
        setattr(cls, markers.SPEC, spec)  # the commit point
        _bring_subclasses(cls, spec)
        return cls


def _refuse_changed(spec: ClassSpec, made: Mapping[str, Any]) -> None:
    """At the first use of a subclass set up automatically (at its creation, so before any
    class decorator of its own ran): refused if a ``@dataclass`` applied since decided otherwise
    (the set-up's ``__init__``, ``__match_args__`` and leaves would silently disagree with
    ``dataclasses.fields``). Raising leaves the class unused: every use raises until it is
    decorated explicitly."""
    cls = spec.cls
    params = own_dataclass_params(cls)
    if params is spec.dataclass_params and vars(cls).get("__dataclass_fields__") is made:
        return
    changes = changed_since(cls, spec.options, spec.dataclass_params, made, spec.as_written)
    if changes:
        how, instead = _changed_after(cls, spec.as_written)
        raise TypeError(
            f"{cls.__qualname__} inherits from a pytree class, so it was made a pytree class "
            f"when it was created, before {how} changed it: {'; '.join(changes)}. Its __init__ "
            f"and leaves would not follow dataclasses.fields({cls.__qualname__}). To make it a "
            f"pytree class as dataclasses describes it, {instead}."
        )


def _changed_after(cls: type, as_written: Mapping[str, Any]) -> tuple[str, str]:
    """What changed ``cls`` after its automatic set-up, and what to write instead."""
    name = cls.__qualname__
    if annotations_given_since(cls, as_written):
        return (
            "annotations given to it after it was created (by Python 3.14's make_dataclass, or "
            "a class decorator)",
            f"pass decorator=pytreekit.pytree_class to dataclasses.make_dataclass, or decorate "
            f"{name} with @pytreekit.pytree_class above its other decorators",
        )
    return (
        "a @dataclasses.dataclass applied to it",
        f"put @pytreekit.pytree_class above the @dataclasses.dataclass on {name} (with the "
        f"options it needs)",
    )


def _bring_subclasses(cls: type, spec: ClassSpec) -> None:
    """The subclasses made before this decoration (a library's, or set up with the options
    ``cls`` had then) set up as one defined now is, with ``cls``'s options as they are now; one
    decorated explicitly keeps its own decoration."""
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        existing = own_spec(sub)
        if existing is None or existing.automatic:
            _decorate(sub, spec.options, automatic=True)


def _with_dataclass_choices(options: Options, prepared: Any) -> Options:
    """What a user's ``@dataclass`` below decided, recorded for the subclasses too: its
    ``eq=False`` keeps identity, its ``repr=False`` the inherited repr, its ``frozen=True`` makes
    them frozen."""
    eq, frozen = options.eq and prepared.dataclass_eq, options.frozen or prepared.dataclass_frozen
    shown = options.repr and prepared.dataclass_repr
    if (eq, frozen, shown) == (options.eq, options.frozen, options.repr):
        return options
    return options._replace(eq=eq, frozen=frozen, repr=shown)


def _refuse_unfreezing(
    cls: type, options: Options, parent: ClassSpec | None, existing: ClassSpec | None
) -> None:
    """A decorated subclass of a frozen class must be frozen (``frozen=True``, or a user's
    ``@dataclass(frozen=True)`` below, not the parameters its automatic set-up left), as
    dataclasses says."""
    if parent is None or not parent.options.frozen or options.frozen:
        return
    params = own_dataclass_params(cls)
    below = params is not None and (existing is None or params is not existing.dataclass_params)
    if below and dataclass_option(params, "frozen"):
        return
    raise TypeError(
        f"{cls.__qualname__}: cannot inherit a pytree class that is not frozen from a frozen "
        f"one ({parent.cls.__qualname__}), as dataclasses refuses: pass frozen=True to "
        f"@pytree_class."
    )


def _merged(options: Options, parent: ClassSpec | None, existing: ClassSpec | None) -> Options:
    """``options`` with what the parent's and an earlier decoration's add."""
    if parent is not None:
        options = options._replace(
            static=tuple(dict.fromkeys((*parent.options.static, *options.static))),
            frozen=options.frozen or parent.options.frozen,  # the automatic set-up inherits it
            backends=tuple(dict.fromkeys((*parent.backends, *options.backends))),
        )
    if existing is not None:
        backends = tuple(dict.fromkeys((*existing.backends, *options.backends)))
        options = options._replace(backends=backends)
    return options


def _start(
    cls: type, options: Options, existing: ClassSpec | None, automatic: bool
) -> _Start | None:
    """Where decorating ``cls`` starts; ``None``: the same decoration again, nothing to do (an
    explicit one after the automatic set-up decides the dunders as @dataclass would, which may
    differ)."""
    pending: dict[str, Any] | None = cls.__dict__.get(markers.PENDING)  # a failed set-up
    written = existing.as_written if existing is not None else pending
    # Annotations set after the class was made, and so after its automatic set-up (3.14's
    # make_dataclass with a pytree base): the class as written has them.
    given = annotations_given_since(cls, written) if written is not None else {}
    # A @dataclass under an explicit @pytree_class on a subclass runs after the automatic
    # set-up (at class creation); it is run again on the class as written, so that its
    # options (match_args=False, say) and its fields' (doc=) are what pytreekit reads.
    # (A failed set-up left no parameters: a @dataclass(kw_only=True) since may be what fixes it.)
    replay = None if written is None else later_run(cls, _left_params(existing, pending))
    if not given and replay is None and _again(options, existing, automatic):
        return None
    before = _snapshot(cls)
    # (Not when a @dataclass is run again: it writes what it finds missing.)
    kept = _kept(cls, options, existing, before) if replay is None else {}
    return _Start(before, _written_now(written or before, given), replay, kept)


def _left_params(existing: ClassSpec | None, pending: dict[str, Any] | None) -> object:
    """The dataclass parameters the last set-up left (none after a failed one)."""
    if existing is not None:
        return existing.dataclass_params
    return (pending or {}).get(DATACLASS_PARAMS)


def _written_now(as_written: Mapping[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The class as written, with the annotations given since (on 3.14, an annotate function as
    written would read the old annotations)."""
    if given:
        as_written = {n: v for n, v in as_written.items() if n not in ANNOTATION_ENTRIES}
    return {**as_written, **given}


def _again(options: Options, existing: ClassSpec | None, automatic: bool) -> bool:
    """Whether this decoration is the one ``existing`` records (an automatic one is not the
    explicit one)."""
    if existing is None:
        return False
    return options == existing.options and automatic >= existing.automatic


def _kept(
    cls: type, options: Options, existing: ClassSpec | None, before: dict[str, Any]
) -> dict[str, Any]:
    """Decorating a class in use again: what other threads call (its spec, its layout marker, its
    methods) stays in place until the new one replaces it, so they see the old class or the new,
    never one without either."""
    if existing is None:
        return {}
    kept = {n: before[n] for n in _REPLACED_IN_PLACE if n in before}
    # The frozen methods too, unless frozen dataclass bases make dataclasses write them (it
    # refuses to overwrite them).
    frozen_base = any(frozen for _, frozen in frozen_dataclasses(cls, 1))
    if options.frozen and existing.options.frozen and not frozen_base:
        kept.update((n, before[n]) for n in ("__setattr__", "__delattr__") if n in before)
    return kept


def _change(
    cls: type,
    options: Options,
    parent: ClassSpec | None,
    existing: ClassSpec | None,
    automatic: bool,
    start: _Start,
) -> ClassSpec:
    """Everything that changes the class and the registries, the commit point excepted: undone
    by the caller if it raises."""
    kept, as_written = start.kept, start.as_written
    _restore(cls, as_written, keep=kept.keys())
    if start.replay is not None:
        dataclasses.dataclass(cls, **start.replay)
        as_written = {n: v for n, v in _snapshot(cls).items() if n not in kept or v is not kept[n]}
    spec = _build(cls, options, parent, as_written, existing, automatic)
    _backends.register_all(cls, spec.nodes, _unregistered(options.backends, existing))
    _put_back(cls, kept, as_written)
    return spec


def _unregistered(backends: Iterable[str], existing: ClassSpec | None) -> list[str]:
    """The ``backends`` the class is not registered with yet (a registration is never redone:
    the registries hold ``existing``'s node functions, which follow the new table)."""
    return [b for b in backends if existing is None or b not in existing.backends]


def _build(
    cls: type,
    options: Options,
    parent: ClassSpec | None,
    as_written: Mapping[str, Any],
    existing: ClassSpec | None,
    automatic: bool = False,
) -> ClassSpec:
    """Change ``cls`` into a pytree class (its namespace as written is restored already) and
    describe it; no registry is touched."""
    if len(cls.__mro__) > 2:  # only a method overriding a base's can inherit custom rules
        inherit_rules(cls)
    factories = _backends.key_factories(options.backends, cls)  # refused before any change
    annotated = None if parent is None else parent.fields is not None
    prepared = prepare(cls, options, as_written, annotated)
    options = _with_dataclass_choices(options, prepared)
    fields = prepared.fields
    table = table_for(cls, fields, options.static, factories, frozen=options.frozen)
    if existing is not None and isinstance(table, LearnedLayouts):
        table.follow(existing.table)
    plan = plan_methods(
        cls,
        options,
        prepared.own,
        annotated=fields is not None,
        dataclass_methods=prepared.was_dataclass,
        automatic=automatic,
    )
    verdict = "no __init__ of the user's to wrap"
    init = None
    if plan.init == "generate":
        assert isinstance(table, FixedLayouts) and table.primary is not None
        init = generated_init(cls, prepared, table.primary, options.frozen)
    elif plan.wrapped is not None:
        proven = None
        if plan.init == "wrap":
            proven, verdict = _classify(cls, options, table, plan.wrapped)
        init = init_wrapper(cls, plan.wrapped, options.frozen, proven, table)
    apply_methods(cls, plan, init)
    _warn_unreached_post_init(cls)
    if parent is None:
        _install_subclass_hook(cls)
    return _assemble(
        cls, options, fields, table, as_written, prepared.params, existing, automatic, verdict
    )


def _classify(
    cls: type, options: Options, table: LayoutTable, init: Callable[..., Any]
) -> tuple[Layout | None, str]:
    """The user's ``__init__`` being wrapped (``prove_init``): where it provably sets exactly
    one layout's fields and nothing else reaches the instance, that layout (its wrapper then
    checks only the static values); and why, shown in the spec's repr."""
    proof = prove_init(init)
    if proof.stores is None:
        return None, proof.reason
    if _takes_part(cls, options, table.storage, proof.stores):
        return None, "general: slots, __setattr__, __new__, a metaclass or a descriptor take part"
    if isinstance(table, LearnedLayouts):
        layout, why = _learned_layout(table, proof.stores)
        if layout is None:
            return None, why
    else:
        layout = table.primary
        assert layout is not None
        if set(proof.stores) != set(layout.names):
            return None, "general: does not set exactly the fields"
    return layout, f"{proof.reason}: {', '.join(proof.stores)}"


def _learned_layout(table: LearnedLayouts, stores: tuple[str, ...]) -> tuple[Layout | None, str]:
    """The layout of the fields among ``stores``, declared the table's primary; or why not."""
    storage = table.storage
    names = tuple(
        n
        for n in stores
        if not n.startswith("__")
        and not n.startswith(storage.private_prefixes)
        and n not in storage.descriptors
    )
    try:
        layout = table.for_names(names)
    except TypeError:  # refused at construction, as before, by the general path
        return None, "general: a refused attribute name"
    if not table.declare(layout):
        return None, "general: instances of another layout exist (decorated again)"
    return layout, ""


def _takes_part(cls: type, options: Options, storage: Storage, stores: tuple[str, ...]) -> bool:
    """Whether slots, a ``__setattr__``, a descriptor, or code before ``__init__`` (``__new__``, a
    metaclass's ``__call__``) may see what ``__init__`` stores or store more (its proof then says
    nothing of the instance)."""
    plain = object.__dict__
    return bool(
        not storage.has_dict
        or storage.slots
        or not (options.frozen or resolved(cls, "__setattr__") is plain["__setattr__"])
        or resolved(cls, "__new__") not in (None, plain["__new__"])
        or type(cls).__call__ is not type.__call__
        or resolved(cls, "__getattribute__") is not plain["__getattribute__"]
        or any(hasattr(type(resolved(cls, n)), "__set__") for n in stores)
    )


def _assemble(
    cls: type,
    options: Options,
    fields: tuple[Field, ...] | None,
    table: LayoutTable,
    as_written: Mapping[str, Any],
    params: Any,
    existing: ClassSpec | None = None,
    automatic: bool = False,
    init_proof: str = "",
) -> ClassSpec:
    """The spec, with node functions following ``table`` (``existing``'s, re-attached: the
    registries hold them)."""
    if existing is None:
        nodes = NodeFunctions(table)
    else:
        nodes = existing.nodes
        nodes.attach(table)
    return ClassSpec(
        cls=cls,
        options=options,
        fields=fields,
        table=table,
        nodes=nodes,
        backends=tuple(table.key_factories),
        as_written=dict(as_written),
        dataclass_params=params,
        automatic=automatic,
        init_proof=init_proof,
    )


def _warn_unreached_post_init(cls: type) -> None:
    """``__post_init__`` runs from the generated ``__init__`` only; an ``__init__`` of one's own
    that does not call it leaves it unreached (Equinox warns too)."""
    init = getattr(getattr(cls, "__init__", None), "__wrapped__", None)
    code = getattr(init, "__code__", None)
    if code is None or not hasattr(cls, "__post_init__") or "__post_init__" in code.co_names:
        return
    warnings.warn(
        f"{cls.__qualname__} has its own __init__ and a __post_init__, which only a generated "
        f"__init__ calls: __post_init__ never runs. Call self.__post_init__() at the end of "
        f"__init__, or move its work there.",
        UserWarning,
        stacklevel=4,
    )


def _refuse_unsupported(cls: type) -> None:
    """Classes pytreekit cannot make pytrees, refused before anything changes."""
    name = cls.__qualname__
    if markers.SPEC in cls.__dict__ and copied_spec(cls) is not None:
        raise TypeError(
            f"{name} was made from a copy of another class's namespace (dataclasses' "
            f"slots=True makes a new class so), after pytreekit had made that class a pytree "
            f"class as a subclass of a pytree class: the copy holds its generated methods, bound "
            f"to it. Drop slots=True on a subclass of a pytree class, or declare __slots__ in its "
            f"class body (a slotted field then takes no class default)."
        )
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
    if registered_with_jax(cls):
        raise TypeError(
            f"@pytree_class cannot decorate {name}: it is already registered with "
            f"jax.tree_util (by register_pytree_node, register_dataclass, flax.struct or "
            f"similar), and JAX allows one registration per class. Remove the other "
            f"registration, or leave the class as it is."
        )


def _snapshot(cls: type) -> dict[str, Any]:
    """A copy of ``cls``'s namespace. Field specifiers are copied: dataclasses fills them in (name,
    type, ``kw_only``) when it processes the class."""
    return {
        name: copy.copy(value) if isinstance(value, dataclasses.Field) else value
        for name, value in cls.__dict__.copy().items()  # one C call: atomic for other threads
    }


def _restore(cls: type, namespace: Mapping[str, Any], keep: Iterable[str] = ()) -> None:
    """Put ``cls``'s namespace back to ``namespace`` (a ``_snapshot``), but the names in
    ``keep``."""
    skipped = {"__dict__", "__weakref__", *keep}
    for name in list(cls.__dict__):
        if name not in namespace and name not in skipped:
            delattr(cls, name)
    for name, value in namespace.items():
        if name in skipped:
            continue
        if isinstance(value, dataclasses.Field):
            setattr(cls, name, copy.copy(value))  # the snapshot's copy stays as written
        elif cls.__dict__.get(name, _ABSENT) is not value:
            setattr(cls, name, value)


def _put_back(cls: type, kept: Mapping[str, Any], as_written: Mapping[str, Any]) -> None:
    """What a decoration kept in place and did not put again: back as written, or gone."""
    for name, value in kept.items():
        if name != markers.SPEC and cls.__dict__.get(name, _ABSENT) is value:
            if name in as_written:
                setattr(cls, name, as_written[name])
            else:
                delattr(cls, name)


def _defer(cls: type, as_written: Mapping[str, Any], error: Exception) -> None:
    name = cls.__qualname__
    message = (
        f"{name} inherits from a pytree class, so it is made a pytree class too, with its "
        f"parent's options; that failed: {error or type(error).__name__}"
    )

    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        # A @dataclass (or 3.14's make_dataclass) that changed the class after the set-up failed
        # may have asked for what it lacked: say so, and how to make pytreekit follow it.
        params = own_dataclass_params(cls)
        if params is not as_written.get(DATACLASS_PARAMS) or annotations_given_since(
            cls, as_written
        ):
            how, instead = _changed_after(cls, as_written)
            raise TypeError(f"{message} The set-up ran before {how}: {instead}.") from error
        raise TypeError(
            f"{message} Decorate {name} with @pytree_class(...) and the options it needs."
        ) from error

    __init__.__qualname__ = f"{name}.__init__"
    setattr(cls, "__init__", __init__)
    setattr(cls, markers.PENDING, as_written)


def _parent_spec(cls: type) -> ClassSpec | None:
    for base in cls.__mro__[1:-1]:  # object is no pytree class
        spec = own_spec(base)
        if spec is not None:
            return spec
    return None


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


# -- a class pickled by value arrives ------------------------------------------------------------


def _reduce_spec(spec: ClassSpec) -> tuple[Callable[..., ClassSpec], tuple[Any, ...]]:
    # Only a class pickled by value (cloudpickle, as Ray, Dask and loky send classes defined in a
    # notebook or a function) carries its spec: the receiving process builds the class's node
    # functions and registers it there. Locks and generated code stay behind.
    data = (spec.cls, spec.options, spec.fields, spec.table.storage, spec.backends)
    # Not what Python makes for the class itself (__dict__, slots): pickle would send them by
    # name, looked up on the class before it has them (or as its own namespace, which holds
    # this spec again).
    written = {n: v for n, v in spec.as_written.items() if not isinstance(v, _MADE_BY_PYTHON)}
    # What the class's static values alone mean here (it may have been decorated again since).
    declared = spec.table.declared()
    sent = None if declared is None else (declared.names, declared.static)
    _sent.add(spec.cls)
    return _arrive, (*data, travelling(spec.cls, written), sent, spec.automatic)


# The classes this process pickled by value: one that comes back (cloudpickle finds the class it
# sent) keeps its spec here, whatever it was decorated as since it was sent.
_sent: weakref.WeakSet[type] = weakref.WeakSet()


_MADE_BY_PYTHON = (types.GetSetDescriptorType, types.MemberDescriptorType)


def _arrive(
    cls: type,
    options: Options,
    fields: tuple[Field, ...] | None,
    storage: Storage,
    backends: tuple[str, ...],
    as_written: dict[str, Any],
    declared: tuple[tuple[str, ...], tuple[bool, ...]] | None = None,
    automatic: bool = False,
) -> ClassSpec:
    """The spec of a class that arrived pickled by value, registered here (once, also when the
    same class arrives again). A subclass of a pytree class arrives as an empty class first,
    which the subclass hook sets up with its parent's options: what arrives replaces that,
    declaring what the class ``declared`` where it was sent from, and set up by the subclass
    hook (``automatic``) if it was there, so it follows its parent decorated again here."""
    with decoration_lock:
        existing = own_spec(cls)
        if existing is not None and (not existing.automatic or cls in _sent):
            return existing
        # Threads unpickling one stream's class at once: the spec is set on the class only once
        # pickle sets its state, after this returns; the first arrival's stands.
        arrived = _arrived.get(cls)
        spec = arrived() if arrived is not None else None
        if spec is not None:
            return spec
        if existing is None or not existing.table.used:
            declare_sent(cls, declared)
        made = {n: v for n, v in cls.__dict__.items() if isinstance(v, _MADE_BY_PYTHON)}
        factories = _backends.key_factories(backends, cls)
        table = table_for(cls, fields, options.static, factories, storage)
        # The layouts unpickled before it existed, treedefs sent with it among them.
        table.adopt(existing.table if existing is not None else None)
        params = own_dataclass_params(cls)
        spec = _assemble(
            cls, options, fields, table, made | as_written, params, existing, automatic
        )
        _backends.register_all(cls, spec.nodes, _unregistered(spec.backends, existing))
        publish(spec.table)
        _arrived[cls] = weakref.ref(spec)  # weak: a spec refers to its class
        return spec


_arrived: weakref.WeakKeyDictionary[type, weakref.ref[ClassSpec]] = weakref.WeakKeyDictionary()


copyreg.pickle(ClassSpec, _reduce_spec)
