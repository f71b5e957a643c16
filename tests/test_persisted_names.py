"""Names that persisted data stores are API: each stays importable at the path pickles name.

A pickle names a function or class by module path and qualified name. When pytreekit moves code
between modules, these paths stay as aliases, so data written by an earlier release still loads.
The list below is every such name; tests/pickled_by_030.py holds a pickle that stores all the
plain ones.
"""

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (module, name): what pickled data refers to, and what writes it.
PERSISTED = [
    ("pytreekit._layouts", "layout_for"),  # every pickled Layout (instances, treedefs), since 0.2.0
    ("pytreekit._references", "import_by_name"),  # stand-ins for functions found by name, 0.3.0
    ("pytreekit._references", "new_object"),  # stand-ins for objects rebuilt without __init__
    ("pytreekit._wrappers", "Static"),  # Static instances pickled by 0.3.0
    ("pytreekit._decorator", "_arrive"),  # classes pickled by value (cloudpickle)
]


@pytest.mark.parametrize(("module", "name"), PERSISTED, ids=[".".join(p) for p in PERSISTED])
def test_each_persisted_name_is_importable(module, name):
    assert callable(getattr(importlib.import_module(module), name))


def _run_fresh(script):
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
        },
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_instances_and_treedefs_pickled_by_pytreekit_030_load_in_a_fresh_process():
    # What pickled_by_030._write() pickled, loaded by this version in a process that has built
    # no instance: values, static functions, leaves, and treedefs that still unflatten.
    printed = _run_fresh(
        """
        import pickle
        import jax
        import jax.numpy as jnp
        from pickled_by_030 import PICKLED, Frozen, Shifting

        plain, varied, frozen, static, shifting_def, frozen_def = pickle.loads(PICKLED)
        doubled = jax.tree.map(lambda x: x * 2, varied)
        print(repr((
            jax.tree.leaves(plain), plain.fn is jnp.tanh, jax.tree.leaves(varied),
            vars(doubled)["extra"], doubled.mode,
            frozen == Frozen(4.0), hash(frozen) == hash(Frozen(4.0)),
            static.value is jnp.tanh, jax.tree.leaves(static),
            jax.tree.unflatten(shifting_def, [7.0]).w,
            jax.tree.unflatten(frozen_def, [8.0]) == Frozen(8.0),
            jax.tree.structure(Frozen(6.0)) == frozen_def,
        )))
        """
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
        7.0,
        True,
        True,
    )
