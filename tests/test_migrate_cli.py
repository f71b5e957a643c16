"""The codemod's command line: modes and exit codes, the report, the unsafe rewrites (PTK2xx),
comments a second run finds, files that do not parse, and the extra it needs."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest
from conftest import require

import pytreekit

require("libcst")

from migrate_helpers import codemod, load, write  # noqa: E402

# The pytreekit this session tests (the clone, or the installed wheel in CI's wheel cell).
_ENVIRONMENT = {
    **os.environ,
    "JAX_PLATFORMS": "cpu",
    "PYTHONPATH": str(Path(pytreekit.__file__).resolve().parent.parent),
}

POINT = """
    import jax


    @jax.tree_util.register_pytree_node_class
    class Point:
        def __init__(self, x, y):
            self.x = x
            self.y = y

        def tree_flatten(self):
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
"""

# __init__ sets y before x: pytreekit's leaves follow __init__, flatten gave (x, y)
SWAPPED = """
    import jax


    @jax.tree_util.register_pytree_node_class
    class Swapped:
        def __init__(self, x, y):
            self.y = y
            self.x = x

        def tree_flatten(self):
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
"""


def test_check_writes_nothing_and_exits_1_when_a_file_would_change(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": POINT})
    before = (tmp_path / "point.py").read_text()
    result = codemod(tmp_path, "--check", ".")
    assert result.code == 1
    assert (tmp_path / "point.py").read_text() == before
    assert "point.py:4:1: Point (register_pytree_node_class): rewritten" in result.out
    assert codemod(tmp_path, ".").code == 0
    assert codemod(tmp_path, "--check", ".").code == 0  # nothing left to do


def test_diff_prints_a_unified_diff_and_the_report_on_stderr(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": POINT})
    before = (tmp_path / "point.py").read_text()
    result = codemod(tmp_path, "--diff", "point.py")
    assert result.code == 0
    assert (tmp_path / "point.py").read_text() == before
    assert result.out.startswith("--- a/point.py\n+++ b/point.py\n")
    assert "-@jax.tree_util.register_pytree_node_class\n+@pytree_class(eq=False, repr=False)" in (
        result.out
    )
    assert "Summary: 1 file scanned" in result.err
    both = codemod(tmp_path, "--diff", "--check", "point.py")
    assert both.code == 1 and both.out.startswith("--- a/point.py")


def test_the_text_report_says_what_changes_for_the_user(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "model.py": """
                import jax
                import jax.numpy as jnp


                class Linear:
                    def __init__(self, w, n):
                        assert n > 0
                        self.w = jnp.asarray(w)
                        self.n = n


                jax.tree_util.register_pytree_node(
                    Linear, lambda l: ((l.w,), (l.n,)), lambda aux, c: Linear(c[0], *aux)
                )
            """
        },
    )
    assert "not rewritten, unsafe PTK205" in codemod(tmp_path, "model.py").out
    out = codemod(tmp_path, "model.py", "--unsafe").out
    assert out.splitlines()[1:] == [
        "    unflatten converted through __init__ (jnp.asarray(w)); pytreekit rebuilds without "
        "converting, so",
        "        a leaf JAX hands back (a NumPy array, a Python number) stays as it is",
        '    @pytree_class(static=("n",), eq=False, repr=False)',
        "    statics: n",
        "    leaf order: kept (w)",
        "    key paths: [<flat index 0>] -> .w",
        "    __init__ no longer runs on unflatten: checked assert n > 0; converted w with "
        "jnp.asarray",
        "    hashing: unchanged (eq=False): hashed by identity, as before",
        "    proven: flatten reads attributes, unflatten inverts it, __init__ sets exactly those",
        "    not proven: conversions in __init__ idempotent, statics hashable at run time, code "
        "outside the",
        "        scanned files (--verify checks them)",
        "Summary: 1 file scanned, 1 registration found:",
        "    1 rewritten, 0 unsafe (not applied), 0 left, 0 failed verification; 1 file changed.",
        "    1 module now imports pytreekit at run time: add pytreekit to your package's "
        "dependencies.",
        "1 file transformed, 0 skipped, 1 warning, 0 failures.",
    ]


def test_the_json_report_and_its_summary(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": POINT, "swapped.py": SWAPPED, "other.py": "x = 1\n"})
    report = codemod(tmp_path, ".", "--report", "json").report
    assert report["summary"] == {
        "files_scanned": 3,
        "files_not_parsed": 0,
        "registrations": 2,
        "rewritten": 1,
        "not_written": 0,
        "unsafe": 1,
        "left": {},
        "failed": 0,
        "suppressed": 0,
        "files_changed": ["point.py", "swapped.py"],
        "written": True,
        "transformed": 2,
        "skipped": 0,
        "warnings": 1,
        "failures": 0,
        "imports_pytreekit": ["point.py"],
    }
    point, swapped = report["registrations"]
    assert point["changes"]["key_paths"] == [
        {"before": "[<flat index 0>]", "after": ".x"},
        {"before": "[<flat index 1>]", "after": ".y"},
    ]
    assert point["changes"]["removed"] == ["tree_flatten", "tree_unflatten"]
    assert swapped["verdict"] == "unsafe" and swapped["code"] == "PTK201"
    assert swapped["changes"]["leaf_order"] == {
        "kept": False,
        "before": ["x", "y"],
        "after": ["y", "x"],
    }


def test_leaf_order_changes_only_with_unsafe_and_are_always_reported(tmp_path: Path) -> None:
    write(tmp_path, {"swapped.py": SWAPPED})
    original = load(tmp_path / "swapped.py")
    result = codemod(tmp_path, "swapped.py")
    text = (tmp_path / "swapped.py").read_text()
    # the comment gives the whole reason, wrapped within 88 columns
    assert (
        "# TODO[pytreekit-migrate] PTK201 (unsafe: --unsafe applies it): leaves go in __init__'s\n"
        "#   order (y, x), not flatten's (x, y)\n"
    ) in text
    assert "leaves go in __init__'s order (y, x), not flatten's (x, y)" in result.out
    assert "register_pytree_node_class" in text
    # the text report folds its lines at 100 columns
    assert "not rewritten, unsafe PTK201 (--unsafe applies it)" in " ".join(result.out.split())
    applied = codemod(tmp_path, "swapped.py", "--unsafe")
    # (line 6: the comment of the first run, two lines, stands above the decorator)
    assert "swapped.py:6:1: Swapped (register_pytree_node_class): rewritten, unsafe PTK201" in (
        applied.out
    )
    text = (tmp_path / "swapped.py").read_text()
    assert "TODO[pytreekit-migrate]" not in text and "register_pytree" not in text
    rewritten = load(tmp_path / "swapped.py")
    one, two = original.Swapped(1.0, 2.0), rewritten.Swapped(1.0, 2.0)
    assert jax.tree_util.tree_leaves(one) == [1.0, 2.0]
    assert jax.tree_util.tree_leaves(two) == [2.0, 1.0]  # __init__'s order, as reported


def test_keyed_paths_that_change_are_unsafe(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "keyed.py": """
                import jax.tree_util as jtu


                class Weights:
                    def __init__(self, w):
                        self.w = w


                jtu.register_pytree_with_keys(
                    Weights,
                    lambda s: (((jtu.DictKey("weight"), s.w),), None),
                    lambda aux, children: Weights(*children),
                )
            """
        },
    )
    entry = codemod(tmp_path, "keyed.py", "--report", "json").report["registrations"][0]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK202")
    assert entry["reason"] == "key paths change: ['weight'] -> .w"


def test_flat_index_paths_are_unsafe_where_the_project_reads_key_paths(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "point.py": POINT,
            "checkpoint.py": """
                import jax

                def names(tree):
                    paths = jax.tree_util.tree_leaves_with_path(tree)
                    return [jax.tree_util.keystr(p) for p, _ in paths]
            """,
        },
    )
    entry = codemod(tmp_path, ".", "--report", "json").report["registrations"][0]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK202")
    assert re.search(r"and checkpoint \(\w+\) reads key paths$", entry["reason"])


def test_a_registration_in_another_module_is_unsafe(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": """
                class Dense:
                    def __init__(self, w):
                        self.w = w
            """,
            "pkg/registry.py": """
                import jax
                from .layers import Dense

                jax.tree_util.register_pytree_node(
                    Dense, lambda d: ((d.w,), None), lambda aux, children: Dense(*children)
                )
            """,
        },
    )
    entry = codemod(tmp_path, "pkg", "--report", "json").report["registrations"][0]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK203")
    assert "Dense is defined in pkg.layers" in entry["reason"]
    comment = (tmp_path / "pkg/registry.py").read_text().splitlines()[3]
    assert comment.startswith("# TODO[pytreekit-migrate] PTK203 (unsafe")
    assert codemod(tmp_path, "pkg", "--unsafe").code == 0
    assert (
        (tmp_path / "pkg/layers.py")
        .read_text()
        .startswith(
            "from pytreekit import pytree_class\n\n"
            "@pytree_class(eq=False, repr=False)\nclass Dense:"
        )
    )
    # JAX's imports only the registration used went with it; the class's import stays: code
    # outside the scanned files may import it from here (a package's __init__ re-exports so)
    assert (tmp_path / "pkg/registry.py").read_text().strip() == "from .layers import Dense"


def test_unregistered_subclasses_would_become_pytrees(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": textwrap.dedent(SWAPPED) + "\n\nclass Named(Swapped): pass\n"})
    result = codemod(tmp_path, "point.py", "--report", "json")
    entry = result.report["registrations"][0]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK201")
    assert entry["changes"]["unsafe"][1] == {
        "code": "PTK204",
        "reason": "subclass Named is not registered: it would become a pytree too",
    }
    text = codemod(tmp_path, "point.py").out
    assert "    also unsafe, PTK204: subclass Named is not registered" in text


def test_sequence_keys_and_paths_outside_the_working_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "keyed.py": """
                import jax.tree_util as jtu


                class Pair:
                    def __init__(self, a, b):
                        self.a = a
                        self.b = b


                jtu.register_pytree_with_keys(
                    Pair,
                    lambda p: (((jtu.SequenceKey(0), p.a), (jtu.SequenceKey(1), p.b)), None),
                    lambda aux, children: Pair(*children),
                )
            """
        },
    )
    (tmp_path / "elsewhere").mkdir()
    path = str(tmp_path / "keyed.py")
    entry = codemod(tmp_path / "elsewhere", path, "--report", "json").report["registrations"][0]
    assert entry["file"] == path  # not under the working directory: shown as given
    assert (entry["code"], entry["reason"]) == ("PTK202", "key paths change: [0] -> .a, [1] -> .b")


def test_methods_kept_are_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"point.py": POINT + "\n\n    def parts(point):\n        return point.tree_flatten()\n"},
    )
    out = codemod(tmp_path, "point.py").out
    assert "    kept tree_flatten: point uses point.tree_flatten" in out


def test_a_comment_follows_its_reason_and_goes_when_the_class_is_rewritten(
    tmp_path: Path,
) -> None:
    cached = POINT.replace("self.y = y", "self.y = y\n            self.cache = {}")
    write(tmp_path, {"point.py": cached})
    codemod(tmp_path, "point.py")
    first = (tmp_path / "point.py").read_text()
    assert "# TODO[pytreekit-migrate] PTK108: __init__ sets cache," in first
    (tmp_path / "point.py").write_text(first.replace("self.cache = {}", "self.memo = {}"))
    codemod(tmp_path, "point.py")
    second = (tmp_path / "point.py").read_text()
    assert second.count("TODO[pytreekit-migrate]") == 1
    assert "# TODO[pytreekit-migrate] PTK108: __init__ sets memo," in second
    (tmp_path / "point.py").write_text(second.replace("        self.memo = {}\n", ""))
    codemod(tmp_path, "point.py")
    third = (tmp_path / "point.py").read_text()
    assert "TODO[pytreekit-migrate]" not in third
    assert "@pytree_class(eq=False, repr=False)\nclass Point:" in third


def test_a_verification_failure_pins_the_registration_until_its_comment_goes(
    tmp_path: Path,
) -> None:
    pinned = "# TODO[pytreekit-migrate] PTK120: verification failed: ...; delete this comment"
    write(tmp_path, {"point.py": POINT.replace("\n\n    @jax", f"\n\n    {pinned}\n    @jax")})
    before = (tmp_path / "point.py").read_text()
    report = codemod(tmp_path, "point.py", "--report", "json").report
    assert report["registrations"][0]["code"] == "PTK120"
    assert (tmp_path / "point.py").read_text() == before


def test_a_file_that_does_not_parse_is_named_and_the_others_are_rewritten(
    tmp_path: Path,
) -> None:
    # a module is parsed when its text names a registration API (a pre-filter skips the others)
    broken = "def f(:\n    register_pytree_node(f)\n"
    write(tmp_path, {"point.py": POINT, "broken.py": broken})
    result = codemod(tmp_path, ".", "--report", "json")
    assert result.code == 2
    [failure] = result.report["not_parsed"]
    assert failure["file"] == "broken.py" and failure["error"].startswith("line 2, column 0")
    assert "@pytree_class" in (tmp_path / "point.py").read_text()
    text = codemod(tmp_path, "--check", ".")
    assert text.code == 2 and "broken.py: failed: line 2, column 0" in text.out
    assert text.out.endswith("0 files would be transformed, 0 skipped, 0 warnings, 1 failure.\n")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert codemod(tmp_path).code == 2
    missing = codemod(tmp_path, "nowhere")
    assert missing.code == 2 and "no such file or directory: nowhere" in missing.err
    assert codemod(tmp_path, ".", "--report", "xml").code == 2


def test_the_main_module_runs_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"point.py": POINT})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pytreekit.migrate", "--check", "point.py"])
    monkeypatch.delitem(sys.modules, "pytreekit.migrate.__main__", raising=False)  # run afresh
    with pytest.raises(SystemExit) as exit:
        runpy.run_module("pytreekit.migrate", run_name="__main__")
    assert exit.value.code == 1


def test_python_dash_m_runs_the_codemod(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": POINT})
    result = subprocess.run(
        [sys.executable, "-m", "pytreekit.migrate", "--check", "point.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_ENVIRONMENT,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert "Point (register_pytree_node_class): rewritten" in result.stdout


def test_import_pytreekit_never_imports_libcst() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import sys, pytreekit; print('libcst' in sys.modules)"],
        capture_output=True,
        text=True,
        env=_ENVIRONMENT,
        timeout=300,
    )
    assert result.stdout.strip() == "False", result.stderr


def test_without_libcst_the_codemod_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "libcst" else find_spec(name, *args),
    )
    saved = sys.modules.pop("pytreekit.migrate")
    try:
        with pytest.raises(ModuleNotFoundError, match=r'pip install "libcst>=1\.5"') as e:
            importlib.import_module("pytreekit.migrate")
        # pytreekit is on no package index: the extra installs from a clone only.
        assert 'pip install ".[migrate]"' in str(e.value)
        assert "pytreekit[migrate]" not in str(e.value)
    finally:
        sys.modules["pytreekit.migrate"] = saved
