import os
import sys
from pathlib import Path

os.environ["JAX_PLATFORMS"] = "cpu"

ROOT = Path(__file__).resolve().parent.parent
# The quickstart's classes are the seed classes the tests exercise: import them, don't copy them.
sys.path.insert(0, str(ROOT / "examples"))


def require(module_name):
    """Import an optional library, or skip, the reason naming it. A library that
    PYTREEKIT_REQUIRE_BACKENDS names must import instead (its absence fails), so its tests
    cannot silently stop running: "1" names them all (cell 1 of .ci/run), otherwise it is a
    comma-separated list of top-level module names ("optree": the cells without torch)."""
    import pytest

    required = os.environ.get("PYTREEKIT_REQUIRE_BACKENDS", "")
    names = {name.strip() for name in required.split(",")}
    if required == "1" or module_name.partition(".")[0] in names:
        import importlib

        return importlib.import_module(module_name)
    return pytest.importorskip(module_name)
