"""Differential test: annotated pytree classes against ``dataclasses.dataclass``.

Hypothesis writes class hierarchies (fields with and without defaults and factories, ``kw_only``
at class and field level, ``KW_ONLY``, ``init=False``, ``InitVar``, ``ClassVar``, single and
multiple inheritance, ``frozen``, ``eq``, own ``__eq__``/``__hash__``), and each is built twice
from the same source: once with ``@dataclasses.dataclass(...)``, once with
``@pytree_class(...)``. Both must agree on everything dataclasses defines; the pytree side must
also round-trip through JAX without calling ``__init__``.
"""

from __future__ import annotations

import dataclasses
import inspect
import operator
import sys
import types
import typing
from typing import Any
from unittest import mock

import jax
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytreekit

NAMES = ("a", "b", "c", "d")


@st.composite
def field_specs(draw: st.DrawFn) -> str:
    """One line of a class body."""
    name = draw(st.sampled_from(NAMES))
    kind = draw(st.sampled_from(["plain", "plain", "plain", "classvar", "initvar", "kwonly"]))
    if kind == "kwonly":
        return "_: dataclasses.KW_ONLY"
    if kind == "classvar":
        return f"{name}: typing.ClassVar[int] = 7"
    annotation = "dataclasses.InitVar[int]" if kind == "initvar" else "int"
    default = draw(st.sampled_from(["", " = 1", " = 2", " = FIELD", " = MUTABLE", " = FACTORY"]))
    if default == " = FIELD":
        options = {
            "default": draw(st.sampled_from(["", "default=3", "default_factory=list"])),
            "init": draw(st.sampled_from(["", "init=False"])),
            "kw_only": draw(st.sampled_from(["", "kw_only=True", "kw_only=False"])),
            "compare": draw(st.sampled_from(["", "compare=False"])),
            "hash": draw(st.sampled_from(["", "hash=True", "hash=False"])),
            "repr": draw(st.sampled_from(["", "repr=False"])),
        }
        default = f" = FIELD({', '.join(o for o in options.values() if o)})"
    elif default == " = MUTABLE":
        default = " = []"
    elif default == " = FACTORY":
        default = " = FIELD(default_factory=lambda: [1])"
    return f"{name}: {annotation}{default}"


@st.composite
def class_options(draw: st.DrawFn, frozen: bool) -> dict[str, bool]:
    return {
        "frozen": frozen,
        "eq": draw(st.booleans()),
        "kw_only": draw(st.sampled_from([False, False, True])),
    }


@st.composite
def hierarchies(draw: st.DrawFn) -> list[tuple[str, tuple[str, ...], dict[str, bool], list[str]]]:
    """Classes (name, bases, options, body lines), bases first; the last one is tested."""
    frozen = draw(st.booleans())  # one for the whole hierarchy (see the mixed-frozen test)
    shape = draw(st.sampled_from(["single", "chain", "two bases"]))
    bases = {"single": [()], "chain": [(), ("C0",)], "two bases": [(), (), ("C0", "C1")]}[shape]
    classes = []
    for index, class_bases in enumerate(bases):
        body = draw(st.lists(field_specs(), max_size=4))
        extra = draw(st.sampled_from(["", "", "eq", "hash", "eq and hash", "post_init"]))
        if "eq" in extra:
            body.append("def __eq__(self, other): return type(other) is type(self)")
        if "hash" in extra:
            body.append("def __hash__(self): return 11")
        if extra == "post_init":
            body.append("def __post_init__(self, *init_vars): RECORD.append(init_vars)")
        classes.append((f"C{index}", class_bases, draw(class_options(frozen)), body))
    return classes


def render(classes: list[Any], decorator: str) -> str:
    lines = []
    for name, bases, options, body in classes:
        arguments = ", ".join(f"{k}={v}" for k, v in options.items())
        lines.append(f"@{decorator}({arguments})")
        lines.append(f"class {name}({', '.join(bases)}):")
        lines.extend(f"    {line}" for line in body or ["pass"])
    return "\n".join(lines) + "\n"


def build(
    classes: list[Any], decorator: str, field_function: Any, future: bool = False
) -> tuple[Any, Any]:
    """(the tested class or the exception its definition raised, the module's namespace).

    The classes live in a module of their own (dataclasses resolves string annotations such as
    ``dataclasses.KW_ONLY`` through it); ``future`` adds ``from __future__ import annotations``.
    """
    module = types.ModuleType(f"generated_{decorator.replace('.', '_')}")
    module.__dict__.update(
        dataclasses=dataclasses,
        typing=typing,
        pytree_class=pytreekit.pytree_class,
        FIELD=field_function,
        RECORD=[],
    )
    source = ("from __future__ import annotations\n" if future else "") + render(classes, decorator)
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, module.__name__, "exec", dont_inherit=True), module.__dict__)
    except Exception as error:
        return error, module.__dict__
    finally:
        del sys.modules[module.__name__]
    return module.__dict__[classes[-1][0]], module.__dict__


def outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as error:
        return "raised", type(error)


def replaced_values(obj: Any, changes: dict[str, Any]) -> dict[str, Any]:
    return values(dataclasses.replace(obj, **changes))


def field_summary(cls: type) -> list[tuple[Any, ...]]:
    return [
        (f.name, f.default, f.init, f.repr, f.compare, f.hash, f.kw_only, f.type)
        for f in dataclasses.fields(cls)
    ]


def values(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name, "<unset>") for f in dataclasses.fields(obj)}


def argument_sets(signature: inspect.Signature) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Calls to try: everything by keyword, everything positional, and the required ones only."""
    params = list(signature.parameters.values())
    by_keyword = {p.name: 100 + i for i, p in enumerate(params)}
    positional = tuple(100 + i for i, _ in enumerate(params))
    required = {p.name: 200 + i for i, p in enumerate(params) if p.default is p.empty}
    return [((), by_keyword), (positional, {}), ((), required), ((1,) * (len(params) + 1), {})]


def assert_agree(reference: type, ours: type, ref_ns: Any, our_ns: Any) -> None:
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert field_summary(ours) == field_summary(reference)
    assert getattr(ours, "__match_args__", None) == getattr(reference, "__match_args__", None)
    assert (ours.__hash__ is None) == (reference.__hash__ is None)
    assert ours.__dataclass_params__.frozen == reference.__dataclass_params__.frozen
    assert pytreekit.fields(ours) == dataclasses.fields(ours)

    for args, kwargs in argument_sets(inspect.signature(reference)):
        expected = outcome(reference, *args, **kwargs)
        got = outcome(ours, *args, **kwargs)
        assert got[0] == expected[0], (args, kwargs, expected, got)
        if expected[0] == "raised":
            assert got[1] is expected[1]
            continue
        ref_obj, our_obj = expected[1], got[1]
        assert values(our_obj) == values(ref_obj)
        assert our_ns["RECORD"] == ref_ns["RECORD"]
        # Where dataclasses' repr fails (an unset init=False field) pytreekit's shows <unset>.
        ref_repr = outcome(repr, ref_obj)
        assert ref_repr[0] == "raised" or outcome(repr, our_obj) == ref_repr
        twin, ref_twin = ours(*args, **kwargs), reference(*args, **kwargs)
        assert outcome(operator.eq, our_obj, twin) == outcome(operator.eq, ref_obj, ref_twin)
        our_hash, ref_hash = outcome(hash, our_obj), outcome(hash, ref_obj)
        by_identity = reference.__hash__ is object.__hash__
        assert our_hash[0] == ref_hash[0] and (by_identity or our_hash == ref_hash)
        names = [f.name for f in dataclasses.fields(ours)]
        if names:
            # pytreekit's FrozenInstanceError is a subclass of dataclasses' (a clearer message).
            our_set, ref_set = (
                outcome(setattr, our_obj, names[0], 5),
                outcome(setattr, ref_obj, names[0], 5),
            )
            assert our_set[0] == ref_set[0] and (
                our_set == ref_set or issubclass(our_set[1], ref_set[1])
            )
        if ours.__dataclass_params__.frozen and names:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(our_obj, names[0], 6)
        changes = {f.name: 50 for f in dataclasses.fields(ours) if f.init}
        replaced = outcome(replaced_values, our_obj, changes)
        assert replaced == outcome(replaced_values, ref_obj, changes)
        check_pytree_side(ours, our_obj)


def check_pytree_side(cls: type, obj: Any) -> None:
    if any(not hasattr(obj, f.name) for f in dataclasses.fields(cls)):
        return  # an init=False field without default: not flattenable, as documented
    leaves, treedef = jax.tree_util.tree_flatten(obj)
    with mock.patch.object(cls, "__init__", side_effect=AssertionError("__init__ on rebuild")):
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert values(rebuilt) == values(obj)
    paths = [jax.tree_util.keystr(path[:1]) for path, _ in jax.tree_util.tree_leaves_with_path(obj)]
    fields_in_order = [f".{f.name}" for f in dataclasses.fields(cls) if not f.static]
    assert [p for p in fields_in_order if p in paths] == list(dict.fromkeys(paths))


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(hierarchies(), st.booleans())
def test_pytree_classes_agree_with_dataclasses(classes: list[Any], future: bool) -> None:
    reference, ref_ns = build(classes, "dataclasses.dataclass", dataclasses.field, future)
    ours, our_ns = build(classes, "pytree_class", pytreekit.field, future)
    if isinstance(reference, Exception):
        assert isinstance(ours, Exception), f"dataclasses raised {reference!r}, pytreekit did not"
        assert type(ours) is type(reference), (reference, ours)
        return
    assert not isinstance(ours, Exception), f"pytreekit raised {ours!r}, dataclasses did not"
    assert_agree(reference, ours, ref_ns, our_ns)


@given(hierarchies())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_dataclasses_field_specifiers_work_in_pytree_classes(classes: list[Any]) -> None:
    # The same classes written with dataclasses.field as the specifier.
    reference, ref_ns = build(classes, "dataclasses.dataclass", dataclasses.field)
    ours, our_ns = build(classes, "pytree_class", dataclasses.field)
    if isinstance(reference, Exception):
        assert type(ours) is type(reference)
        return
    assert not isinstance(ours, Exception), ours
    assert_agree(reference, ours, ref_ns, our_ns)
