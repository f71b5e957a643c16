"""The codemod and the files it reads and writes: every byte it does not edit stays as it was
(encodings declared by PEP 263, a BOM, line endings), a file it cannot read, decode or write is
left as it was with the reason, the run goes on past it, the report always ends with the count
line, and the exit codes tell "would change" (1) from "failed" (2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require

import pytreekit

require("libcst")

import libcst as cst  # noqa: E402
from migrate_helpers import FIXTURES, codemod, load  # noqa: E402

import pytreekit.migrate._analyze as analyze  # noqa: E402
import pytreekit.migrate._cli as cli  # noqa: E402
from pytreekit.migrate._scan import scan  # noqa: E402

POINT = textwrap.dedent(
    """\
    import jax


    @jax.tree_util.register_pytree_node_class
    class Point:
        \"\"\"A point; {text}\"\"\"

        def __init__(self, x, y):
            self.x = x
            self.y = y

        def tree_flatten(self):
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
    """
)


def _point(text: str = "plain") -> str:
    return POINT.replace("{text}", text)


def test_a_declared_encoding_is_read_and_written_back(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\n" + _point("café, naïve")
    (tmp_path / "point.py").write_bytes(source.encode("latin-1"))
    result = codemod(tmp_path, "point.py")
    assert result.code == 0, result.out
    data = (tmp_path / "point.py").read_bytes()
    assert "café, naïve".encode("latin-1") in data  # not replaced, not UTF-8
    text = data.decode("latin-1")
    assert "@pytree_class(eq=False, repr=False)" in text and "tree_flatten" not in text
    module = load(tmp_path / "point.py")
    assert module.Point.__doc__ == "A point; café, naïve"
    assert codemod(tmp_path, "--check", "point.py").code == 0  # a second run: nothing to do


def test_a_bom_is_kept(tmp_path: Path) -> None:
    (tmp_path / "point.py").write_bytes(b"\xef\xbb\xbf" + _point("\u00e9").encode("utf-8"))
    assert codemod(tmp_path, "point.py").code == 0
    data = (tmp_path / "point.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbffrom pytreekit import pytree_class\n")
    assert b"@pytree_class" in data and "\u00e9".encode() in data


def test_windows_line_endings_are_kept(tmp_path: Path) -> None:
    (tmp_path / "point.py").write_bytes(_point().replace("\n", "\r\n").encode())
    assert codemod(tmp_path, "point.py").code == 0
    data = (tmp_path / "point.py").read_bytes()
    assert b"@pytree_class" in data and data.count(b"\n") == data.count(b"\r\n")


def test_bytes_that_are_not_the_declared_encoding_leave_the_file_as_it_was(
    tmp_path: Path,
) -> None:
    bad = _point("caf\xe9").encode("latin-1")  # no cookie: UTF-8, and \xe9 is not
    (tmp_path / "bad.py").write_bytes(bad)
    (tmp_path / "good.py").write_text(_point(), encoding="utf-8")
    result = codemod(tmp_path, ".")
    assert result.code == 2
    assert (tmp_path / "bad.py").read_bytes() == bad
    assert "@pytree_class" in (tmp_path / "good.py").read_text()  # the run went on
    assert "bad.py: failed: not decoded: byte " in result.out
    assert "is not valid utf-8; nothing changed there" in result.out
    assert result.out.endswith("1 file transformed, 0 skipped, 0 warnings, 1 failure.\n")


def test_an_unknown_encoding_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    data = ("# -*- coding: klingon -*-\n" + _point()).encode()
    (tmp_path / "point.py").write_bytes(data)
    result = codemod(tmp_path, "point.py", "--report", "json")
    assert result.code == 2
    [failure] = result.report["failed_files"]
    assert failure["file"] == "point.py" and "unknown encoding" in failure["error"]
    assert (tmp_path / "point.py").read_bytes() == data


def test_a_read_only_file_is_not_written_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(_point(), encoding="utf-8")
    (tmp_path / "b.py").write_text(_point().replace("Point", "Other"), encoding="utf-8")
    before = (tmp_path / "a.py").read_bytes()
    os.chmod(tmp_path / "a.py", 0o444)
    try:
        result = codemod(tmp_path, ".")
    finally:
        os.chmod(tmp_path / "a.py", 0o644)
    assert result.code == 2
    assert (tmp_path / "a.py").read_bytes() == before
    assert "@pytree_class" in (tmp_path / "b.py").read_text()
    assert "a.py: failed: read-only: not written (make it writable and run again)" in result.out
    assert result.out.endswith("1 file transformed, 0 skipped, 0 warnings, 1 failure.\n")
    assert codemod(tmp_path, ".").code == 0  # writable again: done on the next run


def test_a_failed_write_leaves_every_byte_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(_point(), encoding="utf-8")
    (tmp_path / "b.py").write_text(_point().replace("Point", "Other"), encoding="utf-8")
    before = (tmp_path / "a.py").read_bytes()
    replace = os.replace

    def failing(source: str, target: str | Path) -> None:
        if Path(target).name == "a.py":
            raise PermissionError(13, "Permission denied", str(target))
        replace(source, target)

    monkeypatch.setattr(cli.os, "replace", failing)
    result = codemod(tmp_path, ".", "--report", "json")
    assert result.code == 2
    assert (tmp_path / "a.py").read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.py", "b.py"]
    [failure] = result.report["failed_files"]
    assert failure["file"] == "a.py"
    assert failure["error"].startswith("not written: Permission denied")
    assert result.report["summary"]["files_changed"] == ["b.py"]
    assert result.report["summary"]["transformed"] == 1


def test_the_mode_of_a_rewritten_file_is_kept(tmp_path: Path) -> None:
    (tmp_path / "point.py").write_text(_point(), encoding="utf-8")
    os.chmod(tmp_path / "point.py", 0o750)
    assert codemod(tmp_path, "point.py").code == 0
    assert (tmp_path / "point.py").stat().st_mode & 0o777 == 0o750


def test_a_generated_file_is_skipped(tmp_path: Path) -> None:
    data = "# @generated by a tool\n" + _point()
    (tmp_path / "point.py").write_text(data, encoding="utf-8")
    result = codemod(tmp_path, ".")
    assert result.code == 0
    assert (tmp_path / "point.py").read_text() == data
    assert "point.py: skipped (marked @generated)" in result.out
    assert result.out.endswith("0 files transformed, 1 skipped, 0 warnings, 0 failures.\n")


def test_exit_codes_tell_would_change_from_failed(tmp_path: Path) -> None:
    (tmp_path / "point.py").write_text(_point(), encoding="utf-8")
    assert codemod(tmp_path, "--check", "point.py").code == 1
    (tmp_path / "broken.py").write_text("def f(:  # register_pytree_node\n", encoding="utf-8")
    assert codemod(tmp_path, "--check", ".").code == 2  # a failure outranks "would change"
    result = codemod(tmp_path, "--check", "point.py")
    assert result.out.endswith("1 file would be transformed, 0 skipped, 0 warnings, 0 failures.\n")


def test_verify_before_a_path_takes_the_default_command(tmp_path: Path) -> None:
    assert cli._arguments(["--verify", "src/pkg"]) == ["--verify=python -m pytest", "src/pkg"]
    assert cli._arguments(["--verify=pytest -x", "src"]) == ["--verify=pytest -x", "src"]
    parsed = cli._parser().parse_args(cli._arguments(["--verify", "src/pkg"]))
    assert parsed.verify == "python -m pytest" and parsed.paths == [Path("src/pkg")]


def test_exclude_skips_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "point.py").write_text(_point(), encoding="utf-8")
    (tmp_path / "point.py").write_text(_point(), encoding="utf-8")
    (tmp_path / "skip_me.py").write_text(_point(), encoding="utf-8")
    result = codemod(tmp_path, ".", "--exclude", "vendored", "--exclude", "skip_*.py")
    assert result.code == 0
    assert "register_pytree" in (tmp_path / "vendored" / "point.py").read_text()
    assert "register_pytree" in (tmp_path / "skip_me.py").read_text()
    assert "register_pytree" not in (tmp_path / "point.py").read_text()
    assert "Summary: 1 file scanned" in result.out


def test_worker_processes_write_what_one_process_writes(tmp_path: Path) -> None:
    """``-j 2`` (forked workers, in a process of its own here: the test process runs JAX)."""
    files = {f"m{n}.py": _point().replace("Point", f"Point{n}") for n in range(4)}
    files["left.py"] = _point().replace("(self.x, self.y), None", "(self.x,), {'y': self.y}")
    for directory in ("one", "two"):
        (tmp_path / directory).mkdir()
        for name, text in files.items():
            (tmp_path / directory / name).write_text(text, encoding="utf-8")
    environment = {
        **os.environ,
        "PYTHONPATH": str(Path(pytreekit.__file__).resolve().parent.parent),
        "JAX_PLATFORMS": "cpu",
    }
    outputs = []
    for directory, jobs in (("one", "1"), ("two", "2")):
        run = subprocess.run(
            [sys.executable, "-m", "pytreekit.migrate", "-j", jobs, "."],
            cwd=tmp_path / directory,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""  # no progress line: not a terminal
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].endswith("5 files transformed, 0 skipped, 1 warning, 0 failures.\n")
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_statement_lines_agree_with_libcst(tmp_path: Path) -> None:
    """The lines of top-level statements come from Python's parser; LibCST's code agrees."""
    sources = [path.read_text(encoding="utf-8") for path in (FIXTURES / "real").glob("*.py")]
    sources.append("# header\n\nimport a; import b\n\n\n@d\n# between\nclass C: pass\nx = 1  # c\n")
    for number, text in enumerate(sources):
        (tmp_path / f"m{number}.py").write_text(text, encoding="utf-8")
    project = scan([tmp_path])
    for module in project.modules:
        project.parse(module)  # the pre-filter left some unparsed
        assert module.tree is not None
        expected, line = (
            [],
            1 + sum(module.tree.code_for_node(e).count("\n") for e in module.tree.header),
        )
        for statement in module.tree.body:
            expected.append(line)
            line += module.tree.code_for_node(statement).count("\n")
        assert module.statement_lines() == expected, module.display
        assert isinstance(module.tree, cst.Module)


def test_a_progress_line_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "point.py").write_text(_point(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(["--check", "point.py"]) == 1
    err = capsys.readouterr().err
    assert "\rpytreekit.migrate: 1/1 modules parsed" in err
    assert "\rpytreekit.migrate: 1/1 modules rewritten" in err
    assert err.endswith("\r\033[K")  # the line is cleared before the report


def test_a_bug_of_the_codemod_on_one_class_leaves_it_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(_point(), encoding="utf-8")
    (tmp_path / "b.py").write_text(_point().replace("Point", "Other"), encoding="utf-8")
    flatten = analyze._Analysis._flatten

    def failing(self: object, info: object, registration: object) -> object:
        if getattr(info, "name", "") == "Point":
            raise KeyError("boom")
        return flatten(self, info, registration)  # type: ignore[arg-type]

    monkeypatch.setattr(analyze._Analysis, "_flatten", failing)
    result = codemod(tmp_path, ".", "--report", "json")
    assert result.code == 0
    entries = {e["class"]: e for e in result.report["registrations"]}
    assert entries["Point"]["code"] == "PTK199"
    assert "the codemod failed on it (KeyError: 'boom')" in entries["Point"]["reason"]
    assert entries["Other"]["code"] is None
    assert "@pytree_class" in (tmp_path / "b.py").read_text()
