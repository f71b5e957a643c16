import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

os.environ["JAX_PLATFORMS"] = "cpu"

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
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


def run_threads(targets):
    """Run each callable of ``targets`` in a thread of its own, the interpreter switching threads
    as often as it can (so that races show), and wait for them all; the switch interval is put
    back after."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target) for target in targets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)


def run_fresh(
    script, *args, pythonpath=(TESTS, ROOT), env=None, inherit_env=False, cwd=ROOT, timeout=120
):
    """What ``script`` prints in a new interpreter, which imports nothing of this process
    (``args``: its ``sys.argv[1:]``), with JAX on the CPU and ``pythonpath`` on ``PYTHONPATH``, and
    ``env`` added to an environment of its own (this process's with ``inherit_env``). A script
    that fails fails the test, with the end of what it wrote to stderr."""
    environment = {
        **(os.environ if inherit_env else {}),
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join(str(folder) for folder in pythonpath),
        **(env or {}),
    }
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
