"""A zero tangent written as ``None`` keeps the primal's sharding and varying manual axes.

A ``custom_jvp_method`` rule returning ``None`` and ``linearize``'s ``jvp_fn(..., None)`` fill in
zeros; under ``shard_map`` (JAX 0.6 and later type a value with the mesh axes it varies over) and
with explicit mesh axes (the sharding is part of the type), zeros without them are refused by JAX.
The cases run on 8 host devices in one fresh interpreter (``tests/sharded_cases.py``), each
against ``jax.custom_jvp`` or ``jax.linearize`` given ``jnp.zeros_like`` of the primal.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _versions import HAS_EXPLICIT_MESH_AXES, HAS_VARYING_MANUAL_AXES

DERIVATIVES = [
    "jvp held_fixed",
    "jvp along_w",
    "grad held_fixed",
    "linearize x held fixed",
    "linearize w held fixed",
]


@pytest.fixture(scope="module")
def results():
    script = Path(__file__).with_name("sharded_cases.py")
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def _modes():
    modes = ["shard_map"]
    if HAS_EXPLICIT_MESH_AXES:
        modes += ["explicit axes, jit", "explicit axes, eager"]
    return modes


def test_every_case_ran(results):
    assert sorted(results) == sorted(f"{mode}: {case}" for mode in _modes() for case in DERIVATIVES)


@pytest.mark.parametrize("case", DERIVATIVES)
@pytest.mark.parametrize("mode", _modes())
def test_a_none_tangent_gives_what_zeros_like_the_primal_gives(results, mode, case):
    ours, theirs = results[f"{mode}: {case}"]
    assert "error" not in theirs, theirs  # the reference itself runs here
    assert "error" not in ours, ours["error"]
    assert ours == theirs  # values, the output's sharding, and its type where computed
    if mode == "shard_map" and HAS_VARYING_MANUAL_AXES:
        assert ours["type"].endswith("{V:i}") or ours["type"].endswith("{i}"), ours["type"]
    if mode.startswith("explicit"):
        assert ours["spec"] == "P('i',)" or ours["spec"] == "PartitionSpec('i',)", ours["spec"]
