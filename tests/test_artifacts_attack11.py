"""Defects the eleventh attack on the artifacts found: one accepted artifact used up a class's
quota of layouts for the rest of the process; a reference to one scalar type passed for another
that compares equal to it (``jax.numpy:float32`` for ``numpy:float32``); a partial's frozenset
elements and dict keys were compared without their kinds; an honest partial holding a NaN failed
the structure check. Each test fails without its fix."""

from __future__ import annotations

import functools
import json
import math

import jax.numpy as jnp
from conftest import run_fresh

from pytreekit._artifacts.static_data import LoadedNaN, LoadedPartial, dumps, loads

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
