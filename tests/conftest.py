import os
import sys
from pathlib import Path

os.environ["JAX_PLATFORMS"] = "cpu"

ROOT = Path(__file__).resolve().parent.parent
# The quickstart's classes are the seed classes the tests exercise: import them, don't copy them.
sys.path.insert(0, str(ROOT / "examples"))


def require(module_name):
    """Import an optional backend library, or skip; in CI (PYTREEKIT_REQUIRE_BACKENDS=1) a
    missing library fails instead, so backend tests cannot silently stop running."""
    import pytest

    if os.environ.get("PYTREEKIT_REQUIRE_BACKENDS") == "1":
        import importlib

        return importlib.import_module(module_name)
    return pytest.importorskip(module_name)
