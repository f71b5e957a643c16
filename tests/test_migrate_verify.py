"""--verify, and a whole temporary project: a hierarchy, a class registered from another module, a
file that does not parse, and a static that is unhashable only when the code runs. The project's
own tests are the command whose constructor calls are replayed; the recorder and the worker are
also tested in this process."""

from __future__ import annotations

import json
import pickle
import runpy
import shutil
import sys
from pathlib import Path

import jax.numpy as jnp
import pytest
from conftest import require

require("libcst")

from migrate_helpers import codemod, write  # noqa: E402

from pytreekit.migrate import _recorder, _report, _verify, _worker  # noqa: E402

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/models.py": """
        import jax
        import jax.numpy as jnp


        @jax.tree_util.register_pytree_node_class
        class Base:
            def __init__(self, w):
                self.w = jnp.asarray(w)

            def tree_flatten(self):
                return (self.w,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        @jax.tree_util.register_pytree_node_class
        class Scaled(Base):
            def __init__(self, w, scale):
                super().__init__(w)
                self.scale = scale

            def tree_flatten(self):
                return (self.w,), (self.scale,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children, *aux)


        @jax.tree_util.register_pytree_node_class
        class Holder:
            def __init__(self, w):
                self.w = w

            def tree_flatten(self):
                return (self.w,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        @jax.tree_util.register_pytree_node_class
        class Net(Holder):
            def __init__(self, w, sizes):
                super().__init__(w)
                self.sizes = sizes  # the tests pass a list: unhashable once static

            def tree_flatten(self):
                return (self.w,), (self.sizes,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])


        @jax.tree_util.register_pytree_node_class
        class Unused:  # no test builds one
            def __init__(self, w):
                self.w = w

            def tree_flatten(self):
                return (self.w,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
    """,
    "shapes.py": """
        import jax


        class Circle:
            def __init__(self, radius):
                self.radius = radius


        jax.tree_util.register_pytree_node(
            Circle, lambda c: ((c.radius,), None), lambda aux, c: Circle(*c)
        )
    """,
    "pkg/layers.py": """
        class Dense:
            def __init__(self, w, b):
                self.w = w
                self.b = b
    """,
    "pkg/registry.py": """
        import jax

        from .layers import Dense


        def flatten_dense(d):
            return (d.w, d.b), None


        def unflatten_dense(aux, children):
            return Dense(*children)


        jax.tree_util.register_pytree_node(Dense, flatten_dense, unflatten_dense)
    """,
    "pkg/broken.py": """
        # names register_pytree_node: parsed, not skipped by the text pre-filter
        def broken(:
            pass
    """,
    "tests/test_models.py": """
        import jax
        import jax.numpy as jnp

        import pkg.registry  # noqa: F401 (registers Dense)
        from pkg.layers import Dense
        from pkg.models import Base, Net, Scaled
        from shapes import Circle


        def test_models():
            assert jax.tree_util.tree_leaves(Circle(2.0)) == [2.0]
            assert jax.tree_util.tree_leaves(Base([1.0, 2.0]))[0].shape == (2,)
            scaled = Scaled(jnp.ones(3), 2.0)
            assert jax.tree_util.tree_structure(scaled) == jax.tree_util.tree_structure(scaled)
            net = Net(jnp.zeros(2), list(range(3)))
            assert len(jax.tree_util.tree_leaves(net)) == 1
            assert len(jax.tree_util.tree_leaves(Dense(jnp.ones(2), 1.0))) == 2
    """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    write(root, PROJECT)
    return root


def _copy(project: Path, tmp_path: Path) -> Path:
    shutil.copytree(project, tmp_path / "project")
    return tmp_path / "project"


def _verdicts(report: dict) -> dict[str, tuple[str, str | None]]:
    return {e["class"]: (e["verdict"], e["code"]) for e in report["registrations"]}


def test_project_check_and_diff_write_nothing(project: Path, tmp_path: Path) -> None:
    root = _copy(project, tmp_path)
    files = {path: path.read_text() for path in root.rglob("*.py")}
    parsed = codemod(root, "--check", "pkg/models.py", "pkg/layers.py", "pkg/registry.py")
    assert parsed.code == 1  # rewrites pending
    check = codemod(root, "--check", "--report", "json", "pkg")
    assert check.code == 2  # pkg/broken.py does not parse
    assert check.report["not_parsed"][0]["file"] == "pkg/broken.py"
    assert _verdicts(check.report) == {
        # unflatten converted w with jnp.asarray through __init__: the rewrite drops that
        "Base": ("unsafe", "PTK205"),
        "Scaled": ("unsafe", "PTK205"),
        "Holder": ("rewritten", None),
        "Net": ("rewritten", None),  # statically nothing says the list is unhashable
        "Unused": ("rewritten", None),
        "Dense": ("unsafe", "PTK203"),
    }
    diff = codemod(root, "--diff", "pkg")
    assert diff.code == 2
    assert "+++ b/pkg/models.py" in diff.out and "+++ b/pkg/layers.py" not in diff.out
    assert {path: path.read_text() for path in root.rglob("*.py")} == files


def test_project_in_place_with_unsafe(project: Path, tmp_path: Path) -> None:
    root = _copy(project, tmp_path)
    result = codemod(root, "--unsafe", "--report", "json", "pkg")
    assert result.code == 2
    assert result.report["summary"]["files_changed"] == [
        "pkg/layers.py",
        "pkg/models.py",
        "pkg/registry.py",
    ]
    models = (root / "pkg/models.py").read_text()
    assert models.count("@pytree_class") == 5
    assert '@pytree_class(static=("scale",), eq=False, repr=False)\nclass Scaled(Base):' in models
    assert (
        "@pytree_class(eq=False, repr=False)\nclass Dense:" in (root / "pkg/layers.py").read_text()
    )
    assert "register_pytree" not in (root / "pkg/registry.py").read_text()
    again = codemod(
        root, "--check", "--unsafe", "pkg/models.py", "pkg/layers.py", "pkg/registry.py"
    )
    assert again.code == 0


def test_project_verify_reverts_the_class_whose_static_is_unhashable_when_run(
    project: Path, tmp_path: Path
) -> None:
    root = _copy(project, tmp_path)
    result = codemod(root, "--unsafe", "--verify", "--report", "json", "pkg", "shapes.py")
    assert result.code == 2, result.err
    verdicts = _verdicts(result.report)
    assert verdicts == {
        "Base": ("rewritten", "PTK205"),
        "Scaled": ("rewritten", "PTK205"),
        "Holder": ("left", "PTK113"),  # a base goes with its hand-registered subclasses
        "Net": ("failed", "PTK120"),
        "Unused": ("rewritten", None),
        "Dense": ("rewritten", "PTK203"),
        "Circle": ("rewritten", None),
    }
    entries = {e["class"]: e for e in result.report["registrations"]}
    assert "recorded call 1 differs in building the instance" in entries["Net"]["reason"]
    assert "Net.sizes" in entries["Net"]["reason"]
    assert entries["Holder"]["reason"].startswith(
        "its hand-registered subclass Net is left (PTK120)"
    )
    for name in ("Base", "Scaled", "Dense", "Circle"):
        assert entries[name]["verified"].startswith("1 recorded instance rebuilt alike")
        assert entries[name]["not_proven"] == []
    assert entries["Unused"]["verified"] is None
    text = _report.as_text(result.report)
    assert "    verified: 1 recorded instance rebuilt alike" in text
    models = (root / "pkg/models.py").read_text()
    assert "# TODO[pytreekit-migrate] PTK120: verification failed" not in models  # a title
    assert "# TODO[pytreekit-migrate] PTK120: recorded call 1 differs in building" in models
    assert "\n@jax.tree_util.register_pytree_node_class\nclass Net(Holder):" in models
    assert "@pytree_class" in (root / "shapes.py").read_text()
    assert result.report["summary"]["failed"] == 1
    # a second run leaves the pinned registration alone
    again = codemod(
        root, "--check", "--unsafe", "pkg/models.py", "pkg/layers.py", "pkg/registry.py"
    )
    assert again.code == 0, again.out


def test_verify_with_nothing_to_rewrite_runs_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": "x = 1\n"})
    result = codemod(tmp_path, "mod.py", f"--verify={sys.executable} -c 'raise SystemExit(3)'")
    assert result.code == 0  # the command would fail: it never ran


def test_verify_fails_cleanly_when_the_command_fails_on_the_original(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": PROJECT["pkg/models.py"]})
    before = (tmp_path / "pkg/models.py").read_text()
    result = codemod(tmp_path, "pkg", f"--verify={sys.executable} -c 'raise SystemExit(3)'")
    assert result.code == 2
    assert "failed on the original code (exit 3); nothing was verified or written" in result.err
    assert (tmp_path / "pkg/models.py").read_text() == before


# -- the parts, in this process -----------------------------------------------------------------

MODULE = """
import jax


class Thing:
    def __init__(self, x, n=1):
        self.x = x
        self.n = n


class Sub(Thing):
    pass
"""


def test_the_recorder_keeps_distinct_calls_of_each_class(tmp_path: Path) -> None:
    (tmp_path / "recorded_things.py").write_text(MODULE)
    records = tmp_path / "records"
    records.mkdir()
    spec = tmp_path / "spec.json"
    (records / "notes.txt").write_text("not a record")
    (tmp_path / "recorded_other.py").write_text("VALUE = 1\n")
    spec.write_text(
        json.dumps(
            {
                "classes": [
                    {"module": "recorded_things", "name": "Thing", "static": ["n"]},
                    {"module": "recorded_missing", "name": "Gone", "static": []},
                ],
                "records": str(records),
                "samples": 2,
            }
        )
    )
    sys.path.insert(0, str(tmp_path))
    before = list(sys.meta_path)
    try:
        _recorder.install(str(spec))
        import recorded_other  # not a target: found as usual
        import recorded_things

        assert recorded_other.VALUE == 1
        with pytest.raises(ModuleNotFoundError):
            import recorded_missing  # noqa: F401 (a target no finder finds)

        recorded_things.Thing(1.0)
        recorded_things.Thing(1.0)  # the same call again
        recorded_things.Thing(None)  # a placeholder JAX passes: not recorded
        recorded_things.Thing(lambda: 0)  # not picklable: not recorded
        recorded_things.Sub(5.0)  # a subclass: not an instance of Thing exactly
        recorded_things.Thing(jnp.ones(2), n=3)
        recorded_things.Thing(3.0)  # beyond the bound
        _recorder.install(str(spec))  # the module is imported already: wrapped once
        recorded_things.Thing(4.0)
    finally:
        sys.meta_path[:] = before
        sys.path.remove(str(tmp_path))
        sys.modules.pop("recorded_things", None)
        sys.modules.pop("recorded_other", None)
    found = _recorder.read(str(records), 5)
    calls = [pickle.loads(data) for data in found["recorded_things.Thing"]]
    assert [(args[0] if not hasattr(args[0], "shape") else "array", kw) for args, kw in calls] == [
        (1.0, {}),
        ("array", {"n": 3}),
    ]
    assert "_pytreekit_migrate_recorder" in _recorder.sitecustomize()


def test_the_worker_fingerprints_a_rebuilt_instance(tmp_path: Path) -> None:
    (tmp_path / "worked_things.py").write_text(
        MODULE
        + "\njax.tree_util.register_pytree_node(\n"
        + "    Thing, lambda t: ((t.x,), (t.n,)), lambda aux, c: Thing(c[0], *aux)\n)\n"
        + "\nclass Broken:\n    def __init__(self, x):\n        raise TypeError('no')\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        spec = {
            "classes": [
                {"module": "worked_things", "name": "Thing", "static": ["n"], "imports": ["json"]},
                {"module": "worked_things", "name": "Broken", "static": []},
                {"module": "worked_things", "name": "Missing", "static": []},
                {"module": "worked_things", "name": "Unrecorded", "static": []},
            ]
        }
        records = {
            "worked_things.Thing": [pickle.dumps(((jnp.arange(3.0),), {"n": (1, "a")}))],
            "worked_things.Broken": [pickle.dumps(((1,), {}))],
            "worked_things.Missing": [pickle.dumps(((1,), {}))],
        }
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        (tmp_path / "records.pkl").write_bytes(pickle.dumps(records))
        _worker.main([str(tmp_path / n) for n in ("spec.json", "records.pkl", "out.json")])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("worked_things", None)
    results = json.loads((tmp_path / "out.json").read_text())
    # as python -m pytreekit.migrate._worker runs it
    argv = [str(tmp_path / n) for n in ("spec.json", "records.pkl", "again.json")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["_worker", *argv])
        patch.delitem(sys.modules, "pytreekit.migrate._worker")  # run afresh, as -m does
        sys.path.insert(0, str(tmp_path))
        try:
            runpy.run_module("pytreekit.migrate._worker", run_name="__main__")
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("worked_things", None)
    assert json.loads((tmp_path / "again.json").read_text()) == results
    assert set(results) == {"worked_things.Thing", "worked_things.Broken", "worked_things.Missing"}
    [thing] = results["worked_things.Thing"]["calls"]
    assert thing["construct"] == ["ok"]
    assert thing["leaves"][0] == "list" and thing["leaves"][1][0][:3] == ["array", "float32", [3]]
    assert thing["statics"] == {"n": ["tuple", [["py", "int", "1"], ["py", "str", "'a'"]]]}
    assert thing["treedef_equal"] is True
    assert thing["round_trip"][0] == "Thing" and thing["jit"] == thing["leaves"]
    assert thing["grad"][1][0][:3] == ["array", "float32", [3]]
    assert results["worked_things.Broken"]["calls"] == [{"construct": ["error", "TypeError", "no"]}]
    assert results["worked_things.Missing"]["import"][:2] == ["error", "AttributeError"]


def test_fingerprints_describe_values_alike_across_processes() -> None:
    fingerprint = _worker.fingerprint
    assert fingerprint(jnp.tanh) == ["ref", jnp.tanh.__module__, jnp.tanh.__qualname__]
    assert fingerprint({"b": 1, "a": [None]}) == [
        "dict",
        [["'a'", ["list", [["py", "NoneType", "None"]]]], ["'b'", ["py", "int", "1"]]],
    ]

    class Plain:
        def __init__(self) -> None:
            self.value = 2.0

    assert fingerprint(Plain()) == [
        "object",
        Plain.__qualname__,
        ["dict", [["'value'", ["py", "float", "2.0"]]]],
    ]
    assert fingerprint(object())[:2] == ["object", "object"]
    deep: list = []
    for _ in range(20):
        deep = [deep]
    assert "deep" in json.dumps(fingerprint(deep))


def test_compare_names_the_first_difference() -> None:
    ok = {"calls": [{"construct": ["ok"], "leaves": ["list", []]}]}
    assert _verify.compare(ok, ok) == ""
    other = {"calls": [{"construct": ["ok"], "leaves": ["list", [["py", "int", "1"]]]}]}
    assert _verify.compare(ok, other) == (
        "recorded call 1 differs in the leaves (order, dtype, shape, values)"
    )
    failed = {"calls": [{"construct": ["error", "TypeError", "C.n is unhashable. Use a tuple."]}]}
    # the whole message: its advice (the second sentence here) is what a person acts on
    assert _verify.compare(ok, failed) == (
        "recorded call 1 differs in building the instance: TypeError: C.n is unhashable. "
        "Use a tuple."
    )
    huge = {"calls": [{"construct": ["error", "ValueError", "bad value " + "[1, 2] " * 500]}]}
    bounded = _verify.compare(ok, huge)
    assert bounded.endswith(" ...") and "bad value [1, 2]" in bounded and len(bounded) < 520
    assert _verify.compare(ok, {"import": ["error", "SyntaxError", "bad"]}) == (
        "the rewritten module does not import: SyntaxError: bad"
    )


def test_a_worker_that_fails_fails_the_verification(tmp_path: Path) -> None:
    with pytest.raises(_verify.VerificationError, match="rebuilding the recorded instances failed"):
        _verify._measure({"classes": None}, {}, [], tmp_path / "out.json")
