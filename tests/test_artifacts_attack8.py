"""Defects the eighth attack on the artifacts found: resolving a name bound a classmethod through
the descriptor it wraps (its ``__get__`` ran, in the audit too); a decorated ``__setstate__``
turned the weights-only state check off; a checkpoint's dataclass values, children and values
nested past ``MAX_DEPTH`` went unchecked. Each test fails without its fix."""

from __future__ import annotations

import _codecs
import collections
import json

import pytest
from conftest import require, run_fresh

require("torch")

import attack8_fixtures as fx  # noqa: E402
import torch  # noqa: E402

import pytreekit  # noqa: E402
import pytreekit._artifacts.export as export  # noqa: E402
from pytreekit._artifacts.schema import MAGIC  # noqa: E402
from pytreekit._artifacts.static_data import StaticDataError, loads  # noqa: E402
from pytreekit._compat import called_by_torch_restricted_unpickler  # noqa: E402
from pytreekit._names import MISSING, find_in  # noqa: E402

FIELDS = "__pytreekit_fields__"

# -- 1. a name resolves without running a descriptor's code ------------------------------------


def test_a_classmethod_wrapping_a_descriptor_resolves_to_nothing_and_runs_nothing():
    fx.CALLED.clear()
    found, _, _ = find_in("attack8_fixtures", "Holder.spied")
    assert found is MISSING
    data = MAGIC + json.dumps(["r", "attack8_fixtures:Holder.spied"]).encode()
    [reference] = pytreekit.artifact_references(data)
    assert reference.status == "missing", reference
    with pytest.raises(StaticDataError):
        loads(data)
    assert fx.CALLED == []  # before 3.13, classmethod.__get__ calls Spy.__get__


def test_a_classmethod_of_a_function_still_resolves_bound_to_its_class():
    found, _, key = find_in("attack8_fixtures", "Holder.make")
    assert key == "make"
    assert found.__self__ is fx.Holder
    assert found.__func__ is vars(fx.Holder)["make"].__func__
    assert type(found()) is fx.Holder


# -- 2. a decorated delegating __setstate__ is still checked ----------------------------------

WRITER = """
import sys, _codecs, torch
import attack8_fixtures as fx

for cls in (fx.Logged, fx.GradFree):
    model = cls(torch.eye(2))
    torch.save(model, f"{sys.argv[1]}/{cls.__name__}-honest.pt")
    object.__setattr__(model, "act", _codecs.encode)  # no safe reference
    torch.save(model, f"{sys.argv[1]}/{cls.__name__}-edited.pt")
"""

VICTIM = """
import json, sys, torch
import attack8_fixtures as fx
import pytreekit

out = {}
with torch.serialization.safe_globals([fx.Logged, fx.GradFree, fx.gelu]):
    with pytreekit.safe_references([fx.gelu]):
        for name in ("Logged", "GradFree"):
            for kind in ("honest", "edited"):
                try:
                    m = torch.load(f"{sys.argv[1]}/{name}-{kind}.pt", weights_only=True)
                except Exception as error:
                    out[f"{name}-{kind}"] = [type(error).__name__, str(error)]
                else:
                    out[f"{name}-{kind}"] = ["loaded", m.act.__name__]
print(json.dumps(out))
"""


def test_a_decorated_setstate_that_delegates_is_checked(tmp_path):
    run_fresh(WRITER, tmp_path)
    out = json.loads(run_fresh(VICTIM, tmp_path).splitlines()[-1])
    for name in ("Logged", "GradFree"):
        assert out[f"{name}-honest"] == ["loaded", "gelu"], out
        kind, message = out[f"{name}-edited"]
        assert kind == "StaticDataError", out
        assert f"cannot restore a attack8_fixtures.{name}" in message
        assert "static field act holds the function '_codecs:encode'" in message


def test_a_state_restored_outside_torch_is_not_taken_for_torchs():
    assert called_by_torch_restricted_unpickler(0) is False


# -- 3 to 5. what a weights-only state holds, checked all through -------------------------------


class _Slotted:
    __slots__ = ("held", "unset")

    def __init__(self, held):
        self.held = held


def _state(names, static, **values):
    return {**values, FIELDS: (tuple(names), tuple(static))}


def _nested(levels, inner):
    value = inner
    for _ in range(levels):
        value = (value,)
    return value


def _refused(cls, state, needle):
    with pytest.raises(StaticDataError) as caught:
        export.check_restricted_state(cls, state)
    assert f"cannot restore a attack8_fixtures.{cls.__name__}" in str(caught.value)
    assert needle in str(caught.value), str(caught.value)


def test_a_static_value_nested_past_the_limit_is_refused():
    deep = _state(("weight", "act"), (False, True), weight=torch.eye(2), act=_nested(101, [1]))
    _refused(fx.Base, deep, "nested more than 100 levels deep")
    shallow = _state(("weight", "act"), (False, True), weight=torch.eye(2), act=_nested(99, [1]))
    _refused(fx.Base, shallow, "declared")  # within the limit: the declared type refuses it


@pytest.mark.parametrize(
    ("fn", "needle"),
    [
        (_codecs.encode, "static field cfg holds the function '_codecs:encode'"),
        (bytearray, "static field cfg holds the class 'builtins:bytearray'"),
    ],
)
def test_a_dataclass_value_is_looked_into(fn, needle):
    state = _state(("weight", "cfg"), (False, True), weight=torch.eye(2), cfg=fx.Cfg(fn=fn))
    _refused(fx.Configured, state, needle)


def test_a_dataclass_attribute_outside_its_fields_is_looked_into():
    cfg = fx.Cfg()
    object.__setattr__(cfg, "extra", _codecs.encode)
    state = _state(("weight", "cfg"), (False, True), weight=torch.eye(2), cfg=cfg)
    _refused(fx.Configured, state, "holds the function '_codecs:encode'")


def test_an_honest_dataclass_value_loads():
    for cfg in (fx.Cfg(), fx.Cfg(width=3)):
        state = _state(("weight", "cfg"), (False, True), weight=torch.eye(2), cfg=cfg)
        export.check_restricted_state(fx.Configured, state)
    with pytreekit.safe_references([fx.gelu]):
        state = _state(("weight", "cfg"), (False, True), weight=torch.eye(2), cfg=fx.Cfg(fx.gelu))
        export.check_restricted_state(fx.Configured, state)


@pytest.mark.parametrize(
    ("child", "needle"),
    [
        (_codecs.encode, "field encoder holds the function '_codecs:encode'"),
        (bytearray, "field encoder holds the class 'builtins:bytearray'"),
        ([torch.eye(2), {"f": _codecs.encode}], "holds the function '_codecs:encode'"),
        (collections.OrderedDict(f=_codecs.encode), "holds the function '_codecs:encode'"),
        (_Slotted(_codecs.encode), "holds the function '_codecs:encode'"),  # in a slot
        (_nested(101, torch.eye(2)), "nested more than 100 levels deep"),
    ],
)
def test_a_child_holding_a_function_or_class_is_refused(child, needle):
    state = _state(("encoder", "extra"), (False, False), encoder=child, extra=None)
    _refused(fx.Net, state, needle)


def test_honest_children_load():
    encoder = fx.Encoder(torch.eye(2))
    for child in (encoder, torch.eye(2), [torch.eye(2), {"w": torch.ones(2)}], None, 1.5):
        state = _state(("encoder", "extra"), (False, False), encoder=child, extra=None)
        export.check_restricted_state(fx.Net, state)
    with pytreekit.safe_references([fx.gelu]):  # a safe reference, as in a static field
        state = _state(("encoder", "extra"), (False, False), encoder=fx.gelu, extra=None)
        export.check_restricted_state(fx.Net, state)


# -- torch's treespec reader: what it would call or import --------------------------------------

LEAF = {"type": None, "context": None, "children_spec": []}


def _namedtuple_spec(name, children):
    node = {"type": "collections.namedtuple", "context": name, "children_spec": children}
    return json.dumps([1, node])


def test_a_namedtuple_node_naming_a_pytree_class_is_refused_and_audited():
    import torch.utils._pytree as tp

    fx.CALLED.clear()
    text = _namedtuple_spec("attack8_fixtures.Base", [LEAF, LEAF])
    [reference] = pytreekit.artifact_references(text)
    assert reference == ("attack8_fixtures.Base", "refused")
    with pytest.raises(TypeError, match=r"names 'attack8_fixtures.Base'.*no namedtuple"):
        tp.treespec_loads(text)


def test_an_honest_namedtuple_node_still_loads():
    import torch.utils._pytree as tp

    pair = fx.Pair(torch.ones(2), torch.zeros(1))
    text = tp.treespec_dumps(tp.tree_flatten(pair)[1])
    assert ("attack8_fixtures.Pair", "safe") in pytreekit.artifact_references(text)
    rebuilt = tp.tree_unflatten([torch.ones(2), torch.zeros(1)], tp.treespec_loads(text))
    assert type(rebuilt) is fx.Pair and torch.equal(rebuilt.a, torch.ones(2))


def test_the_modules_torchs_reader_would_import_are_audited():
    factory = {
        "default_factory_module": "attack8_never_imported",
        "default_factory_name": "make",
        "dict_context": [],
    }
    node = {"type": "collections.defaultdict", "context": factory, "children_spec": []}
    enum = json.dumps([{"__enum__": True, "fqn": "attack8_unknown:Mode", "name": "A"}])
    honest = {**factory, "default_factory_module": "builtins", "default_factory_name": "list"}
    text = json.dumps(
        [
            1,
            {
                "type": "builtins.tuple",
                "context": "null",
                "children_spec": [
                    node,
                    {"type": "builtins.dict", "context": enum, "children_spec": []},
                    {"type": "collections.defaultdict", "context": honest, "children_spec": []},
                ],
            },
        ]
    )
    found = dict(pytreekit.artifact_references(text))
    assert found["attack8_never_imported:make"] == "refused"  # torch would import it
    assert found["attack8_unknown:Mode"] == "refused"
    assert found["builtins:list"] != "refused"  # imported already: as any name
