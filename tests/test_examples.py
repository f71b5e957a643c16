"""Every example script runs and its own checks hold (they assert against undecorated JAX)."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out  # each example reports what it showed


def test_all_scenarios_have_examples():
    names = {p.name for p in EXAMPLES}
    assert {"quickstart.py", "scaled_model_jvp.py", "repeated_jvps.py"} <= names
    assert {"clipped_gradient_vjp.py", "stable_gradient.py"} <= names
