"""What the codemod can prove about each registration, and so what it does with it.

A registration is rewritten only when all of this holds, each step a small symbolic evaluation
over the source (no code is run):

1. it is a plain module-level statement registering one class defined in the scanned files;
2. flatten is attribute reads of the instance: ``(children, aux)`` with children a sequence of
   ``obj.attr`` (or of ``(GetAttrKey(...), obj.attr)`` pairs) and aux ``None``, ``()``, one
   attribute or a tuple of them;
3. unflatten is its exact inverse: a constructor call that hands each child and aux value back to
   the ``__init__`` parameter that stores it into the same attribute, or ``object.__new__`` and a
   store of each value into its attribute;
4. every path through ``__init__`` (followed into ``super().__init__`` and ``__post_init__``) sets
   exactly the attributes flatten carries, so pytreekit's field rule finds the same fields.

The leaves then are the same values in an order the analysis knows; the statics are the aux
attributes. Everything else gets a code (``_codes``) and a reason naming the culprit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst

from ._bindings import (
    GLOBALS,
    STAR,
    Binding,
    namespace_writer,
    scope_bindings,
)
from ._codes import CONTINUATION, PINNED, reason_of
from ._flatten import Carried, Function, Unflatten, read_flatten, read_unflatten
from ._imports import loading_imports, unused_names
from ._init import DATACLASS, NEUTRAL_BASES, Fields, InitRun, dataclass_options
from ._patches import FLATTEN_METHODS, READ_METHODS, Patches
from ._scan import (
    ClassInfo,
    Foreign,
    Module,
    Project,
    Registration,
    api_of,
    code,
    existing_comments,
    physical_lines,
    suite_statements,
)
from ._values import (
    Opaque,
    Param,
    Refusal,
    Slot,
    Value,
    describe_value,
    is_docstring,
    strip,
)

# The methods JAX calls on a registered class (by name, on the class as it is then).
_FLATTEN_METHODS = FLATTEN_METHODS
_READ_METHODS = READ_METHODS

# Conversions that make a static value hashable whatever the caller passed.
_HASHABLE_RESULT = {"builtins.tuple", "builtins.str", "builtins.int", "builtins.float"}
_CONTAINERS = {
    "builtins.tuple": "a tuple subclass",
    "builtins.list": "a list subclass",
    "builtins.dict": "a dict subclass",
    "builtins.set": "a set subclass",
    "builtins.frozenset": "a frozenset subclass",
    "builtins.str": "a str subclass",
    "builtins.int": "an int subclass",
    "builtins.float": "a float subclass",
    "typing.NamedTuple": "a NamedTuple",
    "typing_extensions.NamedTuple": "a NamedTuple",
    "collections.namedtuple": "a namedtuple",
    "collections.OrderedDict": "an OrderedDict subclass",
    "collections.defaultdict": "a defaultdict subclass",
    "numpy.ndarray": "an ndarray subclass",
    "functools.partial": "a functools.partial subclass",
    "enum.Enum": "an Enum",
    "enum.IntEnum": "an Enum",
}
_CREATION = ("__new__", "__init_subclass__", "__setattr__", "__delattr__", "__getattribute__")
_ABSTRACT = {"abc.abstractmethod"}


# -- the outcome of the analysis ----------------------------------------------------------------


@dataclass(eq=False)
class Rewrite:
    """A proven rewrite of one class, and what it changes for the user."""

    cls: ClassInfo
    registration: Registration
    children: tuple[str, ...]  # flatten's order
    static: tuple[str, ...]
    leaves: tuple[str, ...]  # pytreekit's order
    keys_before: tuple[str, ...]
    write_eq: bool  # write eq=False
    write_repr: bool  # write repr=False
    remove_methods: tuple[str, ...]
    kept_methods: dict[str, str]  # method -> why it stays
    remove_functions: list[tuple[Module, cst.CSTNode]]
    init_notes: list[str]  # what __init__ did on unflatten, which no longer runs
    rebuilt_by_init: bool  # the original unflatten called the constructor
    hashing: str
    proven: list[str]
    unproven: list[str]
    unsafe: list[Refusal] = field(default_factory=list)
    # a plain class annotating fields: pytreekit makes it a dataclass (why, for the report)
    becomes_dataclass: str = ""

    @property
    def order_kept(self) -> bool:
        return self.leaves == self.children


@dataclass(eq=False)
class Outcome:
    """What the codemod does with one registration."""

    registration: Registration
    verdict: str  # "rewritten", "unsafe" (not applied), "left", "failed" (by --verify)
    code: str | None = None
    reason: str = ""
    rewrite: Rewrite | None = None
    verified: str = ""  # what --verify found, when it ran
    # every reason the class is left, the decisive (``code``, ``reason``) first
    reasons: list[Refusal] = field(default_factory=list)
    comment: bool = True  # leave (or keep) the TODO comment
    suppressed: str = ""  # why the report does not count it (a noqa comment, --ignore)

    def leave(self, code: str, reason: str, node: cst.CSTNode | None = None) -> None:
        """Left for ``reason``, which comes first; the reasons found before follow it."""
        refusal = Refusal(code, reason, node)
        self.verdict, self.code, self.reason, self.rewrite = "left", code, reason, None
        self.reasons = [refusal, *self.reasons]


@dataclass(frozen=True)
class Options:
    unsafe: bool = False
    adopt_dunders: bool = False
    # class decorators (qualified names) declared to set attributes and return the class
    transparent: frozenset[str] = frozenset()


_NOQA = re.compile(r"#\s*noqa\s*:\s*(PTK\d{0,3}(?:\s*,\s*PTK\d{0,3})*)", re.IGNORECASE)


def suppressions(registration: Registration) -> tuple[str, ...]:
    """The codes a ``# noqa: PTKnnn`` comment on the registration's lines names (``PTK`` alone:
    every code, and the rewrite too)."""
    lines = physical_lines(registration.module.source)
    found: list[str] = []
    for number in {registration.line, registration.class_line}:
        if 0 < number <= len(lines):
            for match in _NOQA.finditer(lines[number - 1]):
                found += [part.strip().upper() for part in match.group(1).split(",")]
    return tuple(found)


def settle(
    outcomes: Sequence[Outcome],
    *,
    select: Sequence[str] | None,
    ignore: Sequence[str],
    comments: bool,
) -> None:
    """Apply ``--select``, ``--ignore``, ``--comments never`` and ``# noqa`` comments: a
    suppressed registration gets no comment and is not counted as a warning."""
    for outcome in outcomes:
        # a file LibCST does not give back byte for byte takes no comment either
        outcome.comment = comments and outcome.code != "PTK117"
        code = outcome.code
        if code is None or outcome.verdict == "rewritten":
            continue
        noqa = suppressions(outcome.registration)
        if any(code.startswith(prefix) for prefix in noqa):
            outcome.suppressed, outcome.comment = "# noqa", False
        elif any(code.startswith(prefix) for prefix in ignore) or (
            select is not None and not any(code.startswith(prefix) for prefix in select)
        ):
            outcome.suppressed, outcome.comment = "--ignore/--select", False


def analyze(project: Project, options: Options) -> list[Outcome]:
    """An outcome per registration, hierarchies decided together."""
    analysis = _Analysis(project, options)
    outcomes = [analysis.outcome(registration) for registration in project.registrations]
    for outcome in outcomes:
        _check_round_trip(outcome)
    decide_hierarchies(project, outcomes, options)
    return outcomes


def _sources(stars: Sequence[Binding]) -> list[str]:
    """The modules star imports name (``from .a import *``: "." and its name, unresolved)."""
    return [star.how.removeprefix("from ").removesuffix(" import *") for star in stars]


def _check_round_trip(outcome: Outcome) -> None:
    """Left, with no comment, where a file it would write does not come back from LibCST byte
    for byte: writing it would change bytes outside the edits."""
    registration = outcome.registration
    modules = [registration.module]
    if outcome.rewrite is not None:
        plan = outcome.rewrite
        modules += [plan.cls.module, *(m for m, _ in plan.remove_functions)]
    for module in dict.fromkeys(modules):
        line = module.changed_line() if module.tree is not None else 0
        if line:
            outcome.leave(
                "PTK117",
                f"{module.display} does not come back unchanged through LibCST (line {line}, "
                f"a form feed opening a statement's line, say): the codemod writes nothing to "
                f"it; remove that character, or edit by hand",
            )
            return


def decide_hierarchies(project: Project, outcomes: Sequence[Outcome], options: Options) -> None:
    """A base is rewritten with its hand-registered subclasses or not at all (pytreekit
    registers subclasses itself); one whose unregistered subclasses would become pytrees too is
    unsafe. Run again once --verify has left some classes."""
    plans = {o.rewrite.cls: o for o in outcomes if o.rewrite is not None}
    codes: dict[ClassInfo, str] = {}
    for o in outcomes:
        if o.rewrite is not None:
            continue
        # a registration left under ``if`` or in a function names its class all the same, and
        # a helper's registers the classes it is given: pytreekit would register them twice
        registration = o.registration
        for info in [
            project.lookup(registration.module, registration.target or registration.named),
            *_helper_targets(project, registration),
        ]:
            if info is not None and info not in plans:
                codes.setdefault(info, o.code or "")
    foreign = _foreign_registrations(project)
    unknown = [r for r in project.registrations if r.named is None and _unknown(r)]
    registered = set(plans) | set(codes)
    changed = True
    while changed:  # a base left for its subclass may be the subclass of another base
        changed = False
        for info in list(plans):
            reason = _blocked(project, info, plans, codes) or _registered_otherwise(
                project, info, foreign, unknown
            )
            if reason:
                _leave(plans.pop(info), "PTK113", reason)
                codes[info] = "PTK113"
                changed = True
    for info in list(plans):
        # a subclass under ``if``, in a function or made by ``type(...)``: the hierarchy cannot
        # be enumerated, so neither rewritten whole; a registered one would be registered twice
        for module, hidden in project.hidden_subclasses(info):
            names = [r.target_text for r in module.registrations]
            if hidden.name in [*names, *(f.target_text for f in module.foreign)]:
                where = "" if module is info.module else f" (in {module.name})"
                _leave(
                    plans.pop(info),
                    "PTK113",
                    f"its subclass {hidden.name}{where}, {hidden.place}, is registered by hand "
                    f"there; a base is rewritten with its subclasses or not at all",
                )
                break
    for info, outcome in plans.items():
        assert outcome.rewrite is not None
        unregistered = [sub for sub in project.subclasses(info) if sub not in registered]
        if not unregistered and all(u.code != "PTK204" for u in outcome.rewrite.unsafe):
            hidden_subs = project.hidden_subclasses(info)
            unsure = project.unsure_bases(info)
            opaque = project.opaque_makers(info)
            if hidden_subs:
                module, hidden = hidden_subs[0]
                where = "" if module is info.module else f" (in {module.name})"
                outcome.rewrite.unsafe.append(
                    Refusal(
                        "PTK204",
                        f"subclass {hidden.name}{where} is made "
                        f"{hidden.place.removeprefix('built ')}, where the codemod cannot follow "
                        f"it: it would become a pytree too",
                    )
                )
            elif unsure:
                module, name, written = unsure[0]
                outcome.rewrite.unsafe.append(
                    Refusal(
                        "PTK204",
                        f"base {written} of {name} (in {module.name}) may be {info.name} (the "
                        f"codemod cannot tell which class the name is bound to): such a "
                        f"subclass would become a pytree too",
                    )
                )
            elif opaque:
                module, call = opaque[0]
                outcome.rewrite.unsafe.append(
                    Refusal(
                        "PTK204",
                        f"{module.name} makes a class with {call}, from bases the codemod "
                        f"cannot read: if it subclasses {info.name}, it would become a pytree "
                        f"too",
                    )
                )
        if unregistered and all(u.code != "PTK204" for u in outcome.rewrite.unsafe):
            outcome.rewrite.unsafe.append(
                Refusal(
                    "PTK204",
                    f"subclass {_named(unregistered[0], info)} is not registered: it would "
                    f"become a pytree too",
                )
            )
        if outcome.rewrite.unsafe:
            first = outcome.rewrite.unsafe[0]
            outcome.code, outcome.reason = first.code, first.reason
            outcome.verdict = "rewritten" if options.unsafe else "unsafe"


def _blocked(
    project: Project, info: ClassInfo, plans: dict[ClassInfo, Outcome], codes: dict[ClassInfo, str]
) -> str:
    """Why another registered class of its hierarchy keeps ``info`` from being rewritten, if
    one does: its subclasses first (the class that blocks is named more directly), then its
    bases."""
    own = plans[info].rewrite
    assert own is not None
    for sub in project.subclasses(info):
        if sub in codes:
            return (
                f"its hand-registered subclass {_named(sub, info)} is left ({codes[sub]}), and a "
                f"base is rewritten with those or not at all"
            )
        plan = plans[sub].rewrite if sub in plans else None
        missing = [name for name in own.static if plan is not None and name not in plan.static]
        if missing:
            return (
                f"its subclass {_named(sub, info)} carries {', '.join(missing)} as a leaf, "
                f"which pytreekit would keep static there as in {info.name}"
            )
    for base in project.mro(info)[1:]:
        if base in codes:
            # pytreekit decides a subclass's fields from its nearest pytree base: with that
            # base left hand-registered, the proof of this class does not hold
            return (
                f"its hand-registered base {_named(base, info)} is left ({codes[base]}), and a "
                f"hierarchy is rewritten whole or not at all"
            )
    return ""


def _helper_targets(project: Project, registration: Registration) -> list[ClassInfo]:
    """The classes a helper's registration (``def register(cls): api(cls, ...)``) registers."""
    if not registration.helper or registration.named is not None:
        return []
    return [info for info, _ in _helper_uses(project, registration.helper)]


def _foreign_registrations(project: Project) -> dict[ClassInfo, Foreign]:
    """The scanned classes registered with an API of ``jax.tree_util`` the codemod does not
    rewrite (``register_dataclass``, ``register_static``), wherever the registration is."""
    found: dict[ClassInfo, Foreign] = {}
    for module in project.modules:
        for registration in module.foreign:
            info = project.lookup(module, registration.named)
            if info is not None:
                found.setdefault(info, registration)
    return found


def _registered_otherwise(
    project: Project,
    info: ClassInfo,
    foreign: dict[ClassInfo, Foreign],
    unknown: list[Registration],
) -> str:
    """Why a class of ``info``'s hierarchy registered in a way the codemod does not rewrite
    (another API of ``jax.tree_util``, or a registration it cannot tie to a class) keeps it from
    being rewritten: pytreekit registers the subclasses of a pytree class itself, and that
    registration would then raise "Duplicate custom PyTreeDef type registration"."""
    for sub in project.subclasses(info):
        if sub in foreign:
            return (
                f"its subclass {_named(sub, info)} is registered by hand "
                f"{_foreign_where(foreign[sub], sub)}, which the codemod does not rewrite; a "
                f"base is rewritten with its subclasses or not at all"
            )
        other = _unknown_registration(project, sub, unknown)
        if other is not None:
            where = f", {other.place}" if other.place else ""
            return (
                f"its subclass {_named(sub, info)} may be registered by hand in "
                f"{other.module.display}{where} ({code(other.anchor or other.node)}), a "
                f"registration the codemod cannot tie to a class; a base is rewritten with its "
                f"subclasses or not at all"
            )
    for base in project.mro(info)[1:]:
        if base in foreign:
            return (
                f"its base {_named(base, info)} is registered by hand "
                f"{_foreign_where(foreign[base], base)}, which the codemod does not rewrite; a "
                f"hierarchy is rewritten whole or not at all"
            )
    return ""


def _foreign_where(registration: Foreign, info: ClassInfo) -> str:
    """``with jax.tree_util.register_dataclass (in pkg.b, inside function 'setup')``: stable
    from run to run (no line numbers, which the run's own comments would move)."""
    places = [] if registration.module is info.module else [f"in {registration.module.name}"]
    if registration.place:
        places.append(registration.place)
    where = f" ({', '.join(places)})" if places else ""
    return f"with jax.tree_util.{registration.api}{where}"


def _named(info: ClassInfo, seen_from: ClassInfo) -> str:
    """A class as a comment names it: stable from run to run (no line numbers, no paths)."""
    if info.module is seen_from.module:
        return info.name
    return f"{info.name} (in {info.module.name})"


def _leave(outcome: Outcome, code: str, reason: str) -> None:
    outcome.leave(code, reason)


def _named_in(info: ClassInfo, module: Module) -> str:
    return info.name if info.module is module else f"{info.module.name}.{info.name}"


def _left(registration: Registration, found: list[Refusal]) -> Outcome:
    first = found[0]
    return Outcome(registration, "left", first.code, first.reason, reasons=list(found))


class _Reasons(Exception):
    """Every reason a registration is left, the decisive first."""

    def __init__(self, found: list[Refusal]) -> None:
        super().__init__("; ".join(str(f) for f in found))
        self.found = found


_T = TypeVar("_T")


class _InitProof:
    """The checks of a rewrite against the class's ``__init__``: it sets exactly the carried
    attributes, in an order, and the statics it stores are hashable."""

    project: Project
    options: Options
    maybe_lists: dict[ClassInfo, str]  # a static that may get a list: where

    def _check_inverse(
        self, info: ClassInfo, carried: Carried, run: InitRun, unflatten: Unflatten
    ) -> None:
        """The constructor call's run, then unflatten's stores over it (the dummy-key form:
        ``obj = cls(key, *aux)`` then ``obj.weights = children[0]``), gives back every carried
        attribute as flatten read it."""
        stores = unflatten.stores
        extra = [name for name in stores if name not in carried.names]
        if extra:
            raise Refusal("PTK107", f"unflatten also stores {', '.join(extra)}")
        for name in carried.names:
            if name in stores:
                if strip(stores[name])[0] != carried.slot_of(name):
                    raise Refusal(
                        "PTK107",
                        f"flatten reads {name} into {carried.slot_of(name)}, but unflatten "
                        f"stores {describe_value(stores[name])} there",
                    )
                continue
            if name not in run.attributes:
                continue  # reported by _check_attributes
            value, _ = strip(run.attributes[name])
            slot = carried.slot_of(name)
            if value == slot:
                continue
            if isinstance(value, Slot):
                raise Refusal(
                    "PTK107",
                    f"flatten reads {name} into {slot}, but unflatten's call stores {value} there",
                )
            if isinstance(value, Opaque) and value.text.startswith("default "):
                raise Refusal(
                    "PTK107",
                    f"unflatten does not pass {name}: __init__ stores the default of "
                    f"{value.text[8:]}",
                )
            raise Refusal(
                "PTK109",
                f"__init__ stores {describe_value(value)} in {name}, not the argument itself",
                run.nodes.get(name),
            )
        for name, note in run.transforming.items():
            if name not in stores:
                raise Refusal("PTK109", note, run.nodes.get(name))

    def _check_stores(self, info: ClassInfo, carried: Carried, stores: dict[str, Value]) -> None:
        for name in carried.names:
            if name not in stores:
                raise Refusal("PTK107", f"unflatten never stores {name}")
            if strip(stores[name])[0] != carried.slot_of(name):
                raise Refusal(
                    "PTK107",
                    f"flatten reads {name} into {carried.slot_of(name)}, but unflatten stores "
                    f"{describe_value(stores[name])} there",
                )
        extra = [name for name in stores if name not in carried.names]
        if extra:
            raise Refusal("PTK107", f"unflatten also stores {', '.join(extra)}")

    def _check_attributes(
        self, info: ClassInfo, carried: Carried, run: InitRun, fields: Fields
    ) -> tuple[str, ...]:
        if run.failure is not None:
            raise run.failure
        carried_names = set(carried.names)
        if fields.annotated is not None:
            annotated = fields.annotated
            if not annotated and carried_names:
                raise Refusal(
                    "PTK108",
                    f"pytreekit would take {info.name}'s fields from annotations "
                    f"({fields.annotated_why}), and there are none: the rewrite would carry "
                    f"no leaves (flatten carries {', '.join(carried.names)})",
                    info.node.name,
                )
            if set(annotated) != carried_names:
                extra = sorted(set(annotated) - carried_names)
                missing = sorted(carried_names - set(annotated))
                parts = []
                if extra:
                    parts.append(f"annotates {', '.join(extra)}, which flatten does not carry")
                if missing:
                    parts.append(f"does not annotate {', '.join(missing)}, which flatten carries")
                raise Refusal("PTK108", f"{info.name} {' and '.join(parts)}")
        set_names = set(run.attributes)
        extra = [name for name in run.attributes if name not in carried_names]
        if extra:
            raise Refusal(
                "PTK108",
                f"__init__ sets {', '.join(extra)}, which flatten does not carry",
                run.nodes.get(extra[0]),
            )
        missing = [name for name in carried.names if name not in set_names]
        if missing:
            raise Refusal("PTK108", f"__init__ never sets {', '.join(missing)}")
        return fields.annotated if fields.annotated is not None else tuple(run.attributes)

    def _check_statics(
        self, info: ClassInfo, carried: Carried, symbolic: InitRun, fields: Fields
    ) -> None:
        """A list, dict or set reaching a static attribute through the ``__init__`` parameter
        that feeds it (its default, or an argument somewhere in the scanned files) is refused."""
        params: dict[str, str] = {}
        for name in carried.static:
            value, functions = strip(symbolic.attributes[name])
            qualified = {info.module.qualify(cst.parse_expression(f)) for f in functions}
            if isinstance(value, Param) and not (qualified & _HASHABLE_RESULT):
                params[name] = value.name
                default = fields.defaults.get(value.name)
                if default is not None and _unhashable(default):
                    raise Refusal(
                        "PTK114",
                        f"static {name} defaults to {code(default)}, which is unhashable",
                        default,
                    )
        if params:
            self._unhashable_arguments(info, params, fields)

    def _unhashable_arguments(
        self, info: ClassInfo, params: dict[str, str], fields: Fields
    ) -> None:
        scopes: dict[int, dict[int, cst.CSTNode]] = {}
        for module, call in self._constructions(info):
            bound = fields.bind_syntax(call)
            for attribute, param in params.items():
                argument = bound.get(param)
                if argument is None:
                    continue
                shown = code(argument)
                if isinstance(argument, cst.Name) and module.tree is not None:
                    # ``pos = [1, 2]; S(w, pos)``: a binding the call's scope shows
                    if id(module) not in scopes:
                        scopes[id(module)] = _call_scopes(module.tree)
                    scope = scopes[id(module)].get(id(call), module.tree)
                    name = argument.value
                    value = _unhashable_binding(scope, name, call) or _unhashable_binding(
                        scope, name, call, _maybe_list
                    )
                    if value is not None:
                        shown = f"{name} = {code(value)}"
                        argument = value
                if _maybe_list(argument):  # ``a.tolist()``, ``a.copy()``: a list or not
                    where = f"{attribute} gets {shown} in {module.name}, maybe a list"
                    self.maybe_lists.setdefault(info, where)
                if _unhashable(argument):
                    raise Refusal(
                        "PTK114",
                        f"static {attribute} gets {shown} in {module.name} "
                        f"({code(call)}), which is unhashable",
                    )

    def _constructions(self, info: ClassInfo) -> Iterator[tuple[Module, cst.Call]]:
        """The calls that build ``info`` in the scanned files: ``Name(...)`` wherever it is
        reached, and ``cls(...)``, ``type(self)(...)``, ``self.__class__(...)`` in its body."""
        yield from ((info.module, call) for call in _calls(info.node) if _builds_own(call))
        for module in self.project.modules:
            # cheap looks first: the name, then a call of it whose arguments could hold a list,
            # a dict or a set (what _unhashable finds); only then is the module parsed
            if info.name not in module.words() or not _may_pass_unhashable(
                module.source, info.name
            ):
                continue
            tree = self.project.parse(module)
            if tree is None:
                continue
            for call in _calls(tree):
                if module.qualify(call.func) == info.qualname:
                    yield module, call


class _Description:
    """What a proven rewrite changes for the user: leaf order, key paths, the methods kept or
    removed, hashing, what was proven and what was not."""

    project: Project
    options: Options
    path_reader: str
    maybe_lists: dict[ClassInfo, str]

    def _describe(
        self,
        info: ClassInfo,
        registration: Registration,
        carried: Carried,
        leaves: tuple[str, ...],
        run: InitRun,
        unflatten: Unflatten,
        sources: list[Function],
    ) -> Rewrite:
        through_init = unflatten.construct is not None
        static = carried.static
        unsafe: list[Refusal] = []
        if leaves != carried.children:
            unsafe.append(
                Refusal(
                    "PTK201",
                    f"leaves go in __init__'s order ({', '.join(leaves)}), not flatten's "
                    f"({', '.join(carried.children)})",
                )
            )
        keys_before = carried.keys or tuple(
            f"[<flat index {i}>]" for i in range(len(carried.children))
        )
        changed = [
            f"{before} -> .{name}"
            for before, name in zip(keys_before, carried.children, strict=True)
            if before != f".{name}"
        ]
        if changed and carried.keys is not None:
            unsafe.append(Refusal("PTK202", f"key paths change: {', '.join(changed[:3])}"))
        elif changed and self.path_reader:
            unsafe.append(
                Refusal(
                    "PTK202",
                    f"key paths change ({changed[0]}) and {self.path_reader} reads key paths",
                )
            )
        if registration.module is not info.module:
            unsafe.append(
                Refusal(
                    "PTK203",
                    f"{info.name} is defined in {info.module.name}: the rewrite decorates it "
                    f"there and deletes this registration",
                )
            )
        dropped = [
            (name, functions[0])
            # an aux value comes back as flatten read it (converted already); a leaf comes
            # back as whatever JAX, tree_map or an optimizer made of it
            for name in carried.children
            for value in [
                unflatten.stores.get(name)
                or (run.attributes.get(name) if through_init else None)
                or Opaque("")
            ]
            for functions in [strip(value)[1]]
            if functions
        ]
        if dropped:
            described = ", ".join(f"{function}({name})" for name, function in dropped)
            how = "through __init__ " if through_init else ""
            unsafe.append(
                Refusal(
                    "PTK205",
                    f"unflatten converted {how}({described}); pytreekit rebuilds without "
                    f"converting, so a leaf JAX hands back (a NumPy array, a Python number) "
                    f"stays as it is",
                )
            )
        kept: dict[str, str] = {}
        remove: list[str] = []
        remove_functions: list[tuple[Module, cst.CSTNode]] = []
        for function in sources:
            if function.owner is not None and function.owner is info:
                name = function.name
                why = self._keep_method(info, name)
                if why:
                    kept[name] = why
                elif name not in remove:
                    remove.append(name)
            elif function.deletable and not self._used_elsewhere(function):
                remove_functions.append((function.module, function.node))
        kept.update(_loading_imports(info, registration, remove, remove_functions))
        body_eq = info.defines("__eq__")
        body_repr = info.defines("__repr__")
        write_eq = not body_eq and not self.options.adopt_dunders
        write_repr = not body_repr and not self.options.adopt_dunders
        dataclass = dataclass_options(info) is not None
        before = _hashing(self.project, info)
        if body_eq:
            hashing = f"unchanged: the class's own __eq__ stays; {before}, as before"
        elif write_eq:
            hashing = f"unchanged (eq=False): {before}, as before"
        elif dataclass:
            hashing = (
                "pytreekit's __eq__ replaces the dataclass's; hashing as the dataclass decided"
            )
        else:
            hashing = (
                f"changed: pytreekit's __eq__ compares fields, so instances are unhashable "
                f"(before: {before}; jax.jit(..., static_argnums=...) on one breaks)"
            )
        notes = list(run.notes)
        if through_init and unflatten.stores:
            assert unflatten.construct is not None
            positional, keywords = unflatten.construct
            dummies = [
                value.text
                for value in [*positional, *keywords.values()]
                if isinstance(value, Opaque)
            ]
            made = f" from {', '.join(dummies)}" if dummies else ""
            notes.insert(
                0,
                f"built a throwaway instance{made}, then stored "
                f"{', '.join(unflatten.stores)} over it",
            )
        proven = [
            "flatten reads attributes",
            "unflatten inverts it",
            "__init__ sets exactly those",
        ]
        derived = [name for name in carried.aux if "." in name]
        if derived:
            proven.append(
                f"aux read through children ({', '.join(derived)}) is static in their classes"
            )
        unproven = ["code outside the scanned files"]
        if static:
            maybe = self.maybe_lists.get(info)
            unproven.insert(0, f"statics hashable at run time{f' ({maybe})' if maybe else ''}")
        if through_init and any("converted" in note for note in notes):
            unproven.insert(0, "conversions in __init__ idempotent")
        annotated = [
            code(a.target)
            for a in info.annotations()
            if "ClassVar" not in code(a.annotation.annotation)
        ]
        becomes = ""
        if annotated and not dataclass:
            becomes = (
                f"becomes a dataclass (it annotates {', '.join(annotated[:3])}"
                f"{', ...' if len(annotated) > 3 else ''}): dataclasses.is_dataclass, fields, "
                f"replace and asdict now apply to it, and asdict/astuple of a dataclass holding "
                f"one turn it into a dict"
            )
        return Rewrite(
            becomes_dataclass=becomes,
            cls=info,
            registration=registration,
            children=carried.children,
            static=static,
            leaves=leaves,
            keys_before=keys_before,
            write_eq=write_eq,
            write_repr=write_repr,
            remove_methods=tuple(remove),
            kept_methods=kept,
            remove_functions=remove_functions,
            init_notes=notes,
            rebuilt_by_init=through_init,
            hashing=hashing,
            proven=proven,
            unproven=unproven,
            unsafe=unsafe,
        )

    def _keep_method(self, info: ClassInfo, name: str) -> str:
        for ancestor in self.project.mro(info)[1:]:
            method = ancestor.methods().get(name)
            if method is not None and _is_abstract(ancestor, method):
                return f"{ancestor.name} declares it abstract"
        bare = _bare_names(info.node, name)
        if bare:
            # ``to_parts = tree_flatten`` in the body runs when the class is made
            return f"{info.name}'s body uses it by name ({code(bare[0])})"
        # ``getattr(o, "tree_flatten")``, ``methodcaller("tree_flatten")``, ``hasattr``: a string
        # naming the method may reach it on any object, this class's too
        literal = re.compile(rf"""(?<![\w'"])[rRuU]?(['"]){name}\1""")
        for module in self.project.modules:
            found = literal.search(module.source)
            if found is not None:
                return f"{module.name} names it in a string ({found.group(0)})"
        pattern = re.compile(rf"\.{name}\b")
        # only this class's own registration goes with the method: another one passing it
        # (``register_pytree_node(B, A.tree_flatten, ...)``) would lose it
        arguments = {
            id(node)
            for r in self.project.registrations
            if self.project.lookup(r.module, r.named) is info
            for node in r.args.values()
        }
        for module in self.project.modules:
            if not pattern.search(module.source):
                continue
            tree = self.project.parse(module)
            if tree is None:
                continue
            for node in _attributes(tree, name):
                if id(node) not in arguments and not _module_attribute(module, node, self.project):
                    return f"{module.name} uses {code(node)}"
        return ""

    def _used_elsewhere(self, function: Function) -> bool:
        name = function.name
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        uses = len(pattern.findall(function.module.source))
        # The definition and the registration name it once each.
        if uses > 2:
            return True
        return any(
            _reaches(module, owner, name)
            for module in self.project.modules
            for owner in dict.fromkeys((function.module.name, *function.module.import_names))
            if module is not function.module
            and name in module.words()
            and self.project.parse(module) is not None
        )


def _reaches(module: Module, owner: str, name: str) -> bool:
    """Whether ``module``, which names ``name``, may use ``owner.name``: it imports the name, or
    the module or a package above it (``ops.name``, ``pkg.ops.name``, ``getattr(ops, "name")``),
    or all of it (``from ops import *``)."""
    if module.names.get(name) == f"{owner}.{name}":
        return True
    bound = {*module.names.values(), *module.star_imports}
    return any(owner == qualified or owner.startswith(f"{qualified}.") for qualified in bound)


class _ClassReading:
    """What the analysis reads off a registered class: its bases and containers, its dataclass
    forms and decorators, its flatten and unflatten functions, and what its aux data reads."""

    project: Project
    options: Options
    patches: Patches | None = None

    def _check_containers(self, info: ClassInfo) -> None:
        for ancestor in self.project.mro(info):
            for qualified, written in ancestor.bases:
                if qualified in _CONTAINERS:
                    what = "is" if ancestor is info else f"derives (through {ancestor.name}) from"
                    raise Refusal(
                        "PTK111",
                        f"{info.name} {what} {_CONTAINERS[qualified]} ({written})",
                        next(
                            (
                                b.value
                                for b in ancestor.node.bases
                                if code(b.value, 1_000) == written
                            ),
                            None,
                        ),
                    )

    def _check_bindings(self, info: ClassInfo) -> None:
        """The methods the analysis reads (by their defs) are what the classes of the hierarchy
        hold: no name of a body is bound both by a def and otherwise (``tree_flatten = f``, a
        def under ``if``), no method JAX or ``__init__`` uses is bound other than by a def, and
        no code of the scanned files sets or deletes an attribute of the class object."""
        for ancestor in self.project.mro(info):
            module = ancestor.module
            for node in module.syntax().body:
                if not (isinstance(node, ast.ClassDef) and node.name == ancestor.name):
                    continue
                for name, found in scope_bindings(node.body).items():
                    defs = [b for b in found if b.how == "a def" and b.direct]
                    others = [b for b in found if b not in defs]
                    if others and (defs or name in _READ_METHODS):
                        code_ = "PTK116" if name in _FLATTEN_METHODS else "PTK112"
                        raise Refusal(
                            code_,
                            f"the body of {ancestor.name} binds {name} by "
                            f"{others[0].describe()}"
                            f"{' besides its def' if defs else ''}: the codemod cannot prove "
                            f"which {name} the class holds; bind it once, by a def",
                            ancestor.node.name,
                        )
        self._check_patches(info)

    def _check_namespaces(self, info: ClassInfo, registration: Registration) -> None:
        """Neither the class's module nor the registration's writes its own namespace in a way
        the bindings cannot follow (``exec``, ``locals()``, ``sys.modules``, ``__code__``...):
        the helpers and methods read by their defs would then not be proven."""
        others = [registration.module] if registration.module is not info.module else []
        for module in [info.module, *others]:
            if self.project.parse(module) is None:
                continue
            found = namespace_writer(module.syntax(), module.named)
            if found is not None:
                what, line = found
                raise Refusal(
                    "PTK116",
                    f"{module.name} may write its own namespace ({what}, line {line}): the "
                    f"codemod cannot prove which functions the registration of {info.name} "
                    f"and its methods are; remove it, or decorate by hand",
                    registration.node,
                )
        if self.patches is None:
            self.patches = Patches(self.project)
        self.patches.check_functions(info)

    def _check_patches(self, info: ClassInfo) -> None:
        """No module of the scanned files writes an attribute the rewrite relies on of an
        object that may be the class or one of its ancestors (``_patches``)."""
        if self.patches is None:
            self.patches = Patches(self.project)
        self.patches.check_class(info)

    def _check_class(self, info: ClassInfo, registration: Registration) -> None:
        for keyword in info.node.keywords:
            if keyword.keyword is not None and keyword.keyword.value == "metaclass":
                raise Refusal(
                    "PTK112", f"{info.name} has a metaclass ({code(keyword.value)})", keyword.value
                )
        for decorator in info.node.decorators if registration.form == "decorator" else ():
            if decorator is registration.node:
                break
            if self._transparent(info.module, decorator.decorator):
                continue
            raise Refusal(
                "PTK112",
                f"@{code(decorator.decorator)} is applied after the registration decorator",
                decorator,
            )
        for decorator in info.node.decorators:
            if decorator is registration.node:
                continue
            expression = decorator.decorator
            target = expression.func if isinstance(expression, cst.Call) else expression
            if info.module.qualify(target) in DATACLASS or self._transparent(
                info.module, expression
            ):
                continue
            raise Refusal(
                "PTK112",
                f"{info.name} is decorated with @{code(expression)}, which the codemod cannot "
                f"follow (a decorator that only sets attributes and returns the class is "
                f"followed; declare others with --transparent-decorator)",
                decorator,
            )
        for ancestor in self.project.mro(info):
            for qualified, written in ancestor.bases:
                found = self.project.lookup(ancestor.module, qualified)
                if found is not None or qualified in NEUTRAL_BASES:
                    continue
                raise Refusal(
                    "PTK115",
                    f"base {written} of {ancestor.name} is {_where_base(self.project, qualified)} "
                    f"(its __init__ cannot be followed)",
                    next(
                        (b.value for b in ancestor.node.bases if code(b.value, 1_000) == written),
                        None,
                    ),
                )
            for name in _CREATION:
                if ancestor.defines(name):
                    raise Refusal(
                        "PTK112",
                        f"{ancestor.name} defines {name}",
                        ancestor.methods().get(name) or ancestor.assigned_names().get(name),
                    )
            others = [
                d
                for d in _decorators_other_than_dataclass(ancestor)
                if not self._transparent(ancestor.module, d)
            ]
            if ancestor is not info and others:
                raise Refusal(
                    "PTK112",
                    f"base {ancestor.name} is decorated with @{code(others[0])}",
                    others[0],
                )

    def _check_dataclass_forms(self, info: ClassInfo) -> None:
        """Dataclass forms whose rewrite does not import or does not build (checked against
        pytreekit: a subclass's automatic set-up runs when its class statement does, before
        its own ``@dataclass`` decorator)."""
        registered = self.project.registered()
        for ancestor in self.project.mro(info):
            options = dataclass_options(ancestor)
            if options is None:
                continue
            decorator = next(
                (d for d in ancestor.node.decorators if "dataclass" in code(d.decorator)), None
            )
            # pytreekit sets a subclass of a pytree class up when its class statement runs,
            # before the @dataclass under it: the forms below then break
            below_a_pytree = any(a.qualname in registered for a in self.project.mro(ancestor)[1:])
            above_subclasses = ancestor.qualname in registered and bool(
                self.project.subclasses(ancestor)
            )
            if not (below_a_pytree or above_subclasses):
                continue
            if options.get("slots"):
                raise Refusal(
                    "PTK112",
                    f"{ancestor.name} is a @dataclass(slots=True) in a hierarchy that becomes "
                    f"pytree classes: its subclasses could not be built",
                    decorator,
                )
            if options.get("frozen"):
                raise Refusal(
                    "PTK112",
                    f"{ancestor.name} is a @dataclass(frozen=True) in a hierarchy that becomes "
                    f"pytree classes: pytreekit sets a subclass up when its class statement "
                    f"runs, before a @dataclass freezes it, and the module would not import",
                    decorator,
                )

    def _transparent(self, module: Module, expression: cst.BaseExpression) -> bool:
        """A class decorator that only sets attributes and returns the class: declared so
        (``--transparent-decorator``), or a function of the scanned files whose body is only
        that (``cls.kind = "dense"``, ``setattr(cls, "kind", ...)``, ``return cls``)."""
        qualified = module.qualify(
            expression.func if isinstance(expression, cst.Call) else expression
        )
        declared = self.options.transparent
        if qualified in declared or code(expression) in declared:
            return True
        if qualified is None or isinstance(expression, cst.Call):
            return False
        owner, _, name = qualified.rpartition(".")
        for candidate in self.project.modules:
            if candidate.named(owner) and self.project.parse(candidate) is not None:
                function = candidate.functions.get(name)
                return function is not None and _only_sets_attributes(function)
        return False


class _RegisteredFunctions:
    """The flatten and unflatten functions a registration names, read as the codemod proves them."""

    project: Project
    options: Options

    # -- flatten --------------------------------------------------------------------------------

    def _flatten(
        self, info: ClassInfo, registration: Registration
    ) -> tuple[Carried, list[Function]]:
        api = registration.api
        plain: Function | None
        keyed: Function | None
        if api == "register_pytree_node_class":
            plain = self._method(info, "tree_flatten", required=True)
            keyed = None
        elif api == "register_pytree_with_keys_class":
            keyed = self._method(info, "tree_flatten_with_keys", required=True)
            plain = self._method(info, "tree_flatten", required=False)
        else:
            plain = self._function(info, registration, "flatten")
            keyed = self._function(info, registration, "flatten_with_keys")
        carried_plain = read_flatten(plain, keyed=False, info=info) if plain else None
        carried_keyed = read_flatten(keyed, keyed=True, info=info) if keyed else None
        if (
            carried_plain
            and carried_keyed
            and (carried_plain.children, carried_plain.aux, carried_plain.aux_shape)
            != (carried_keyed.children, carried_keyed.aux, carried_keyed.aux_shape)
        ):
            raise Refusal("PTK104", "flatten and flatten_with_keys carry different attributes")
        carried = carried_keyed or carried_plain
        if carried is None:
            raise Refusal("PTK116", "the registration gives no flatten function")
        self._check_reads(info, carried)
        return carried, [f for f in (plain, keyed) if f is not None]

    def _check_reads(self, info: ClassInfo, carried: Carried) -> None:
        names = carried.names
        for derived in carried.aux:
            if "." in derived:
                self._check_derived(info, carried, derived)
        for name in names:
            if names.count(name) > 1:
                raise Refusal("PTK104", f"flatten reads {name} twice")
            if name.startswith("__"):
                raise Refusal("PTK108", f"{name} is a private name pytreekit never makes a field")
            for ancestor in self.project.mro(info):
                kind = _class_level(ancestor, name)
                if kind:
                    raise Refusal(
                        "PTK106", f"flatten reads {name}, which {ancestor.name} defines as {kind}"
                    )

    def _check_derived(self, info: ClassInfo, carried: Carried, derived: str) -> None:
        """An aux value read through a child (``self.linear.in_features``) adds nothing to the
        treedef when the child's own class carries that attribute in its aux: two instances'
        treedefs are equal exactly when the children's are. The child's class is the class
        ``__init__`` builds it with."""
        child, _, attribute = derived.partition(".")
        if child not in carried.children:
            raise Refusal(
                "PTK105",
                f"aux data reads {derived}, and {child} is not a child flatten carries",
            )
        built = self._built_class(info, child)
        if built is None:
            raise Refusal(
                "PTK105",
                f"aux data reads {derived}: the codemod cannot tell which class {child} is, so "
                f"not that {attribute} is static there",
            )
        static = self._static_of(built)
        if attribute not in static:
            raise Refusal(
                "PTK105",
                f"aux data reads {derived}, which {built.name}'s registration does not keep static",
            )

    def _built_class(self, info: ClassInfo, attribute: str) -> ClassInfo | None:
        """The scanned class whose constructor ``__init__`` stores in ``attribute``."""
        try:
            run = Fields(self.project, info).run_symbolic()
        except Refusal:
            return None
        value = run.attributes.get(attribute)
        text = value.text if isinstance(value, Opaque) else ""
        head = text.partition("(")[0]
        if not re.fullmatch(r"[A-Za-z_][\w.]*", head) or not text.endswith(")"):
            return None
        qualified = info.module.qualify(cst.parse_expression(head))
        return self.project.classes.get(qualified or "")

    def _static_of(self, info: ClassInfo) -> tuple[str, ...]:
        """What the class's own registration keeps in its aux (the plain attributes)."""
        for registration in self.project.registrations:
            if registration.target != info.qualname:
                continue
            try:
                carried, _ = self._flatten(info, registration)
            except Refusal:
                return ()
            return carried.static
        return ()

    def _method(self, info: ClassInfo, name: str, *, required: bool) -> Function | None:
        for ancestor in self.project.mro(info):
            method = ancestor.methods().get(name)
            if method is not None:
                if _is_abstract(ancestor, method):
                    continue
                return Function.of(method, ancestor, info.module)
        if required:
            raise Refusal(
                "PTK116", f"{info.name} has no {name} method in the scanned files", info.node.name
            )
        return None

    def _function(self, info: ClassInfo, registration: Registration, role: str) -> Function | None:
        node = registration.args.get(role)
        if node is None:
            if role == "unflatten":
                raise Refusal("PTK116", "the registration gives no unflatten function")
            return None
        module = registration.module
        if isinstance(node, cst.Lambda):
            return Function.of(node, None, module)
        if isinstance(node, cst.Name):
            if node.value in module.functions:
                self._bound_once(registration, node.value, role)
                return Function.of(module.functions[node.value], None, module, deletable=True)
            if node.value in module.lambdas:
                self._bound_once(registration, node.value, role)
                return Function.of(module.lambdas[node.value], None, module, deletable=True)
        if isinstance(node, cst.Attribute) and module.qualify(node.value) == info.qualname:
            for ancestor in self.project.mro(info):
                method = ancestor.methods().get(node.attr.value)
                if method is not None:
                    return Function.of(method, ancestor, info.module, attribute=True)
        raise Refusal(
            "PTK116", f"{role} ({code(node)}) is not a function or lambda of this module", node
        )

    def _bound_once(self, registration: Registration, name: str, role: str) -> None:
        """The function named is the one JAX registers: the name is bound once, by a def or
        ``name = lambda`` of the module's own body, above the registration."""
        module = registration.module
        bindings = module.bindings()
        found = [*bindings.get(name, []), *bindings.get(GLOBALS, [])]
        # a star import above the def is overridden by it; one below may bind the name again
        first = min((b.line for b in found), default=0)
        stars = [b for b in bindings.get(STAR, []) if b.line >= first]
        if stars and any(self.project._star_binds(s, name) is not False for s in _sources(stars)):
            found += stars
        single = found[0] if len(found) == 1 else None
        if (
            single is not None
            and single.direct
            and (single.how == "a def" or single.lambda_)
            and single.end < registration.line
        ):
            return
        if single is not None:
            why = f"is bound by {single.describe()}, not by a def above the registration"
        else:
            shown = ", ".join(b.describe() for b in found[:3])
            why = f"is bound {len(found)} times in {module.name} ({shown})"
        raise Refusal(
            "PTK116",
            f"{role} {name} {why}: which function JAX registers cannot be proven; give the "
            f"registration a function bound once, by a def above it",
            registration.args.get(role),
        )

    # -- unflatten ------------------------------------------------------------------------------

    def _unflatten(
        self, info: ClassInfo, registration: Registration, carried: Carried
    ) -> tuple[Unflatten, list[Function]]:
        if registration.form == "decorator" or registration.api.endswith("_class"):
            function = self._method(info, "tree_unflatten", required=True)
        else:
            function = self._function(info, registration, "unflatten")
        assert function is not None
        return read_unflatten(function, info, carried), [function]


class _Analysis(_InitProof, _Description, _ClassReading, _RegisteredFunctions):
    def __init__(self, project: Project, options: Options) -> None:
        self.project = project
        self.options = options
        self.maybe_lists = {}
        # every registration naming a class counts, the conditional ones too: a second
        # ``register_pytree_node_class(A)`` under ``try`` runs on the rewritten class as well
        counts: dict[ClassInfo, int] = {}
        for registration in project.registrations:
            info = project.lookup(registration.module, registration.named)
            if info is not None:
                counts[info] = counts.get(info, 0) + 1
        self.counts = counts
        # a helper's registration (``def register(cls)``) is followed to its classes
        self.unknown = [r for r in project.registrations if r.named is None and _unknown(r)]
        self.path_reader = _path_reader(project)

    def outcome(self, registration: Registration) -> Outcome:
        outcome = self._outcome(registration)
        where = self._where(registration)
        for refusal in outcome.reasons:
            refusal.where = where
        return outcome

    def _outcome(self, registration: Registration) -> Outcome:
        pinned = self._pinned(registration)
        if pinned is not None:
            return _left(registration, [Refusal(pinned[0], pinned[1])])
        if "PTK" in suppressions(registration):
            return _left(registration, [Refusal("PTK100", "a '# noqa: PTK' comment keeps it")])
        try:
            rewrite = self._rewrite(registration)
        except Refusal as refusal:
            return _left(registration, [refusal])
        except _Reasons as reasons:
            return _left(registration, reasons.found)
        except RecursionError:
            return _left(registration, [Refusal("PTK116", "the code nests too deep to follow")])
        except Exception as error:  # a bug of the codemod: this registration's, not the run's
            reason = (
                f"the codemod failed on it ({type(error).__name__}: {error}); it is left as it "
                f"is: please report it"
            )
            return _left(registration, [Refusal("PTK199", reason, registration.node)])
        return Outcome(registration, "rewritten", rewrite=rewrite)

    def _where(self, registration: Registration) -> list[tuple[Module, cst.CSTNode]]:
        """The top-level statements a reason's code may be in."""
        module = registration.module
        places: list[tuple[Module, cst.CSTNode]] = []
        if registration.anchor is not None:
            places.append((module, registration.anchor))
        if module.tree is not None and registration.place:
            places += [(module, top) for top in module.tree.body]
        info = self.project.lookup(module, registration.target)
        if info is not None:
            places += [(a.module, a.node) for a in self.project.mro(info)]
        for argument in registration.args.values():
            if isinstance(argument, cst.Name):
                function = module.functions.get(argument.value)
                if function is not None:
                    places.append((module, function))
                if argument.value in module.lambdas and module.tree is not None:
                    places += [
                        (module, top)
                        for top in module.tree.body
                        if isinstance(top, cst.SimpleStatementLine)
                    ]
        return places

    def _pinned(self, registration: Registration) -> tuple[str, str] | None:
        anchor = registration.anchor
        if anchor is None:
            return None
        comments = [line.comment.value if line.comment else "" for line in anchor.leading_lines]
        for index, line in enumerate(anchor.leading_lines):
            codes = existing_comments([line])
            if codes and codes[0] in PINNED:
                # the reason goes on over the continuation lines below (a comment wraps)
                end = index + 1
                while end < len(comments) and comments[end].startswith(CONTINUATION):
                    end += 1
                return codes[0], reason_of(comments[index:end])
        return None

    # The steps, in the order of the module docstring. Each independent step runs even when
    # one before it refused, so that the report gives every reason at once.
    def _rewrite(self, registration: Registration) -> Rewrite:
        info = self._place(registration)  # nothing else can be read without the class
        found: list[Refusal] = []

        def attempt(step: Callable[[], _T]) -> _T | None:
            try:
                return step()
            except Refusal as refusal:
                if all((refusal.code, refusal.reason) != (f.code, f.reason) for f in found):
                    found.append(refusal)
                return None

        attempt(lambda: self._check_containers(info))
        attempt(lambda: self._check_class(info, registration))
        attempt(lambda: self._check_bindings(info))
        attempt(lambda: self._check_namespaces(info, registration))
        attempt(lambda: self._check_dataclass_forms(info))
        flattened = attempt(lambda: self._flatten(info, registration))
        fields = attempt(lambda: Fields(self.project, info))
        partial = found[-1].partial if found and flattened is None else None
        if partial is not None and fields is not None:
            known = fields
            attempt(lambda: self._check_attributes(info, partial, known.run_symbolic(), known))
        plan: Rewrite | None = None
        if flattened is not None:
            carried, flatten_sources = flattened
            read = attempt(lambda: self._unflatten(info, registration, carried))
            if read is not None and fields is not None:
                unflatten, unflatten_source = read
                plan = attempt(
                    lambda: self._prove(
                        info,
                        registration,
                        carried,
                        fields,
                        unflatten,
                        flatten_sources + unflatten_source,
                    )
                )
        if found:
            raise _Reasons(found)
        assert plan is not None
        return plan

    def _prove(
        self,
        info: ClassInfo,
        registration: Registration,
        carried: Carried,
        fields: Fields,
        unflatten: Unflatten,
        sources: list[Function],
    ) -> Rewrite:
        if unflatten.construct is not None:
            positional, keywords = unflatten.construct
            run = fields.run(positional, keywords)
            symbolic = fields.run_symbolic()
            # the attributes first: a path that sets others is the decisive reason
            order = self._check_attributes(info, carried, symbolic, fields)
            self._check_inverse(info, carried, run, unflatten)
        else:
            symbolic = fields.run_symbolic()
            order = self._check_attributes(info, carried, symbolic, fields)
            self._check_stores(info, carried, unflatten.stores)
            run = symbolic
        static = carried.static
        leaves = tuple(name for name in order if name not in static)
        self._check_statics(info, carried, symbolic, fields)
        _not_registered_elsewhere(self.project, info, registration, self.unknown)
        return self._describe(
            info,
            registration,
            carried,
            leaves,
            run,
            unflatten,
            sources,
        )

    def _place(self, registration: Registration) -> ClassInfo:
        if registration.form == "value":
            raise _used_as_value(registration)
        if registration.place.startswith("under"):
            raise Refusal("PTK102", f"the registration is {registration.place}", registration.node)
        if registration.unresolved:
            raise Refusal(
                "PTK102",
                f"{registration.api} is {registration.unresolved}: the codemod cannot tell "
                f"the registration is JAX's",
                registration.node,
            )
        registrar = _registrar(registration)
        why = registration.module.conditional.get(registrar)
        if why is not None:
            # a fallback (``except ImportError: def register_pytree_node_class(cls): ...``)
            # may be what runs: the registration is as conditional as the name
            raise Refusal(
                "PTK102",
                f"{registrar} is {why}: the registration may not be JAX's",
                registration.node,
            )
        if registration.place:
            if registration.helper:
                registration.registers = _helper_classes(self.project, registration.helper)
                if registration.registers:
                    named = ", ".join(registration.registers)
                    raise Refusal(
                        "PTK101",
                        f"the registration is {registration.place}, which registers {named}: "
                        f"decorate {'each' if len(registration.registers) > 1 else 'it'} with "
                        f"@pytree_class instead",
                        registration.node,
                    )
            raise Refusal("PTK101", f"the registration is {registration.place}", registration.node)
        anchor = registration.anchor
        if registration.form == "call" and not _plain_statement(registration):
            statement = anchor.body[0] if isinstance(anchor, cst.SimpleStatementLine) else None
            raise Refusal(
                "PTK101",
                f"the call is part of a larger statement ({code(statement or registration.node)})",
                registration.node,
            )
        target = registration.target
        info = self.project.lookup(registration.module, target)
        if info is None:
            raise Refusal("PTK103", _not_found(self.project, registration), registration.node)
        again = info.module.rebound_classes.get(info.name)
        if again is not None:
            raise Refusal(
                "PTK103",
                f"{info.name} is bound by a class statement and again by {again} at module "
                f"level in {info.module.display}: which class the registration names is "
                f"ambiguous",
                registration.node,
            )
        if "*" in registration.args:
            raise Refusal("PTK116", "the call passes *args or **kwargs", registration.node)
        _registered_once(registration, self.counts[info])
        return info


def _helper_classes(project: Project, helper: str) -> list[str]:
    """The classes a helper (``def register(cls): register_pytree_node(cls, ...)``)
    registers: decorated with it, or passed to it at module level."""
    found = [_named_in(info, module) for info, module in _helper_uses(project, helper)]
    return list(dict.fromkeys(found))


def _helper_uses(project: Project, helper: str) -> list[tuple[ClassInfo, Module]]:
    """The classes a helper registers, each with the module that decorates it with the helper
    or passes it to the helper."""
    short = helper.rpartition(".")[2]
    found: list[tuple[ClassInfo, Module]] = []
    for module in project.modules:
        if short not in module.source or project.parse(module) is None:
            continue
        assert module.tree is not None
        for info in module.classes.values():
            for decorator in info.node.decorators:
                expression = decorator.decorator
                target = expression.func if isinstance(expression, cst.Call) else expression
                if module.qualify(target) == helper:
                    found.append((info, module))
        for statement in module.tree.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
                if (
                    isinstance(value, cst.Call)
                    and module.qualify(value.func) == helper
                    and value.args
                ):
                    registered = module.qualify(value.args[0].value)
                    passed = project.classes.get(registered or "")
                    if passed is not None:
                        found.append((passed, module))
    return found


def _where_base(project: Project, qualified: str | None) -> str:
    """Why a base is not followed: where it is, if a scanned module that was not read holds it."""
    holder = project.module_named((qualified or "").rpartition(".")[0])
    if holder is not None and project.parse(holder) is None and holder.error is not None:
        return f"in {holder.display}, which the codemod could not read ({holder.error})"
    if holder is not None and holder.tree is not None:
        return (
            f"bound in {holder.display} in a way the codemod cannot follow (conditionally, more "
            f"than once, or from a module outside the scanned files)"
        )
    return "not in the scanned files"


_OWN_CLASS = frozenset({"cls", "self.__class__", "type(self)", "klass", "subclass"})


def _used_as_value(registration: Registration) -> Refusal:
    return Refusal(
        "PTK102",
        f"{registration.api} is used here other than by a call or a decorator "
        f"({code(registration.anchor or registration.node)}): the codemod cannot tell which "
        f"classes it registers",
        registration.node,
    )


def _unknown(registration: Registration) -> bool:
    """Whether a registration naming no class is of one the codemod cannot name: not a helper's
    (``def register(cls): api(cls)``, followed to the classes it is given), nor a decorator's
    (it registers the class it decorates, one defined in a function)."""
    if registration.form == "decorator":
        return False
    if not registration.helper or registration.form == "value":
        return True
    function = registration.module.functions.get(registration.helper.rpartition(".")[2])
    if function is None:
        return True
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return registration.target_text not in {param.name.value for param in every}


def _registered_once(registration: Registration, count: int) -> None:
    if count > 1:
        raise Refusal(
            "PTK110",
            f"{registration.target_text} is registered {count} times in the scanned files",
        )


def _not_registered_elsewhere(
    project: Project, info: ClassInfo, registration: Registration, unknown: list[Registration]
) -> None:
    """Refuse (PTK110) a class that a registration the codemod cannot tie to a class may
    register again (checked last: a class left for a surer reason is reported with that)."""
    other = _unknown_registration(project, info, unknown)
    if other is not None:
        # no line number: the comments this run inserts above it would move it, and a second
        # run would rewrite this comment (the name and the code excerpt stay put)
        where = f", {other.place}" if other.place else ""
        raise Refusal(
            "PTK110",
            f"{registration.target_text} may be registered again in "
            f"{other.module.display}{where} ({code(other.anchor or other.node)}), a "
            f"registration the codemod cannot tie to a class, in a module that names "
            f"{info.name}",
        )


def _unknown_registration(
    project: Project, info: ClassInfo, unknown: list[Registration]
) -> Registration | None:
    """Of ``unknown``, the registrations whose class the codemod cannot name (``for c in (A,):
    api(c)``, ``map(api, CLASSES)``), one in a module that names ``info`` outside its class
    statement and its own registrations: it may register ``info`` a second time. One of
    ``cls`` or ``self.__class__`` in a class's body registers that class's hierarchy only."""
    for registration in unknown:
        module = registration.module
        if registration.target_text in _OWN_CLASS and registration.within:
            owner = project.lookup(module, registration.within)
            if owner is not None and owner not in project.mro(info):
                continue
        if info.name not in module.words():
            continue
        if module is not info.module:
            return registration
        own = {r.anchor for r in module.registrations if r.named == info.qualname}
        assert module.tree is not None
        for statement, words in zip(module.tree.body, module.statement_words(), strict=True):
            if info.name in words and statement is not info.node and statement not in own:
                return registration
    return None


def _registrar(registration: Registration) -> str:
    """The name the registration API is reached through (``jtu`` of ``jtu.register_...``)."""
    node = registration.node
    head = node.decorator if isinstance(node, cst.Decorator) else node
    if isinstance(head, cst.Call):
        head = head.func
    while isinstance(head, cst.Attribute):
        head = head.value
    return head.value if isinstance(head, cst.Name) else ""


def _module_attribute(module: Module, node: cst.Attribute, project: Project) -> bool:
    """``jax.tree_util.tree_flatten`` or ``jtu.tree_flatten``: an attribute of an imported
    module, not of a class (an imported class's ``Model.tree_flatten`` is a use)."""
    head = node.value
    while isinstance(head, cst.Attribute):
        head = head.value
    if not (isinstance(head, cst.Name) and head.value in module.names):
        return False
    return project.lookup(module, module.qualify(node.value)) is None


def _not_found(project: Project, registration: Registration) -> str:
    """Why the class a registration names is not one the codemod can rewrite: the lookup's
    failure named as it is."""
    target, text, module = registration.target, registration.target_text, registration.module
    hidden = [h for h in module.hidden if h.name == text]
    if target is None and hidden:
        return (
            f"{text} is defined {hidden[0].place}, not by a module-level class statement: the "
            f"codemod rewrites module-level classes only"
        )
    if target is None:
        return f"{text} is not a class name; scan the module defining it"
    if target in project.ambiguous:
        where = target.rpartition(".")[0]
        return f"{text} is defined by two scanned files named {where}; scan the module defining it"
    owner = target.rpartition(".")[0]
    outer = project.lookup(module, owner)
    if outer is not None:
        return (
            f"{text} is a nested class (in the body of {outer.name}): the codemod rewrites "
            f"module-level classes only"
        )
    holder = project.module_named(owner)
    if holder is not None and project.parse(holder) is None and holder.error is not None:
        return (
            f"{text} is defined in {holder.display}, which the codemod could not read "
            f"({holder.error})"
        )
    if holder is not None:
        return (
            f"{text} is not a class the codemod can follow in {holder.display} (bound "
            f"conditionally, more than once, or through a module outside the scanned files)"
        )
    return f"{text} is imported from outside the scanned files; scan the module defining it"


def _hashing(project: Project, info: ClassInfo) -> str:
    """How instances hash before the rewrite, as Python decides it along the class's bases."""
    for ancestor in project.mro(info):
        assigned = ancestor.assigned_names().get("__hash__")
        if isinstance(assigned, cst.Assign) and code(assigned.value) == "None":
            return f"unhashable ({ancestor.name} sets __hash__ = None)"
        if ancestor.defines("__hash__"):
            return f"hashed by {ancestor.name}.__hash__"
        if ancestor.defines("__eq__"):
            return f"unhashable ({ancestor.name} defines __eq__ without __hash__)"
        options = dataclass_options(ancestor)
        if options is not None:
            if options.get("unsafe_hash") or (options.get("frozen") and options.get("eq", True)):
                return f"hashed by field values (dataclass {ancestor.name})"
            if options.get("eq", True):
                return f"unhashable (dataclass {ancestor.name} compares fields, not frozen)"
    return "hashed by identity"


def _path_reader(project: Project) -> str:
    """Where the scanned code reads key paths (orbax, ``*_with_path``, ``keystr``), if it does:
    rewrites that rename flat-index paths are then unsafe."""
    reader = re.compile(r"\borbax\b|\w+_with_path\b|\bkeystr\b")
    for module in project.modules:
        match = reader.search(module.source)
        if match:
            return f"{module.name} ({match.group(0)})"
    return ""


def _plain_statement(registration: Registration) -> bool:
    """``register(C)`` or ``C = register(C)``, alone on its line or not."""
    anchor = registration.anchor
    assert isinstance(anchor, cst.SimpleStatementLine)  # at module level, outside any block
    for small in anchor.body:
        if isinstance(small, cst.Expr) and small.value is registration.node:
            return True
        if (
            isinstance(small, cst.Assign)
            and small.value is registration.node
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == registration.target_text
        ):
            return True
    return False


def _decorators_other_than_dataclass(info: ClassInfo) -> list[cst.BaseExpression]:
    """A base's decorators other than ``@dataclass`` and the registration APIs."""
    found = []
    for decorator in info.node.decorators:
        expression = decorator.decorator
        target = expression.func if isinstance(expression, cst.Call) else expression
        if info.module.qualify(target) not in DATACLASS and api_of(info.module, target) is None:
            found.append(expression)
    return found


def _sets_protocol(name: str) -> bool:
    """A name the analysis reads off the class (a method JAX calls, ``__init__``...): a
    decorator setting it changes what the codemod proved."""
    return name.startswith("__") or name in _READ_METHODS


def _only_sets_attributes(function: cst.FunctionDef) -> bool:
    """``def tag(cls): cls.kind = ...; setattr(cls, "x", ...); return cls`` and nothing else (no
    dunder or method the analysis reads set: ``cls.__init__ = ...``, ``cls.tree_flatten = ...``
    change what the codemod proved)."""
    params = function.params
    if (
        function.decorators
        or len(params.params) != 1
        or isinstance(params.star_arg, cst.Param)
        or params.kwonly_params
        or params.star_kwarg is not None
    ):
        return False
    this = params.params[0].name.value
    body = suite_statements(function.body)
    if not body or not (
        isinstance(body[-1], cst.Return)
        and isinstance(body[-1].value, cst.Name)
        and body[-1].value.value == this
    ):
        return False
    for statement in body[:-1]:
        if is_docstring(statement):
            continue
        if isinstance(statement, cst.Assign) and all(
            isinstance(t.target, cst.Attribute)
            and isinstance(t.target.value, cst.Name)
            and t.target.value.value == this
            and not _sets_protocol(t.target.attr.value)
            for t in statement.targets
        ):
            continue
        call = statement.value if isinstance(statement, cst.Expr) else None
        if (
            isinstance(call, cst.Call)
            and code(call.func) == "setattr"
            and len(call.args) == 3
            and isinstance(call.args[0].value, cst.Name)
            and call.args[0].value.value == this
            and isinstance(call.args[1].value, cst.SimpleString)
            and not _sets_protocol(str(call.args[1].value.evaluated_value))
        ):
            continue
        return False
    return True


def _class_level(info: ClassInfo, name: str) -> str:
    """What the class body binds ``name`` to, when that is not a plain default value."""
    method = info.methods().get(name)
    if method is not None:
        decorators = {code(d.decorator) for d in method.decorators}
        if any(d.endswith(("property", "cached_property")) for d in decorators):
            return "a property"
        return "a method"
    statement = info.assigned_names().get(name)
    # an annotated default is a field's default (a dataclass, or pytreekit's annotated class)
    if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Call):
        return f"a class attribute ({code(statement.value)})"
    return ""


def _is_abstract(info: ClassInfo, method: cst.FunctionDef) -> bool:
    for decorator in method.decorators:
        expression = decorator.decorator
        if info.module.qualify(expression) in _ABSTRACT:
            return True
    return False


def _may_pass_unhashable(source: str, name: str) -> bool:
    """Whether a call ``name(...)`` in the text has arguments that could spell a list, a dict
    or a set (``[``, ``{``, ``list(``, ``dict(``, ``set(``): the text up to the call's closing
    parenthesis, strings and all (a bracket inside a string only costs a parse)."""
    for match in re.finditer(rf"\b{re.escape(name)}\s*\(", source):
        depth, position = 1, match.end()
        while depth and position < len(source):
            character = source[position]
            depth += character == "("
            depth -= character == ")"
            position += 1
        arguments = source[match.end() : position]
        if re.search(
            r"[\[{]|\b(?:list|dict|set|sorted|vars)\s*\(|\.(?:tolist|copy)\s*\(", arguments
        ):
            return True
        # a name bound to one elsewhere in the text (``pos = [1, 2]; S(w, pos)``)
        if _UNHASHABLE_BINDING.search(source) and re.search(r"\b[A-Za-z_]\w*\b", arguments):
            return True
    return False


_UNHASHABLE_BINDING = re.compile(
    r"[^=!<>]=[ \t]*(?:[\[{]|(?:list|dict|set|sorted|vars)[ \t]*\()|\.(?:tolist|copy)[ \t]*\("
)


def _builds_own(call: cst.Call) -> bool:
    """``cls(...)``, ``type(self)(...)`` or ``self.__class__(...)``: in a class's body, a call
    that builds the class (or a subclass, which shares its fields)."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "cls"
    if isinstance(func, cst.Attribute):
        return func.attr.value == "__class__"
    return (
        isinstance(func, cst.Call)
        and isinstance(func.func, cst.Name)
        and func.func.value == "type"
        and len(func.args) == 1
    )


def _unhashable(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    if isinstance(node, cst.Tuple):  # ``([], [])``: a tuple hashes its items
        return any(_unhashable(element.value) for element in node.elements)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value in _UNHASHABLE_CALLS
    return False


# Builtins whose result is a list, a dict or a set.
_UNHASHABLE_CALLS = ("list", "dict", "set", "sorted", "vars")


def _call_scopes(tree: cst.Module) -> dict[int, cst.CSTNode]:
    """The innermost function holding each call of a module (by id; a call at module level has
    none)."""
    scopes: dict[int, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = []

    class Scopes(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.append(node)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            stack.pop()

        def visit_Call(self, node: cst.Call) -> None:
            if stack:
                scopes[id(node)] = stack[-1]

    tree.visit(Scopes())
    return scopes


def _maybe_list(node: cst.BaseExpression) -> bool:
    """``a.tolist()``, ``a.copy()``: a list when ``a`` is one (or an array), unknowable here."""
    func = node.func if isinstance(node, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value in ("tolist", "copy")


def _unhashable_binding(
    scope: cst.CSTNode,
    name: str,
    call: cst.CSTNode | None = None,
    predicate: Callable[[cst.BaseExpression], bool] = _unhashable,
) -> cst.BaseExpression | None:
    """A value ``scope`` (a function, or the module) binds ``name`` to that is a list, a dict
    or a set (any of its bindings: the cautious side), not looking into nested functions and
    classes. A binding to something else that surely runs after all of those and before
    ``call`` (a statement of the scope's own body: ``pos = tuple(pos)``) is what reaches it."""
    found: list[cst.BaseExpression] = []
    body = scope.body if isinstance(scope, cst.Module) else getattr(scope, "body", None)
    statements = body if isinstance(body, Sequence) else suite_statements(body) if body else []
    definite = {id(statement) for statement in statements} | {
        id(small)
        for statement in statements
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    }
    state = {"rebound": False, "called": False}

    def bound(node: cst.CSTNode, value: cst.BaseExpression) -> None:
        if predicate(value):
            found.append(value)
            state["rebound"] = False
        elif not state["called"] and id(node) in definite:
            state["rebound"] = True

    class Bindings(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is scope

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            if node is call:
                state["called"] = True

        def visit_Assign(self, node: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                bound(node, node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            value = node.value
            if isinstance(node.target, cst.Name) and node.target.value == name and value:
                bound(node, value)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            target = node.target
            if isinstance(target, cst.Name) and target.value == name and predicate(node.value):
                found.append(node.value)

    scope.visit(Bindings())
    return found[0] if found and not state["rebound"] else None


def _calls(tree: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    tree.visit(Calls())
    return found


def _bare_names(node: cst.ClassDef, name: str) -> list[cst.CSTNode]:
    """The statements of a class body that use ``name`` as a bare name, not as the name a def
    binds, nor an attribute's (``self.name``), nor a keyword's."""
    found: list[cst.CSTNode] = []

    class Names(cst.CSTVisitor):
        def __init__(self, statement: cst.CSTNode) -> None:
            self.statement = statement

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            # its own name is no use, and its body does not see the class's names (a bare
            # ``tree_flatten`` there is a module-level one, jax's): decorators and defaults do
            for part in (*node.decorators, node.params):
                part.visit(self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and not found:
                found.append(self.statement)

    for statement in suite_statements(node.body):
        statement.visit(Names(statement))
    return found


def _attributes(tree: cst.Module, name: str) -> list[cst.Attribute]:
    """Every ``<expression>.name`` in a module."""
    found: list[cst.Attribute] = []

    class Attributes(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == name:
                found.append(node)

    tree.visit(Attributes())
    return found


def _loading_imports(
    info: ClassInfo,
    registration: Registration,
    methods: Sequence[str],
    functions: Sequence[tuple[Module, cst.CSTNode]],
) -> dict[str, str]:
    """The imports of JAX the deleted code alone used that the rewrite keeps all the same:
    they load a submodule (``import jax.experimental.checkify``) other modules may use."""
    kept: dict[str, str] = {}
    for module in dict.fromkeys([info.module, registration.module]):
        tree = module.tree
        if tree is None:
            continue
        removed = [registration.node, *(n for m, n in functions if m is module)]
        if module is info.module:
            removed += [info.methods()[name] for name in methods if name in info.methods()]
        # the module's leading comments (a license) do not keep an import (``_rewrite._apply``)
        text = module.source[len("".join(tree.code_for_node(line) for line in tree.header)) :]
        for node in removed:
            text = text.replace(tree.code_for_node(node), "")
        for bound, written, loaded in loading_imports(tree):
            qualified = module.names.get(bound, "")
            if (qualified == "jax" or qualified.startswith("jax.")) and unused_names(text, {bound}):
                kept[written] = (
                    f"it loads {loaded}, which other modules may use; delete it by hand if "
                    f"none does"
                )
    return kept
