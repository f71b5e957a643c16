"""Defects the eleventh attack on the artifacts found: one accepted artifact used up a class's
quota of layouts for the rest of the process; a reference to one scalar type passed for another
that compares equal to it (``jax.numpy:float32`` for ``numpy:float32``); a partial's frozenset
elements and dict keys were compared without their kinds; an honest partial holding a NaN failed
the structure check; a NumPy ufunc of fewer inputs than its field declares was admitted. Each
test fails without its fix."""

from __future__ import annotations

import _codecs
import functools
import json
import math
import pickle
from typing import NamedTuple

import attack11_fixtures as fx
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import run_fresh

import pytreekit
from pytreekit._artifacts.export import check_restricted_state, load_aux
from pytreekit._artifacts.schema import MAGIC
from pytreekit._artifacts.static_data import (
    MAX_LEARNED_LAYOUTS,
    MAX_LEARNED_NAMES,
    LoadedAux,
    LoadedNaN,
    LoadedPartial,
    StaticDataError,
    dumps,
    loads,
    same,
)

FIELDS = "__pytreekit_fields__"


def _raw(tree: object) -> bytes:
    return MAGIC + json.dumps(tree, separators=(",", ":")).encode("ascii")


# -- 3. and 4. a partial's arguments are compared by kind everywhere, a NaN's kind is float ----


def _loaded(value: object) -> object:
    return loads(dumps(value))


def test_a_partials_frozenset_elements_and_dict_keys_keep_their_kind():
    cases = [
        (frozenset({1.0, 2.0}), frozenset({1, 2})),
        (frozenset({1, 2.0}), frozenset({1.0, 2})),
        (frozenset({True}), frozenset({1})),
        ({1.0: "a"}, {1: "a"}),
        ({1: "a", "b": 2}, {True: "a", "b": 2}),  # keys of several types do not sort
        ((frozenset({(1.0, 2)}),), (frozenset({(1, 2)}),)),  # nested
        ([{"k": frozenset({1.5, 2.0})}], [{"k": frozenset({1.5, 2})}]),
    ]
    for honest_arg, edited_arg in cases:
        honest = functools.partial(jnp.add, honest_arg)
        loaded, edited = _loaded(honest), _loaded(functools.partial(jnp.add, edited_arg))
        assert type(loaded) is LoadedPartial
        assert loaded == honest and honest == loaded
        assert loaded == _loaded(honest)
        assert edited != honest and honest != edited and edited != loaded, edited_arg
        if not isinstance(honest_arg, (dict, list)):  # a treedef holds none unhashable
            assert hash(loaded) == hash(_loaded(honest))
            assert hash(edited) != hash(loaded), edited_arg  # no jit cache entry shared


def test_a_partial_holding_a_nan_read_back_equals_the_honest_one():
    honest = functools.partial(jnp.nan_to_num, posinf=math.nan)
    loaded = _loaded(honest)
    assert type(loaded.keywords["posinf"]) is LoadedNaN
    assert loaded == honest and honest == loaded
    assert loaded != functools.partial(jnp.nan_to_num, posinf=1.0)
    inside = functools.partial(jnp.add, (1.0, math.nan))
    assert _loaded(inside) == inside
    assert _loaded(inside) != functools.partial(jnp.add, (1.0, 2.0))


WRITE_PARTIALS = """
import functools, math, sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

def save(name, act):
    data = export.export(jax.jit(lambda m: m))(fx.Model(jnp.ones(3), act)).serialize()
    open(f"{sys.argv[1]}/{name}", "wb").write(data)
    return data

data = save("fs_honest.bin", functools.partial(jnp.add, frozenset({1.0, 2.0})))
edited = data.replace(b'["s",1.0,2.0]', b'["s",1  ,2  ]', 1)  # JSON whitespace: one length
assert edited != data and len(edited) == len(data)
open(f"{sys.argv[1]}/fs_edited.bin", "wb").write(edited)
save("nan_honest.bin", functools.partial(jnp.nan_to_num, posinf=math.nan))
"""

CHECK_PARTIALS = """
import functools, json, math, sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

def check(name, mine):
    exp = export.deserialize(open(f"{sys.argv[1]}/{name}", "rb").read())
    return exp.out_tree == jax.tree.structure(fx.Model(jnp.ones(3), mine))

floats = functools.partial(jnp.add, frozenset({1.0, 2.0}))
nan = functools.partial(jnp.nan_to_num, posinf=math.nan)
print(json.dumps({
    "fs honest": check("fs_honest.bin", floats),
    "fs edited": check("fs_edited.bin", floats),
    "nan honest": check("nan_honest.bin", nan),
}))
"""


def test_the_structure_check_of_partials_in_a_fresh_process(tmp_path):
    run_fresh(WRITE_PARTIALS, tmp_path)
    out = json.loads(run_fresh(CHECK_PARTIALS, tmp_path).splitlines()[-1])
    assert out == {"fs honest": True, "fs edited": False, "nan honest": True}


# -- 1. what one read may teach a class is capped, not what the process learns ------------------

WRITE_LAYOUTS = """
import sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

fx.Net(jnp.ones(2))  # the primary layout (w, act), as in any process using the class
honest = fx.Net(jnp.ones(2), bias=jnp.zeros(2))
data = export.export(jax.jit(lambda m: m))(honest).serialize()
open(f"{sys.argv[1]}/honest.bin", "wb").write(data)
# 256 nodes, each of a made-up layout of its own: each node is one read, within the cap
nets = tuple(fx.Net(jnp.ones(1), **{f"z{i}": jnp.zeros(1)}) for i in range(256))
data = export.export(jax.jit(lambda t: t[0].w))(nets).serialize()
open(f"{sys.argv[1]}/flood.bin", "wb").write(data)
"""

LOAD_LAYOUTS = """
import json, sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

fx.Net(jnp.ones(2))  # a long-running process: its own model, then artifacts one after another
out = []
for name in sys.argv[2:]:
    try:
        exp = export.deserialize(open(f"{sys.argv[1]}/{name}.bin", "rb").read())
    except Exception as error:
        out.append([name, type(error).__name__, str(error)])
    else:
        out.append([name, "loaded", exp.in_tree.num_leaves])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack11-layouts")
    run_fresh(WRITE_LAYOUTS, folder)
    return folder


@pytest.mark.parametrize("order", [("flood", "honest"), ("honest", "flood")])
def test_an_accepted_artifact_leaves_later_ones_loading(layouts, order):
    out = json.loads(run_fresh(LOAD_LAYOUTS, layouts, *order).splitlines()[-1])
    leaves = {"flood": 512, "honest": 2}
    assert out == [[name, "loaded", leaves[name]] for name in order]


def test_one_node_naming_more_field_names_than_the_cap_is_refused_naming_its_class():
    nodes = fx.Net.__pytreekit_spec__.nodes
    table = nodes.table
    before = len(table._by_names)
    wide = ["w", "act", *(f"z{i}" for i in range(MAX_LEARNED_NAMES))]
    data = _raw(["t", 4, None, ["t", *wide], ["t", *(n == "act" for n in wide)], ["t", None]])
    with pytest.raises(StaticDataError) as refused:
        load_aux(nodes, data)
    message = str(refused.value)
    assert f"names more than {MAX_LEARNED_NAMES} field names in its layouts of Net" in message
    assert "jax.export cannot read the serialized treedef of Net" in message
    assert len(table._by_names) == before  # nothing learnt
    for index in range(MAX_LEARNED_LAYOUTS + 1):  # reads after it: each within the cap
        names = ["t", "w", "act", f"y{index}"]
        load_aux(nodes, _raw(["t", 4, None, names, ["t", False, True, False], ["t", None]]))
    assert len(table._by_names) == before + MAX_LEARNED_LAYOUTS + 1


def test_a_checkpoint_state_beyond_the_cap_is_not_sent_to_weights_only_false():
    """The file fills memory whoever wrote it: the refusal does not suggest the unsafe loader."""
    names = ("w", "act", *(f"z{i}" for i in range(MAX_LEARNED_NAMES)))
    static = tuple(name == "act" for name in names)
    state = {**dict.fromkeys(names, 0), "act": None, FIELDS: (names, static)}
    with pytest.raises(StaticDataError) as refused:
        check_restricted_state(fx.Net, state)
    message = str(refused.value)
    assert "cannot restore a attack11_fixtures.Net" in message
    assert f"more than {MAX_LEARNED_NAMES} field names in its layouts of Net" in message
    assert "weights_only=False" not in message and message.endswith("Nothing was loaded.")
    small = ("w", "act", "bias")
    state = {"w": 0, "act": None, "bias": 0, FIELDS: (small, (False, True, False))}
    check_restricted_state(fx.Net, state)  # the next object is read alone
    with pytest.raises(StaticDataError, match="also loads with weights_only=False"):
        check_restricted_state(fx.Net, {**state, "act": _codecs.encode})


TORCH_LAYOUTS = """
import json, sys, torch
import attack11_fixtures as fx

folder = sys.argv[1]
if sys.argv[2] == "write":
    fx.Net(torch.ones(2))
    torch.save(fx.Net(torch.ones(2), bias=torch.zeros(2)), f"{folder}/honest.pt")
    flood = [fx.Net(torch.ones(1), **{f"z{i}": torch.zeros(1)}) for i in range(256)]
    torch.save(flood, f"{folder}/flood.pt")
else:
    fx.Net(torch.ones(2))
    out = []
    for name in ("flood", "honest"):
        try:
            with torch.serialization.safe_globals([fx.Net]):
                loaded = torch.load(f"{folder}/{name}.pt", weights_only=True)
        except Exception as error:
            out.append([name, type(error).__name__, str(error)])
        else:
            out.append([name, "loaded", type(loaded).__name__])
    print(json.dumps(out))
"""


def test_an_accepted_checkpoint_leaves_later_ones_loading(tmp_path):
    pytest.importorskip("torch")
    run_fresh(TORCH_LAYOUTS, tmp_path, "write")
    out = json.loads(run_fresh(TORCH_LAYOUTS, tmp_path, "read").splitlines()[-1])
    assert out == [["flood", "loaded", "list"], ["honest", "loaded", "Net"]]


# -- 2. a class read back equals only itself, not a class its metaclass makes equal -------------


class _Pair(NamedTuple):
    first: object
    second: object


def test_same_compares_classes_by_identity_all_through_containers():
    assert jnp.float32 == np.float32 and hash(jnp.float32) == hash(np.float32)  # JAX's doing
    assert same(jnp.float32, jnp.float32) and not same(np.float32, jnp.float32)
    assert not same(jnp.float32, np.float32) and not same(np.float32, 1)
    pairs = [
        ((np.float32,), (jnp.float32,)),
        ([np.float32], [jnp.float32]),
        ({"cast": np.float32}, {"cast": jnp.float32}),
        (frozenset({np.float32, 1}), frozenset({jnp.float32, 1})),
        (_Pair(np.float32, 1), _Pair(jnp.float32, 1)),
    ]
    for edited, honest in pairs:
        assert edited == honest and same(honest, honest) and not same(edited, honest), edited
    assert not same((1, 2), (1,)) and not same({"a": 1}, {"b": 1}) and same(1, 1.0)
    assert not same(1, 2) and not same(np.float32, None)
    assert same(LoadedNaN("nan"), math.nan) and same((LoadedNaN("nan"),), (math.nan,))
    partial = functools.partial(jnp.add, 1.0)
    assert same(_loaded(partial), partial) and same((_loaded(partial),), (partial,))


def test_loaded_aux_data_compares_classes_by_identity_and_pickles_as_a_tuple():
    honest = (np.float32, 1.0)
    loaded = LoadedAux(honest)
    assert loaded == honest and honest == loaded
    assert not loaded != honest  # noqa: SIM202
    assert hash(loaded) == hash(honest)
    edited = LoadedAux((jnp.float32, 1.0))
    assert edited != honest and honest != edited
    assert not edited == honest  # noqa: SIM201
    assert edited != LoadedAux((jnp.float32,)) and loaded != [np.float32, 1.0]
    assert type(pickle.loads(pickle.dumps(loaded))) is tuple
    assert LoadedAux.__eq__(loaded, [np.float32]) is NotImplemented
    assert LoadedAux.__ne__(loaded, [np.float32]) is NotImplemented


def test_a_partial_of_another_class_read_back_is_another_partial():
    honest = functools.partial(jnp.float32)
    assert _loaded(honest) == honest and honest == _loaded(honest)
    edited = _loaded(functools.partial(np.float32))
    assert edited != honest and honest != edited


def test_a_treespec_edited_to_name_an_equal_class_fails_the_structure_check():
    pytest.importorskip("torch")
    import torch
    import torch.utils._pytree as tp

    spec = tp.tree_structure(fx.Cast(torch.ones(2)))
    text = tp.treespec_dumps(spec)
    edited = text.replace("jax.numpy:float32", "numpy:float32")
    assert edited != text
    assert tp.treespec_loads(text) == spec and spec == tp.treespec_loads(text)
    assert tp.treespec_loads(edited) != spec and spec != tp.treespec_loads(edited)
    assert tp.tree_unflatten([torch.ones(2)], tp.treespec_loads(edited)).cast is np.float32


WRITE_CAST = """
import functools, sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

model = fx.Cast(jnp.ones(3), functools.partial(jnp.float32))
data = export.export(jax.jit(lambda m: m))(model).serialize()
open(f"{sys.argv[1]}/honest.bin", "wb").write(data)
edited = data.replace(b'"jax.numpy:float32"', b'    "numpy:float32"', 1)  # one length
assert edited != data and len(edited) == len(data)
open(f"{sys.argv[1]}/edited.bin", "wb").write(edited)
"""

CHECK_CAST = """
import functools, json, sys, jax, jax.numpy as jnp
from jax import export
import attack11_fixtures as fx

mine = jax.tree.structure(fx.Cast(jnp.ones(3), functools.partial(jnp.float32)))
out = {}
for name in ("honest", "edited"):
    exp = export.deserialize(open(f"{sys.argv[1]}/{name}.bin", "rb").read())
    out[name] = exp.out_tree == mine
print(json.dumps(out))
"""


def test_an_artifact_edited_to_name_an_equal_class_in_a_partial_fails_the_check(tmp_path):
    run_fresh(WRITE_CAST, tmp_path)
    out = json.loads(run_fresh(CHECK_CAST, tmp_path).splitlines()[-1])
    assert out == {"honest": True, "edited": False}


def test_a_ufunc_taking_fewer_inputs_than_its_field_declares_arguments_is_refused():
    # NumPy reads the arguments after a ufunc's inputs as out= arrays and writes into them:
    # numpy:negative edited in where the model calls op(a, b) would write -a into b.
    with pytreekit.safe_references([fx.Binary]):
        honest = dumps(fx.Binary(2.0))
        assert loads(honest).op is np.add
        for name in ("negative", "sqrt", "tanh"):
            edited = honest.replace(b"numpy:add", b"numpy:" + name.encode())
            assert edited != honest
            with pytest.raises(StaticDataError, match=r"Binary\.op is declared") as refused:
                loads(edited)
            # The true reason, whole declared type, and no declaration that would let it in.
            message = str(refused.value)
            assert "takes 1 argument and the field declares a Callable of 2" in message
            assert "Callable[[" in message and "..." not in message
            assert "ufunc |" not in message and "declare the field" not in message
        assert loads(honest.replace(b"numpy:add", b"numpy:multiply")).op is np.multiply


def test_writing_a_ufunc_of_another_arity_says_why_and_never_advises_admitting_any_ufunc():
    with pytreekit.safe_references([fx.Binary]), pytest.raises(TypeError) as refused:
        dumps(fx.Binary(2.0, np.negative))
    message = str(refused.value)
    assert "numpy:negative takes 1 argument and the field declares a Callable of 2" in message
    assert "store a function of 2 arguments" in message
    assert "ufunc |" not in message and "register a codec" not in message
