"""Defects the ninth attack found in the eighth's fixes: torch's own rebuild functions nested past
the frames the check looked at; a namedtuple registered with torch after pytreekit's guard; shared
tuples that made the walks exponential; names torch reads with ``getattr``; attributes of dict
subclasses and tensors' backward hooks; a state nested deeper than Python reads. Each test fails
without its fix."""

from __future__ import annotations

import _codecs
import collections
import json
import sys
from typing import Any, NamedTuple

import pytest
from conftest import require

require("torch")

import attack8_fixtures as fx  # noqa: E402
import torch  # noqa: E402
import torch.utils._pytree as tp  # noqa: E402

import pytreekit  # noqa: E402
import pytreekit._artifacts.export as export  # noqa: E402
from pytreekit._artifacts.static_data import StaticDataError, hashable, unadmitted  # noqa: E402
from pytreekit._classes import restored  # noqa: E402
from pytreekit._compat import TORCH_RESTRICTED_UNPICKLER, called_by_torch_restricted_unpickler  # noqa: E402

FIELDS = "__pytreekit_fields__"


def _net_state(encoder: Any, extra: Any = None) -> dict[str, Any]:
    return {"encoder": encoder, "extra": extra, FIELDS: (("encoder", "extra"), (False, False))}


# -- 1. the unpickler is found past torch's own rebuild functions, however deep ------------------


def _module_of(name: str, code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(code, f"<{name}>", "exec"), namespace)
    return namespace


def test_a_setstate_called_by_torchs_rebuild_functions_is_checked_however_deep():
    assert TORCH_RESTRICTED_UNPICKLER in sys.modules  # torch imported it
    ask = lambda: called_by_torch_restricted_unpickler(0)  # noqa: E731
    unpickler = _module_of(TORCH_RESTRICTED_UNPICKLER, "def load(step):\n    return step()\n")
    rebuild = _module_of(
        "torch._tensor",  # _rebuild_from_type_v2 nested by the file, each calling __setstate__
        "def rebuild(n, ask):\n    return ask() if n == 0 else rebuild(n - 1, ask)\n",
    )
    user = _module_of(  # a subclass's __setstate__ handing the state on, decorated
        "user_code",
        "def chain(n, ask):\n    return ask() if n == 0 else chain(n - 1, ask)\n",
    )
    for nesting in (0, 40, 200):
        assert unpickler["load"](lambda n=nesting: rebuild["rebuild"](n, ask)) is True
    for wrappers in (0, 20):
        assert unpickler["load"](lambda n=wrappers: user["chain"](n, ask)) is True
    # Plain pickle and copy read a bounded part of a deep stack: 32 frames.
    assert unpickler["load"](lambda: user["chain"](40, ask)) is False
    assert called_by_torch_restricted_unpickler(0) is False


# -- 2. a namedtuple registered after pytreekit's guard reads through it --------------------------


class Late(NamedTuple):
    a: Any
    b: Any


def test_a_namedtuple_registered_later_cannot_name_a_pytree_class():
    fx.Encoder(torch.eye(2))  # pytreekit registered classes with torch before
    tp._register_namedtuple(Late, serialized_type_name="test_artifacts_attack9.Late")
    leaf = {"type": None, "context": None, "children_spec": []}
    node = {"type": "test_artifacts_attack9.Late", "context": "attack8_fixtures.Encoder"}
    text = json.dumps([1, {**node, "children_spec": [leaf, leaf]}])
    assert ("attack8_fixtures.Encoder", "refused") in pytreekit.artifact_references(text)
    with pytest.raises(TypeError, match="no namedtuple"):
        tp.treespec_loads(text)
    honest = tp.treespec_dumps(tp.tree_flatten(Late(torch.ones(1), torch.zeros(1)))[1])
    assert ("test_artifacts_attack9.Late", "safe") in pytreekit.artifact_references(honest)
    assert type(tp.tree_unflatten([1, 2], tp.treespec_loads(honest))) is Late


# -- 3. values held twice are looked at once -----------------------------------------------------


def _shared(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = (value, value)  # 2**levels paths, levels + 1 objects
    return value


def test_a_value_held_twice_is_walked_once():
    dag = _shared(60, torch.ones(1))  # walked path by path, none of these would return
    export.check_restricted_state(fx.Net, _net_state(fx.Encoder(torch.eye(2)), dag))
    assert restored(dag) is dag
    assert unadmitted(dag, (), leaf=True) is pytreekit.MISSING
    assert hashable(_shared(60, 1.0))
    hidden = _shared(30, (_codecs.encode,))
    with pytest.raises(StaticDataError, match="holds the function '_codecs:encode'"):
        export.check_restricted_state(fx.Net, _net_state(fx.Encoder(torch.eye(2)), hidden))


# -- 4 and 6. what torch reads with getattr; attributes a subclass or a tensor holds -------------


def test_names_torchs_reader_finds_through_getattr_are_refused_in_the_audit():
    enum = json.dumps([{"__enum__": True, "fqn": "attack8_fixtures:Holder.spied", "name": "A"}])
    node = {"type": "builtins.dict", "context": enum, "children_spec": []}
    found = dict(pytreekit.artifact_references(json.dumps([1, node])))
    assert found == {"attack8_fixtures:Holder.spied": "refused"}  # was "missing"


def test_a_dict_subclass_attribute_and_a_tensors_hooks_are_looked_into():
    ordered: Any = collections.OrderedDict(w=torch.ones(1))
    ordered.__dict__["hook"] = _codecs.encode  # pickle's BUILD sets it so
    parameter = torch.nn.Parameter(torch.ones(2))
    parameter._backward_hooks = collections.OrderedDict({0: _codecs.encode})
    for child, found in (
        (ordered, "the function '_codecs:encode'"),
        (parameter, "a tensor whose _backward_hooks holds hooks"),  # any hook (attack13 F2)
    ):
        with pytest.raises(StaticDataError, match=f"holds {found}"):
            export.check_restricted_state(fx.Net, _net_state(child))


# -- 7. a state nested deeper than Python reads -------------------------------------------------


def test_a_state_nested_deeper_than_python_reads_is_a_static_data_error():
    deep: Any = []
    for _ in range(sys.getrecursionlimit() * 5):
        deep = [deep]
    with pytest.raises(StaticDataError, match="nested deeper than Python can read"):
        export.check_restricted_state(fx.Net, _net_state(deep))


# -- attack10: a partial's arguments keep their kind; a loaded partial pickles ------------------


def test_a_loaded_partial_compares_its_arguments_by_kind():
    import functools
    import pickle

    import jax

    from pytreekit._artifacts.static_data import dumps, loads

    def loaded(slope: Any) -> Any:
        return loads(dumps(functools.partial(jax.nn.leaky_relu, negative_slope=slope)))

    as_float, as_int, as_bool = loaded(1.0), loaded(1), loaded(True)
    assert as_float == loaded(1.0) and hash(as_float) == hash(loaded(1.0))
    honest = functools.partial(jax.nn.leaky_relu, negative_slope=1.0)
    assert as_float == honest and honest == as_float
    for edited in (as_int, as_bool):
        assert as_float != edited and honest != edited
        assert hash(as_float) != hash(edited)  # no jit cache entry shared
    model = Holding(torch.ones(1), as_float)  # as a model loaded from an artifact holds it
    again = pickle.loads(pickle.dumps(model))
    assert type(again.act) is functools.partial and again.act.keywords == {"negative_slope": 1.0}
    assert again.act.func is jax.nn.leaky_relu


@pytreekit.pytree_class
class Holding:
    w: Any
    act: Any = pytreekit.field(static=True)
