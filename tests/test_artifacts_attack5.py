"""The fifth attacker pass (attack5): an honest party exports a model of ``attack5_fixtures``, an
attacker may edit its static data, and a victim in a fresh process loads each artifact. The pure
rules are checked in process.

One attacker process writes every artifact and one victim process reads them all (``_said``): a
JAX import per case would cost more than the cases.
"""

from __future__ import annotations

import functools
import json

import attack5_fixtures as af
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, TESTS, run_fresh

import pytreekit
from pytreekit import Static
from pytreekit._artifacts import static_data
from pytreekit._artifacts.static_data import MAGIC, StaticDataError, UnencodableError, dumps, loads

M = "attack5_fixtures"
# jnp.tanh as static data names it (JAX 0.4.35 names it jax.nn:tanh, later JAX jax.numpy:tanh)
_TANH = '"value":' + dumps(jnp.tanh)[len(MAGIC) :].decode()
_RATE = '"rate":0.5,"__pytreekit_fields__":["t",["t","rate"]'
# case -> (the class exported, the honest text, the attacker's: None leaves the artifact honest)
CASES = {
    "positional-out": ("Head", '["r","numpy:tanh"]', '["fp",["r","numpy:tanh"],["t",0.0],{}]'),
    "positional-out-max": (
        "Head",
        '["r","numpy:tanh"]',
        '["fp",["r","numpy:max"],["t",["t",["t",7.0,7.0]],0],{}]',
    ),
    "class-default": ("Layer", "", None),
    "class-default-nested": ("Holder", "", None),
    "nested-method": ("Holder", _RATE, _RATE.replace("rate", "scaled")),
    "nested-callable-default": ("Holder", _RATE, _RATE.replace("rate", "shift")),
    "generic-honest": ("Generics", "", None),
    "generic-callable": ("Generics", _TANH, f'"value":["x","{M}:Warmup",1]'),
    "generic-argument": ("Generics", '"item":2', '"item":"2"'),
}

ATTACKER = """
import json, sys
import jax, jax.numpy as jnp
import attack5_fixtures as af
import pytreekit._artifacts.export as export_module

export = lambda value: jax.export.export(jax.jit(lambda m: m))(value).serialize()
for case, (cls_name, old, new) in json.loads(sys.argv[2]).items():
    cls = getattr(af, cls_name)
    model = af.example(cls)
    jax.tree.flatten(model)  # first use: registered for writing
    name, honest = export_module._BY_TYPE[cls]
    def edited(aux, old=old, new=new):
        data = honest(aux)
        assert old.encode() in data, (old, data)
        return data if new is None else data.replace(old.encode(), new.encode())
    export_module._BY_TYPE[cls] = (name, edited)
    try:
        data = export(model)
    except Exception as error:
        data = f"not written: {type(error).__name__}: {error}".encode()
    export_module._BY_TYPE[cls] = (name, honest)
    open(f"{sys.argv[1]}/{case}.bin", "wb").write(data)
"""

VICTIM = """
import json, sys
import jax, jax.numpy as jnp
import attack5_fixtures as af

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
        leaves = [jnp.ones(2)] * exported.in_tree.num_leaves
        model = jax.tree.unflatten(exported.in_tree, leaves)[0][0]
        said[case] = f"loaded {model!r:.300}: {af.use(model)}"
    except Exception as error:
        said[case] = f"loaded, then {type(error).__name__}: {error}"
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the victim says of each artifact."""
    folder = tmp_path_factory.mktemp("attack5")
    paths = [ROOT, TESTS]
    run_fresh(ATTACKER, folder, json.dumps(CASES), pythonpath=paths, timeout=300)
    out = run_fresh(VICTIM, folder, *CASES, pythonpath=paths, timeout=300)
    result: dict[str, str] = json.loads(out)
    return result


# -- #1: a partial's positional arguments land on NumPy's positional out -------------------------


@pytest.mark.parametrize("case", ["positional-out", "positional-out-max"])
def test_a_partial_of_a_numpy_function_with_positional_arguments_is_refused_at_load(said, case):
    """``partial(np.tanh, 0.0)(x)`` is ``np.tanh(0.0, x)``: NumPy writes into the caller's ``x``."""
    assert said[case].startswith("refused StaticDataError"), said[case]
    assert "with positional arguments" in said[case] and "pass them by keyword" in said[case]
    assert "Head" in said[case]


@pytest.mark.parametrize(
    "value",
    [
        functools.partial(np.tanh, 0.0),
        functools.partial(np.add, 1.0, 2.0),
        functools.partial(np.max, ((7.0,),), 0),
        functools.partial(np.round, 1.5, 0),
        functools.partial(functools.partial(np.clip, 0.0), a_max=1.0),
    ],
)
def test_positional_arguments_to_numpy_are_refused_at_write_load_and_audit(value):
    with pytest.raises(UnencodableError, match=r"NumPy's .* with positional arguments"):
        dumps(value)
    func, args, keywords = static_data._innermost(value, (), {})
    text = dumps(functools.partial(func, **keywords))
    edited = text.replace(b'["t"]', json.dumps(["t", *(0.0 for _ in args)]).encode(), 1)
    with pytest.raises(StaticDataError, match="with positional arguments"):
        loads(edited)
    assert [r.status for r in pytreekit.artifact_references(edited)] == ["refused"]
    pytreekit.add_safe_references([func])
    try:
        assert [r.status for r in pytreekit.artifact_references(edited)] == ["safe"]
        assert type(loads(edited)) is static_data.LoadedPartial
    finally:
        static_data._added.pop(id(func))


def test_numpy_keywords_and_other_libraries_positional_arguments_still_load():
    for value in (
        functools.partial(np.max, axis=0),
        functools.partial(np.round, decimals=2),
        functools.partial(jnp.add, 1.0),
        functools.partial(pow, 2),
    ):
        data = dumps(value)
        assert loads(data) == value
        assert {r.status for r in pytreekit.artifact_references(data)} == {"safe"}
    features = np.ones(2)
    loads(dumps(functools.partial(np.max, axis=0)))(features)
    assert features.tolist() == [1.0, 1.0]


def test_an_audit_of_a_name_used_twice_reports_what_loading_refuses():
    text = MAGIC + b'["t",["r","numpy:tanh"],["fp",["r","numpy:tanh"],["t",0.0],{}]]'
    assert [r.status for r in pytreekit.artifact_references(text)] == ["refused"]
    with pytest.raises(StaticDataError, match="with positional arguments"):
        loads(text)


def test_the_audit_of_an_edited_partial_reads_any_keywords_form():
    for keywords in (b'["d",["l"],1,"out",null]', b'["d"]', b"3", b'{"out":null}'):
        text = MAGIC + b'["fp",["r","numpy:tanh"],["t"],' + keywords + b"]"
        statuses = [r.status for r in pytreekit.artifact_references(text)]
        assert statuses == ["refused" if b'"out"' in keywords else "safe"], keywords


# -- #3: a class default an instance overrides -----------------------------------------------------


@pytest.mark.parametrize("case", ["class-default", "class-default-nested"])
def test_a_class_default_an_instance_overrides_loads_in_a_fresh_process(said, case):
    """``scale = 1.0`` on the class, ``self.scale = 3.0`` on the instance: the honest artifact was
    refused ("no instance of the class can hold scale") unless the victim had built one first."""
    assert said[case].startswith("loaded"), said[case]
    expected = "output: 1.0" if case == "class-default-nested" else "'scale'"
    assert expected in said[case], said[case]


@pytest.mark.parametrize("case", ["nested-method", "nested-callable-default"])
def test_a_name_the_class_binds_to_a_method_or_callable_is_still_refused(said, case):
    assert said[case].startswith("refused StaticDataError"), said[case]
    name = "scaled" if case == "nested-method" else "shift"
    assert f"'{name}' of Conf, which the class holds already as a" in said[case], said[case]
    assert "a stored value would hide it" in said[case]


def test_only_a_plain_class_default_is_overridable():
    af.Layer(jnp.ones((2, 2)))
    assert static_data._hides(af.Layer, "scale") is None
    assert "a stored value would hide it" in (static_data._hides(af.Layer, "predict") or "")
    assert "a stored value would hide it" in (static_data._hides(af.Layer, "shift") or "")


# -- #2: a generic alias's arguments apply to the instance it declares -----------------------------


def test_a_generic_aliass_honest_model_loads(said):
    assert said["generic-honest"].startswith("loaded Generics("), said["generic-honest"]
    assert "output: [[1.52" in said["generic-honest"], said["generic-honest"]


def test_a_callable_codec_value_is_refused_in_a_static_declared_to_hold_a_callable(said):
    """``act: Static[Callable[...]]``: ``Static.value`` (``T``) holds a ``Callable``, never a
    callable codec value the model would then call."""
    refusal = said["generic-callable"]
    assert refusal.startswith("refused StaticDataError"), refusal
    assert "Static.value is declared Callable[[Any], Any]" in refusal, refusal
    assert "Warmup" in refusal and "Warmup.__call__" not in refusal


def test_a_value_of_another_type_is_refused_in_a_generic_aliass_argument(said):
    refusal = said["generic-argument"]
    assert refusal.startswith("refused StaticDataError"), refusal
    assert "Box.item is declared int, and the artifact holds a str there" in refusal, refusal


@pytest.mark.parametrize(
    ("declared", "item", "loads_"),
    [
        ("Box[int]", "1", True),
        ("Box[int]", '"s"', False),
        ("Box[int] | None", '"s"', False),
        ("tuple[Box[int], Box[str]]", '"s"', True),  # several arguments: their union
        ("tuple[Box[int], Box[str]]", "1.5", False),
        ("Box[Box[int]]", '["dc","attack5_fixtures:Box",{"item":"s"}]', False),
        ("Box", '"s"', True),  # no argument: T holds what static data stores
    ],
)
def test_the_arguments_of_a_generic_alias_are_substituted_where_read(declared, item, loads_):
    hint = eval(declared, {"Box": af.Box})
    reader = static_data.Reader(frozenset(), hint, (af.Box,))
    node = json.loads(f'["dc","attack5_fixtures:Box",{{"item":{item}}}]')
    if loads_:
        assert type(static_data.decode(node, reader)) is af.Box
    else:
        with pytest.raises(StaticDataError, match=r"Box\.item is declared"):
            static_data.decode(node, reader)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (Static(af.Warmup(1)), r"Static\.value is declared Callable\[\[Any\], Any\]"),
        (af.Box("s"), r"Box\.item is declared int, and loading refuses"),
    ],
)
def test_the_writer_refuses_what_a_generic_aliass_arguments_refuse(value, reason):
    name = "act" if type(value) is Static else "box"
    with pytest.raises(UnencodableError, match=reason):
        static_data.dumps_fields(af.Generics, (), (name,), (value,))
    honest = af.Generics(jnp.ones(2))
    static_data.dumps_fields(af.Generics, (), ("act", "box"), (honest.act, honest.box))
