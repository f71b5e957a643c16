"""Names that persisted data stores are API: each stays importable at the path pickles name.

A pickle names a function or class by module path and qualified name. When pytreekit moves code
between modules, these paths stay as aliases, so data written by an earlier release still loads.
The list below is every such name; tests/pickled_by_030.py holds a pickle that stores all the
plain ones.
"""

import importlib
import json
import pickle
import pickletools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, run_fresh

import pytreekit

# (module, name): what pickled data refers to, and what writes it.
PERSISTED = [
    ("pytreekit._layouts", "layout_for"),  # every pickled Layout (instances, treedefs), since 0.2.0
    ("pytreekit._references", "import_by_name"),  # stand-ins for functions found by name, 0.3.0
    ("pytreekit._references", "new_object"),  # stand-ins for objects rebuilt without __init__
    ("pytreekit._wrappers", "Static"),  # Static instances pickled by 0.3.0
    ("pytreekit._decorator", "_arrive"),  # classes pickled by value (cloudpickle)
    ("pytreekit", "Static"),  # static data names Static as "pytreekit:Static"
]


@pytest.mark.parametrize(("module", "name"), PERSISTED, ids=[".".join(p) for p in PERSISTED])
def test_each_persisted_name_is_importable(module, name):
    assert callable(getattr(importlib.import_module(module), name))


@pytreekit.pytree_class
class Bare:
    w: Any


@pytreekit.pytree_class
class WithStatic:
    w: Any
    n: int = pytreekit.field(static=True, default=1)


class Pair(NamedTuple):
    activation: Any
    scale: float


def _modules_named(value):
    return {
        arg
        for op, arg, _ in pickletools.genops(pickle.dumps(value))
        if isinstance(arg, str) and arg.startswith("pytreekit")
    }


def test_a_layout_and_node_data_pickled_now_name_only_the_persisted_paths():
    # An annotated class without statics (node data printed as None) and one with: their
    # treedefs pickle naming no module but the ones listed above.
    for value in (jax.tree.structure(Bare(1.0)), jax.tree.structure(WithStatic(1.0)), Bare(1.0)):
        named = _modules_named(value)
        assert named <= {module for module, _ in PERSISTED}, named


def test_stand_ins_pickled_now_name_the_paths_0_3_0_wrote():
    # jnp.tanh is stored by name (import_by_name), the NamedTuple rebuilt around it (new_object):
    # both under pytreekit._references, where they were defined in 0.3.0.
    named = _modules_named(Bare((jnp.tanh, Pair(jnp.tanh, 2.0))))
    assert "pytreekit._references" in named
    assert named <= {module for module, _ in PERSISTED}, named


def test_instances_and_layouts_pickled_by_pytreekit_030_load_in_a_fresh_process():
    # What pickled_by_030._write() pickled, loaded by this version in a process that has built
    # no instance: values, static functions, leaves, and layouts (as treedefs hold them) that
    # load as the classes' own.
    printed = run_fresh(
        """
        import pickle
        import jax
        import jax.numpy as jnp
        from pickled_by_030 import PICKLED, Frozen, Shifting

        plain, varied, frozen, static, shifting_layout, frozen_layout = pickle.loads(PICKLED)
        doubled = jax.tree.map(lambda x: x * 2, varied)
        print(repr((
            jax.tree.leaves(plain), plain.fn is jnp.tanh, jax.tree.leaves(varied),
            vars(doubled)["extra"], doubled.mode,
            frozen == Frozen(4.0), hash(frozen) == hash(Frozen(4.0)),
            static.value is jnp.tanh, jax.tree.leaves(static),
            repr(shifting_layout), repr(frozen_layout),
            pickle.loads(pickle.dumps(frozen_layout)) is frozen_layout,
        )))
        """,
        inherit_env=True,
    )
    assert eval(printed) == (
        [1.0],
        True,
        [2.0, 3.0],
        6.0,
        "scaled",
        True,
        True,
        True,
        [],
        "Layout(w, mode*, fn*)",
        "Layout(w, n*)",
        True,
    )


def test_every_persisted_name_imports_in_a_fresh_process():
    script = (
        "import importlib, json, pickle, sys\n"
        "names = json.loads(sys.argv[1])\n"
        "found = []\n"
        "for module, name in names:\n"
        "    obj = importlib.import_module(module)\n"
        "    for part in name.split('.'):\n"
        "        obj = getattr(obj, part)\n"
        "    found.append(callable(obj))\n"
        "print(json.dumps(found))\n"
    )
    out = run_fresh(script, json.dumps(PERSISTED), pythonpath=[ROOT], inherit_env=True, cwd=None)
    assert json.loads(out) == [True] * len(PERSISTED)


def test_loaded_nan_and_partial_pickle_under_no_name_of_the_wing():
    """What static data reads back (LoadedNaN, LoadedPartial) pickles as a plain float and
    functools.partial: no pickle names a class of the wing."""
    import functools
    import math
    import pickle

    from pytreekit._artifacts.static_data import dumps, loads

    data = pickle.dumps(
        (loads(dumps(float("nan"))), loads(dumps(functools.partial(math.pow, 2.0))))
    )
    assert b"_artifacts" not in data and b"Loaded" not in data
