"""The sixth attacker pass, findings 1 and 2: ``torch.load(weights_only=True)`` inside
``torch.serialization.safe_globals([YourClass])`` rebuilds a pytree instance through its
``__setstate__``, which now checks the state as ``jax.export`` loading checks aux data (names,
static flags, declared types, references, hashability, the layout cap) before writing anything.

One attacker process writes every checkpoint (``_written``); each victim loads one in a fresh
process, as the docs advise. Plain pickle and copy are checked in process: unchanged.
"""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from conftest import require, run_fresh

torch = require("torch")

import attack6_state_fixtures as af  # noqa: E402

import pytreekit  # noqa: E402
from pytreekit._artifacts import export  # noqa: E402
from pytreekit._artifacts.static_data import MAX_LEARNED_LAYOUTS, StaticDataError  # noqa: E402

WRITER = """
import sys, torch
import attack6_state_fixtures as f

F = "__pytreekit_fields__"
W = torch.eye(2)
L3 = (("weight", "act", "scale"), (False, True, True))
P3 = ("weight", "act", "predict")
# case -> (class, how many instances, the state each pickles as: None for the honest one)
CASES = {
    "self-act": (f.Linear, 1, lambda s, i: {"weight": W, "act": s, "scale": 1.0, F: L3}),
    "class-act": (f.Linear, 1, lambda s, i: {"weight": W, "act": f.Linear, "scale": 1.0, F: L3}),
    "str-scale": (f.Linear, 1, lambda s, i: {"weight": W, "act": f.gelu, "scale": "abc", F: L3}),
    "missing-static": (
        f.Linear, 1, lambda s, i: {"weight": W, "scale": 1.0, F: (L3[0][::2], (False, True))}
    ),
    "flipped-flags": (
        f.Linear,
        1,
        lambda s, i: {"weight": W, "act": f.gelu, "scale": 1.0, F: (L3[0], (True, False, True))},
    ),
    "hides-method": (
        f.Plain,
        1,
        lambda s, i: {"weight": W, "act": f.gelu, "predict": f.gelu, F: (P3, (False, True, False))},
    ),
    "hides-method-static": (
        f.Plain,
        1,
        lambda s, i: {"weight": W, "act": f.gelu, "predict": f.gelu, F: (P3, (False, True, True))},
    ),
    "flood": (
        f.Plain,
        300,
        lambda s, i: {
            "weight": W, "act": f.gelu, f"f{i}": 0, F: ((*P3[:2], f"f{i}"), (False, True, False))
        },
    ),
    "honest-linear": (f.Linear, 1, None),
    "honest-plain": (f.Plain, 1, None),
}


def honest(case):
    return f.Linear(2 * W, scale=0.5) if case == "honest-linear" else f.Plain(2 * W)


for case, (cls, count, state) in CASES.items():
    original = cls.__getstate__
    if state is not None:
        cls.__getstate__ = lambda self, it=iter(range(count)), state=state: state(self, next(it))
    try:
        models = [honest(case) if state is None else cls(W) for _ in range(count)]
        torch.save({"models": models}, f"{sys.argv[1]}/{case}.pt")
    finally:
        cls.__getstate__ = original
"""

VICTIM = """
import contextlib, json, sys, torch
import torch.utils._pytree as tp
import attack6_state_fixtures as f
import pytreekit
from pytreekit import _markers as markers

folder, case, allow = sys.argv[1], sys.argv[2], sys.argv[3] == "allow"
W = torch.eye(2)
own = f.Linear(W), f.Plain(W)  # the victim's own models: each class has its layout
classes = f.Linear, f.Plain


def state():
    return {
        c.__name__: [
            sorted(map(repr, getattr(c, markers.SPEC).table._by_names)),
            len(getattr(c, markers.SPEC).table._by_names),
        ]
        for c in classes
    }


before = state()
allowing = pytreekit.safe_references([f.gelu]) if allow else contextlib.nullcontext()
out = {}
try:
    with torch.serialization.safe_globals([f.Linear, f.Plain, f.gelu]), allowing:
        models = torch.load(f"{folder}/{case}.pt", weights_only=True)["models"]
except Exception as error:
    out["refused"] = [type(error).__name__, isinstance(error, ValueError), str(error)]
else:
    m = models[0]
    out["loaded"] = {k: type(v).__name__ for k, v in vars(m).items()}
    out["count"] = len(models)
    if case.startswith("honest"):
        expected = f.Linear(2 * W, scale=0.5) if case == "honest-linear" else f.Plain(2 * W)
        (got, got_spec), (want, want_spec) = tp.tree_flatten(m), tp.tree_flatten(expected)
        out["same"] = got_spec == want_spec and all(map(torch.equal, got, want))
        out["call"] = torch.equal(m(torch.ones(1, 2)), expected(torch.ones(1, 2)))
out["state"] = [before, state()]
out["learned"] = out["state"][1]["Plain"][1] - before["Plain"][1]  # layouts Plain learnt
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack6")
    run_fresh(WRITER, folder)
    return folder


def _victim(folder, case, allow=True):
    """What loading ``case`` gave a victim who allowed the model's function (``allow``) with
    ``pytreekit.safe_references``, as for jax.export."""
    return json.loads(run_fresh(VICTIM, folder, case, "allow" if allow else "no").splitlines()[-1])


def _refused(out, *needles, unchanged=True):
    assert "refused" in out, f"loaded: {out}"
    kind, is_value_error, message = out["refused"]
    assert (kind, is_value_error) == ("StaticDataError", True), out["refused"]
    assert "torch.load(weights_only=True) cannot restore a attack6_state_fixtures." in message
    for needle in needles:
        assert needle in message, (needle, message)
    before, after = out["state"]
    assert before == after or not unchanged, "a refused load changed what the classes learnt"
    return message


# What each checkpoint makes its state hold, and what the refusal must name.
ATTACKS = {
    # the model itself where it calls its activation (RecursionError at the first call)
    "self-act": ("static field act", "declared Callable", "holds a attack6_state_fixtures.Linear"),
    # a class the victim allowed for torch (to build the model), as the activation
    "class-act": ("static field act", "'attack6_state_fixtures:Linear'", "add_safe_references"),
    "str-scale": ("static field scale", "declared float", "holds a str"),
    # the class default would answer, bound as a method of the instance
    "missing-static": ("leaves out the field 'act'", "save it again"),
    "flipped-flags": ("marks the fields ('weight', 'scale') static", "declares ('act', 'scale')"),
    "hides-method": ("names the field 'predict'", "method or other attribute", "hide"),
    "hides-method-static": ("('act', 'predict') static", "declares ('act',) static"),
}


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_a_checkpoint_state_the_class_would_not_write_is_refused(written, case):
    _refused(_victim(written, case), *ATTACKS[case])


def test_a_checkpoint_teaches_each_object_its_layout_the_cap_counting_each_alone(written):
    """Each object's state is one read: 300 objects of a layout each load (attack11: a quota
    the process shared, used up by one file, refused every later file naming a new layout)."""
    out = _victim(written, "flood")
    assert out.get("count") == 300, out
    layouts = out["state"][1]["Plain"][0]
    assert len(layouts) == 300 + 1  # and the victim's own
    assert out["learned"] == 300 > MAX_LEARNED_LAYOUTS


@pytest.mark.parametrize("case", ["honest-linear", "honest-plain"])
def test_an_honest_checkpoint_loads_equal(written, case):
    out = _victim(written, case)
    assert out.get("same") is True and out.get("call") is True, out
    assert out["learned"] == 0


@pytest.mark.parametrize("case", ["honest-linear", "honest-plain"])
def test_a_function_of_the_model_is_allowed_as_for_jax_export(written, case):
    """torch's ``safe_globals`` lets torch build the function; a static field holds it only if
    it is a safe reference, as in a jax.export artifact."""
    message = _refused(_victim(written, case, allow=False), "static field act", "safe_references([")
    assert "'attack6_state_fixtures:gelu'" in message


# -- plain pickle and copy: unchanged --------------------------------------------------------


def test_plain_pickle_and_copy_restore_any_state_unchecked():
    """Plain pickle runs code anyway, and a pickle written before may hold a static value its
    declaration does not admit: it loads as it did."""
    model = af.Linear(torch.eye(2))
    object.__setattr__(model, "scale", "abc")
    object.__setattr__(model, "act", af.gelu)  # no safe reference
    for restored in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), copy.copy(model)):
        assert (restored.scale, restored.act) == ("abc", af.gelu)
        assert torch.equal(restored.weight, model.weight)


# -- torch.export.load: the example inputs are unpickled the same way ---------------------------

PT2_WRITER = """
import sys, torch
import attack6_state_fixtures as f

import pytreekit

pytreekit.add_safe_references([f.gelu])  # writing checks what loading would refuse
W, x = torch.eye(2), torch.ones(3, 2)
program = torch.export.export(f.Net(), (f.Linear(W, scale=0.5), x))
torch.export.save(program, f"{sys.argv[1]}/honest.pt2")
F = "__pytreekit_fields__"
L3 = (("weight", "act", "scale"), (False, True, True))
state = {"weight": W, "act": f.gelu, "scale": "abc", F: L3}
f.Linear.__getstate__ = lambda self: state  # the attacker's own process writes any state
torch.export.save(program, f"{sys.argv[1]}/edited.pt2")
"""

PT2_VICTIM = """
import io, json, logging, sys, zipfile, torch
import attack6_state_fixtures as f
import pytreekit

pytreekit.add_safe_references([f.gelu])  # the model's own function, as for jax.export

folder = sys.argv[1]
out = {}
# What torch.export.load unpickles the example inputs with (torch.load(weights_only=True)).
for name in ("honest", "edited"):
    archive = zipfile.ZipFile(f"{folder}/{name}.pt2")
    member = next(n for n in archive.namelist() if n.endswith("sample_inputs/model.pt"))
    try:
        with torch.serialization.safe_globals([f.Linear, f.gelu]):
            inputs = torch.load(io.BytesIO(archive.read(member)), weights_only=True)
        out[name] = ["loaded", inputs[0][0].scale]
    except Exception as error:
        out[name] = [type(error).__name__, str(error)]
# torch.export.load itself, as the docs show; torch logs a refused first attempt (the error as
# the record's exc_info: torch 2.13's message does not format).
logged = []


class Seen(logging.Handler):
    def emit(self, record):
        logged.append(str(record.exc_info[1]) if record.exc_info else "")


logging.getLogger("torch._export.serde.serialize").addHandler(Seen())
for name in ("honest", "edited"):
    try:
        with torch.serialization.safe_globals([f.Linear, f.gelu]):
            program = torch.export.load(f"{folder}/{name}.pt2")
        linear = program.example_inputs[0][0]
        out[name + "-load"] = ["loaded", linear.scale]
        if name == "honest":
            called = program.module()(f.Linear(torch.eye(2), scale=0.5), torch.ones(3, 2))
            out["call"] = called.tolist()
    except Exception as error:
        out[name + "-load"] = [type(error).__name__, str(error)]
out["logged"] = logged
print(json.dumps(out))
"""


def test_torch_export_load_unpickles_example_inputs_checked(tmp_path):
    run_fresh(PT2_WRITER, tmp_path)
    out = json.loads(run_fresh(PT2_VICTIM, tmp_path).splitlines()[-1])
    assert out["honest"] == ["loaded", 0.5]
    assert out["honest-load"] == ["loaded", 0.5]
    assert out["call"] == [[0.5, 0.5]] * 3
    kind, message = out["edited"]
    assert kind == "StaticDataError", out["edited"]
    assert "cannot restore a attack6_state_fixtures.Linear" in message
    assert "static field scale is declared float" in message
    # torch.export.load's first attempt is refused the same way. torch 2.13 then retries with
    # weights_only=False (plain pickle, which runs code anyway and is not checked): the docs say
    # not to load a .pt2 you do not trust.
    result = out["edited-load"]
    if result[0] == "loaded":
        assert any("static field scale is declared float" in seen for seen in out["logged"])
    else:
        assert result[0] == "StaticDataError" and "static field scale" in result[1], result


# -- the check itself, on states no honest pickle holds -----------------------------------------

_L3 = (("weight", "act", "scale"), (False, True, True))
_P2 = (("weight", "act"), (False, True))


@pytest.mark.parametrize(
    ("state", "needle"),
    [
        ([1, 2], "its state is a list, not the dict pytreekit writes"),
        ({"weight": 1}, "holds no layout"),
        ({"weight": 1, "__pytreekit_fields__": (("weight", "weight"), (False, False))}, "twice"),
        (
            {"weight": 1, "act": af.gelu, "scale": 1.0, 7: 0, "__pytreekit_fields__": _L3},
            "a value under a int key",
        ),
        (
            {"weight": 1, "act": af.gelu, "__pytreekit_fields__": _L3},
            "names the field 'scale' without a value",
        ),
        (
            {"weight": 1, "act": af.gelu, "scale": [1.0], "__pytreekit_fields__": _L3},
            "static field scale is declared float",
        ),
    ],
)
def test_a_malformed_state_is_refused_naming_the_class(state, needle):
    with pytreekit.safe_references([af.gelu]), pytest.raises(StaticDataError) as caught:
        export.check_restricted_state(af.Linear, state)
    message = str(caught.value)
    assert message.startswith(
        "torch.load(weights_only=True) cannot restore a attack6_state_fixtures.Linear: "
    )
    assert needle in message


def test_an_unhashable_static_value_is_refused():
    state = {"weight": 1, "act": af.gelu, "scale": 1.0, "__pytreekit_fields__": _L3}
    with pytreekit.safe_references([af.gelu]):
        export.check_restricted_state(af.Linear, state)  # honest: passes
        with pytest.raises(StaticDataError, match="static field act holds a list"):
            plain = {"weight": 1, "act": [af.gelu], "__pytreekit_fields__": _P2}
            export.check_restricted_state(af.Plain, plain)


# -- attack7: a delegating __setstate__, and an honest field not set yet -------------------------

SEVENTH_WRITER = """
import sys, torch
import attack6_state_fixtures as f

W = torch.eye(2)
L3 = (("weight", "act", "scale"), (False, True, True))
f.Delegating.__getstate__ = lambda self: {
    "weight": W, "act": f.Delegating, "scale": "abc", "__pytreekit_fields__": L3
}
torch.save(f.Delegating(W), f"{sys.argv[1]}/delegating.pt")
torch.save(f.Lazy(W), f"{sys.argv[1]}/lazy.pt")
"""

SEVENTH_VICTIM = """
import json, sys, torch
import attack6_state_fixtures as f
import pytreekit

out = {}
with torch.serialization.safe_globals([f.Delegating, f.Lazy, f.Linear, f.gelu]):
    with pytreekit.safe_references([f.gelu]):
        for case in ("delegating", "lazy"):
            try:
                m = torch.load(f"{sys.argv[1]}/{case}.pt", weights_only=True)
            except Exception as error:
                out[case] = [type(error).__name__, str(error)]
            else:
                out[case] = ["loaded", sorted(vars(m)), torch.equal(m.weight, torch.eye(2))]
print(json.dumps(out))
"""


def test_a_subclass_setstate_that_delegates_is_checked_and_an_unset_field_loads(tmp_path):
    run_fresh(SEVENTH_WRITER, tmp_path)
    out = json.loads(run_fresh(SEVENTH_VICTIM, tmp_path).splitlines()[-1])
    # super().__setstate__ from the subclass's own: the unpickler is two frames up, still seen
    kind, message = out["delegating"]
    assert kind == "StaticDataError", out["delegating"]
    assert "cannot restore a attack6_state_fixtures.Delegating" in message
    # init=False without a default: pytreekit writes the name without a value, and loads it so
    assert out["lazy"][0] == "loaded", out["lazy"]
    assert "cache" not in out["lazy"][1] and out["lazy"][2] is True


class _Opaque:
    """An object of a class no declared type names and no safe reference is."""


def _in_process_states():
    """Each refusal the fresh-process cases show, and a few more, as (class, state, needle):
    the check called directly, as ``__setstate__`` calls it under torch's unpickler."""
    model = object.__new__(af.Linear)
    layout_plain = ("weight", "act")
    return [
        (af.Linear, {"weight": 1, "act": model, "scale": 1.0, F: _L3}, "holds a attack6"),
        (af.Linear, {"weight": 1, "act": af.Linear, "scale": 1.0, F: _L3}, "holds the class"),
        (af.Linear, {"weight": 1, "act": _Opaque, "scale": 1.0, F: _L3}, "holds the class"),
        (
            af.Linear,
            {"weight": 1, "act": _opaque_function, "scale": 1.0, F: _L3},
            "_opaque_function'",
        ),
        (af.Plain, {"weight": 1, "act": _opaque_function, F: _P2}, "holds the function"),
        (af.Plain, {"weight": 1, "act": _Opaque(), F: _P2}, "holds a test_artifacts_attack6"),
        (
            af.Linear,
            {"weight": 1, "scale": 1.0, F: (("weight", "scale"), (False, True))},
            "leaves out the field 'act'",
        ),
        (
            af.Linear,
            {
                "weight": 1,
                "act": af.gelu,
                "scale": 1.0,
                "x": 0,
                F: ((*_L3[0], "x"), (*_L3[1], False)),
            },
            "names the field 'x', which the class does not declare",
        ),
        (
            af.Linear,
            {"weight": 1, "act": af.gelu, "scale": 1.0, F: (("act", "weight", "scale"), _L3[1])},
            "in the order",
        ),
        (
            af.Linear,
            {"weight": 1, "act": af.gelu, "scale": 1.0, F: (_L3[0], (False, False, True))},
            "marks the fields ('scale',) static",
        ),
        (
            af.Plain,
            {
                "weight": 1,
                "act": af.gelu,
                "predict": 1,
                F: ((*layout_plain, "predict"), (False, True, False)),
            },
            "names the field 'predict'",
        ),
        (af.Plain, ({"weight": 1}, [1]), "its state is a tuple"),
    ]


def _opaque_function(x):
    return x


F = "__pytreekit_fields__"


@pytest.mark.parametrize(("cls", "state", "needle"), _in_process_states())
def test_each_refusal_of_a_state_names_what_is_wrong_in_process(cls, state, needle):
    before = sorted(map(repr, cls.__pytreekit_spec__.table._by_names))
    with pytreekit.safe_references([af.gelu]), pytest.raises(StaticDataError) as caught:
        export.check_restricted_state(cls, state)
    assert needle in str(caught.value), str(caught.value)
    assert sorted(map(repr, cls.__pytreekit_spec__.table._by_names)) == before
