"""The fourth attacker pass (attack4): an honest party exports ``attack4_fixtures.Model``, an
attacker edits its static data, and a victim in a fresh process loads each edited artifact. Each
edit is refused at load naming what is wrong; the pure decoding rules are checked in process.

One attacker process writes every edited artifact and one victim process reads them all
(``_loads``): a JAX import per case would cost more than the cases.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import attack4_fixtures as af
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, TESTS, require, run_fresh

import pytreekit
from pytreekit._artifacts import static_data
from pytreekit._artifacts.static_data import (
    MAGIC,
    StaticDataError,
    UnencodableError,
    declared_types,
    dumps,
    loads,
)

M = "attack4_fixtures"
# jnp.tanh as static data names it (JAX 0.4.35 names it jax.nn:tanh, later JAX jax.numpy:tanh)
TANH = dumps(jnp.tanh)[len(MAGIC) :].decode()
# case -> (the honest text, the attacker's): each edits one static field of Model's aux data.
EDITS = {
    "nested-partial": (
        '["r","numpy:nan_to_num"]',
        '["fp",["fp",["r","numpy:nan_to_num"],["t"],{}],["t"],{"copy":false}]',
    ),
    "codec-as-callable": (TANH, f'["x","{M}:Warmup",1]'),
    "codec-in-partial": (TANH, f'["fp",["x","{M}:Warmup",1],["t"],{{}}]'),
    "ufunc-where": ('["r","numpy:tanh"]', '["fp",["r","numpy:tanh"],["t"],{"where":false}]'),
    "codec-bypass": (
        f'["x","{M}:Clip",["t",-1.0,1.0]]',
        f'["dc","{M}:Clip",{{"low":5.0,"high":-5.0}}]',
    ),
    "derived-field": (',"peak":1.0', ""),
    "codec-unhashable": (
        f'["x","{M}:Interval",["t",-1.0,1.0]]',
        f'["x","{M}:Interval",["t",-1.0,["l",1.0]]]',
    ),
}

ATTACKER = """
import json, sys
import jax, jax.numpy as jnp
import attack4_fixtures as af
import pytreekit._artifacts.export as export_module

edits = json.loads(sys.argv[2])
export = lambda value: jax.export.export(jax.jit(lambda m: m))(value).serialize()
model = af.Model(jnp.ones(2))
jax.tree.flatten(model)  # first use: registered for writing
name, honest = export_module._BY_TYPE[af.Model]
for case, (old, new) in edits.items():
    def edited(aux, old=old, new=new):
        data = honest(aux)
        assert old.encode() in data, (old, data)
        return data.replace(old.encode(), new.encode())
    export_module._BY_TYPE[af.Model] = (name, edited)
    open(f"{sys.argv[1]}/{case}.bin", "wb").write(export(model))
export_module._BY_TYPE[af.Model] = (name, honest)
try:
    data = export(af.Boxed(jnp.ones(2)))
except Exception as error:  # kept apart: the other cases stand without it
    data = f"not written: {type(error).__name__}: {error}".encode()
open(f"{sys.argv[1]}/honest-box.bin", "wb").write(data)
"""

VICTIM = """
import json, sys
import jax, jax.numpy as jnp
import attack4_fixtures as af

said = {}
for case in sys.argv[2:]:
    data = open(f"{sys.argv[1]}/{case}.bin", "rb").read()
    if data.startswith(b"not written"):
        said[case] = data.decode()
        continue
    try:
        exported = jax.export.deserialize(data)
    except ValueError as error:
        said[case] = f"refused {type(error).__name__}: {error}"
        continue
    try:
        model = jax.tree.unflatten(exported.in_tree, [jnp.ones(2)])[0][0]
        if type(model) is af.Boxed:
            hash(model.box)
            exported.call(af.Boxed(jnp.ones(2)))  # the treedef equals the caller's
        else:
            hash((model.act, model.post, model.clean, model.schedule, model.clip, model.bounds))
            hash(model.plan)
            model(jnp.ones(2))
        said[case] = f"loaded {model!r:.300} calls={af.CALLS}"
    except Exception as error:
        said[case] = f"loaded, then {type(error).__name__}: {error}"
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the victim says of each edited artifact (and of the honest ``Boxed`` one)."""
    folder = tmp_path_factory.mktemp("attack4")
    paths = [ROOT, TESTS]
    run_fresh(ATTACKER, folder, json.dumps(EDITS), pythonpath=paths, timeout=300)
    out = run_fresh(VICTIM, folder, *EDITS, "honest-box", pythonpath=paths, timeout=300)
    result: dict[str, str] = json.loads(out)
    return result


def test_a_nested_partial_is_refused_at_load(said):
    """#1: ``partial(partial(np.nan_to_num), copy=False)`` written nested got past the refusal
    of ``copy=`` (asked of the outer function, a partial); the writer flattens partials."""
    assert said["nested-partial"].startswith("refused StaticDataError"), said
    assert "a functools.partial of a functools.partial" in said["nested-partial"]
    assert "Model" in said["nested-partial"]


@pytest.mark.parametrize("case", ["codec-as-callable", "codec-in-partial"])
def test_a_codec_value_is_refused_where_a_callable_is_declared_also_inside_a_partial(said, case):
    """#2: a callable codec value (``Warmup``) in a ``Callable`` field, directly or as a
    partial's function, is never what the model calls."""
    assert said[case].startswith("refused StaticDataError"), said[case]
    expected = "declared Callable" if case == "codec-as-callable" else "takes a callable stored"
    assert expected in said[case] and "Warmup" in said[case], said[case]


def test_where_on_a_default_list_function_is_refused(said):
    """#3: ``partial(np.tanh, where=False)`` returns uninitialized memory."""
    assert said["ufunc-where"].startswith("refused StaticDataError"), said
    assert "with where= may return uninitialized memory" in said["ufunc-where"]


def test_a_class_with_a_codec_does_not_load_in_another_form(said):
    """#4: ``["dc", Clip, ...]`` would skip the codec's decoder and the check it makes."""
    assert said["codec-bypass"].startswith("refused StaticDataError"), said
    assert "Clip has a registered codec" in said["codec-bypass"]
    assert "'dc' form" in said["codec-bypass"]


def test_a_derived_dataclass_field_left_out_is_refused(said):
    """#5: ``peak`` (``init=False``, set in ``__post_init__``) dropped from the data."""
    assert said["derived-field"].startswith("refused StaticDataError"), said
    assert "Schedule has the field 'peak', which the data does not give" in said["derived-field"]


def test_an_unhashable_codec_value_is_refused_naming_the_codec_and_field(said):
    """#7: the docs' ``Interval`` decoder handed a list builds an unhashable value."""
    refusal = said["codec-unhashable"]
    assert refusal.startswith("refused StaticDataError"), said
    assert "the static field bounds" in refusal and "registered for Interval" in refusal
    assert "not hashable" in refusal


def test_a_field_declared_as_a_generic_alias_of_a_users_class_declares_it(said):
    """#9: ``box: Box[int]`` declares ``Box``: an honest model exports and loads."""
    assert said["honest-box"].startswith("loaded Boxed("), said
    hint, admitted = declared_types(af.Boxed)["box"]
    assert af.Box in admitted and hint == af.Box[int]


# -- in process: pure decoding rules ---------------------------------------------------------------


def test_the_refusal_of_a_mutating_keyword_asks_the_innermost_function():
    nested = MAGIC + b'["fp",["fp",["r","numpy:median"],["t"],{}],["t"],{"overwrite_input":true}]'
    with pytest.raises(StaticDataError, match=r"functools\.partial of a functools\.partial"):
        loads(nested)
    # a partial made of a partial is one (functools flattens it): refused as one
    with pytest.raises(UnencodableError, match="with overwrite_input= may write into"):
        dumps(functools.partial(functools.partial(np.median), overwrite_input=True))
    assert static_data._mutating(functools.partial(np.median), (), {"overwrite_input": True})


@pytest.mark.parametrize("func", [np.tanh, np.add, jnp.mean])
def test_where_is_refused_at_write_and_load_unless_the_function_is_added(func):
    value = functools.partial(func, where=False)
    with pytest.raises(UnencodableError, match="with where= may return uninitialized memory"):
        dumps(value)
    edited = dumps(functools.partial(func)).replace(b",{}]", b',{"where":false}]')
    with pytest.raises(StaticDataError, match="with where= may return uninitialized memory"):
        loads(edited)
    pytreekit.add_safe_references([func])
    try:
        assert loads(dumps(value)) == value
    finally:
        static_data._added.pop(id(func))


def test_a_callable_field_refuses_a_codec_value_at_write_naming_what_to_declare():
    exporting = jax.export.export(jax.jit(lambda m: m))(af.Model(jnp.ones(2), act=af.Warmup(3)))
    with pytest.raises(
        TypeError, match=r"Model.act holds a \S*Warmup.*declare the field Warmup \|"
    ):
        exporting.serialize()
    # a codec's value is not a partial's function either, in any field
    with pytest.raises(UnencodableError, match="stored by name only"):
        dumps(functools.partial(af.Warmup(3)))
    # an undeclared field still holds a codec's value as data (documented)
    assert loads(dumps((af.Warmup(3),))) == (af.Warmup(3),)


@pytest.mark.parametrize(
    ("tree", "form"),
    [
        (["n", f"{M}:Pair", 5.0, -5.0], "'n'"),
        (["e", f"{M}:Level", "LOW"], "'e'"),
        (["dc", f"{M}:Clip", {"low": 5.0, "high": -5.0}], "'dc'"),
    ],
)
def test_a_class_with_a_codec_loads_only_through_it(tree, form):
    data = MAGIC + json.dumps(tree).encode()
    refused = pytest.raises(StaticDataError, match=f"has a registered codec.* in the {form} form")
    with pytreekit.safe_references([af.Pair, af.Level, af.Clip]), refused:
        loads(data)


def test_nested_frozensets_are_checked_once_per_value(monkeypatch):
    """#6: each level re-walked the levels below it to decide whether its element may be
    hashed: bytes x depth. Counted, not timed: each value is visited once."""
    visits = [0]
    checked = static_data._hash_safe

    def counting(value, known=None):
        visits[0] += 1
        return checked(value, known)

    monkeypatch.setattr(static_data, "_hash_safe", counting)
    ints, depth = 2_000, 45
    for wrap in (lambda tree: ["s", tree], lambda tree: ["s", ["t", tree, 0]]):
        tree: list[object] = ["s", *range(ints)]
        for _ in range(depth):
            tree = wrap(tree)
        visits[0] = 0
        value = loads(MAGIC + json.dumps(tree).encode())
        assert isinstance(value, frozenset)
        assert visits[0] <= ints + 3 * depth  # 121,000 or more before


def test_a_torch_context_neither_static_data_nor_base64_is_refused_naming_the_class(tmp_path):
    """#8: a lone surrogate (``"\\ud800"`` in the JSON) escaped as a bare ``UnicodeEncodeError``."""
    require("torch")
    honest = run_fresh(
        """
        import jax.numpy as jnp, seam_fixtures as sf
        import torch.utils._pytree as torch_pytree
        print(torch_pytree.treespec_dumps(torch_pytree.tree_structure(sf.Pair(1.0))))
        """,
        pythonpath=[ROOT, TESTS],
    )
    tree = json.loads(honest)
    assert tree[1]["context"].startswith("PTK1")
    for index, context in enumerate(["\ud800", "PTK2 not base64 \u00e9"]):
        tree[1]["context"] = context
        (tmp_path / f"{index}.json").write_text(json.dumps(tree))
    said = run_fresh(
        """
        import sys
        import torch.utils._pytree as torch_pytree
        import seam_fixtures

        for path in sys.argv[1:]:
            try:
                torch_pytree.treespec_loads(open(path).read())
                print("loaded")
            except Exception as error:
                print(type(error).__name__, error)
        """,
        tmp_path / "0.json",
        tmp_path / "1.json",
        pythonpath=[ROOT, TESTS],
    ).splitlines()
    assert len(said) == 2
    for line in said:
        assert line.startswith("StaticDataError torch treespec_loads cannot read"), line
        assert "of Pair: its context is neither static data" in line, line


def test_checking_a_callable_runs_no_metaclass_code_of_the_value():
    """A value built from data is asked whether it is a safe reference by identity only."""
    af.CALLS.clear()
    assert not static_data.admits_value(Callable[[int], int], af.Odd())
    with pytest.raises(StaticDataError, match="'fp' takes a callable stored by name"):
        loads(MAGIC + f'["fp",["x","{M}:Odd",0],["t"],{{}}]'.encode())
    assert af.CALLS == []
