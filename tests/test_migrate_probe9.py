"""Defects the codemod9 probe found (a hierarchy over two files half written, owners lost, a
temporary file left, a TODO that moves, a truncated excerpt re-parsed, hard links split): each
test fails without its fix."""

from __future__ import annotations

import errno
import os
import signal
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import require

require("libcst")

from migrate_helpers import by_class, codemod, hand_registered, python_in, write  # noqa: E402

import pytreekit.migrate._cli as cli  # noqa: E402
import pytreekit.migrate._rewrite as rewrite_module  # noqa: E402

# -- r1. a hierarchy over two files is written whole or not at all -----------------------------

BASE = hand_registered()

SUB = hand_registered("Sub", bases="Base", imports="from pkg.a import Base")


def _hierarchy(tmp_path: Path) -> dict[str, bytes]:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": BASE, "pkg/b.py": SUB})
    return {name: (tmp_path / "pkg" / name).read_bytes() for name in ("a.py", "b.py")}


def _untouched(tmp_path: Path, before: dict[str, bytes]) -> None:
    """Both files as they were, no temporary file left, and the package imports."""
    for name, data in before.items():
        assert (tmp_path / "pkg" / name).read_bytes() == data, name
    assert not [p.name for p in (tmp_path / "pkg").iterdir() if p.name.endswith(".migrate")]
    run = python_in(tmp_path, "import jax, pkg.b; print(jax.tree_util.tree_leaves(pkg.b.Sub(1.5)))")
    assert run.returncode == 0 and run.stdout.strip() == "[1.5]", run.stderr


def _both_failed(result: Any, cause: str) -> None:
    assert result.code == 2, result.out + result.err
    failures = {entry["file"]: entry["error"] for entry in result.report["failed_files"]}
    assert cause in failures["pkg/a.py"] and cause in failures["pkg/b.py"], failures
    # the file withdrawn for the other one names it
    assert "pkg/b.py" in failures["pkg/a.py"] or "pkg/a.py" in failures["pkg/b.py"], failures
    assert result.report["summary"]["rewritten"] == 0, result.report["summary"]


def _withdrawn_with(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    stand_in: Any,
    cause: str,
) -> None:
    """With ``owner.name`` replaced by ``stand_in`` for the run, both files fail for ``cause``
    and are left as they were."""
    before = _hierarchy(tmp_path)
    monkeypatch.setattr(owner, name, stand_in)
    result = codemod(tmp_path, "--report", "json", ".")
    monkeypatch.undo()
    _both_failed(result, cause)
    _untouched(tmp_path, before)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_a_read_only_subclass_file_keeps_its_base_file_unwritten(tmp_path: Path) -> None:
    before = _hierarchy(tmp_path)
    (tmp_path / "pkg/b.py").chmod(0o444)
    try:
        result = codemod(tmp_path, "--report", "json", ".")
    finally:
        (tmp_path / "pkg/b.py").chmod(0o644)
    _both_failed(result, "read-only")
    _untouched(tmp_path, before)


def test_a_full_disk_fails_before_any_file_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync, calls = os.fsync, []

    def fsync(fd: int) -> None:  # the second temporary file does not fit
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    _withdrawn_with(tmp_path, monkeypatch, os, "fsync", fsync, os.strerror(errno.ENOSPC))


def test_a_subclass_file_changed_during_the_run_keeps_its_base_file_unwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _hierarchy(tmp_path)
    original = cli.rewrite

    def rewrite_then_edit(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        with (tmp_path / "pkg/b.py").open("a", encoding="utf-8") as file:
            file.write("# saved by an editor\n")
        return found

    monkeypatch.setattr(cli, "rewrite", rewrite_then_edit)
    result = codemod(tmp_path, "--report", "json", ".")
    _both_failed(result, "changed on disk while the codemod ran")
    before["b.py"] += b"# saved by an editor\n"
    _untouched(tmp_path, before)


def test_a_failed_rename_puts_the_replaced_files_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _hierarchy(tmp_path)
    real_replace, calls = os.replace, []

    def replace(source: Any, destination: Any) -> None:
        calls.append(Path(destination).name)
        if len(calls) == 2:  # the group's second rename; later ones restore the first file
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(destination))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    result = codemod(tmp_path, "--report", "json", ".")
    monkeypatch.undo()
    assert calls[:2] == ["b.py", "a.py"], calls  # the subclass's file first
    failures = {entry["file"]: entry["error"] for entry in result.report["failed_files"]}
    assert os.strerror(errno.EIO) in failures["pkg/a.py"], failures
    assert "pkg/a.py" in failures["pkg/b.py"], failures
    _untouched(tmp_path, before)


def test_a_subclass_file_that_could_not_be_rewritten_withdraws_its_base_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _hierarchy(tmp_path)
    original = rewrite_module._apply

    def apply(module: Any, edits: Any) -> str:
        return "def broken(:\n" if module.display == "pkg/b.py" else original(module, edits)

    monkeypatch.setattr(rewrite_module, "_apply", apply)
    result = codemod(tmp_path, "--report", "json", ".")
    assert result.code == 2, result.out + result.err
    failures = {entry["file"]: entry["error"] for entry in result.report["failed_files"]}
    assert "does not compile" in failures["pkg/b.py"], failures
    assert "pkg/b.py" in failures["pkg/a.py"], failures
    _untouched(tmp_path, before)


@pytest.mark.parametrize("during", ["rename", "temporary"])
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_writes_waits_for_the_whole_hierarchy(
    number: signal.Signals, during: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hierarchy(tmp_path)
    real_replace, real_fsync, calls = os.replace, os.fsync, []

    def replace(source: Any, destination: Any) -> None:
        real_replace(source, destination)
        calls.append(Path(destination).name)
        if during == "rename" and len(calls) == 1:  # delivered at once, between two renames
            signal.raise_signal(number)

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if during == "temporary":  # the first temporary file is written, the second not yet
            signal.raise_signal(number)

    monkeypatch.setattr(os, "fsync", fsync)

    class Terminated(Exception):
        pass

    def terminate(_number: int, _frame: Any) -> None:
        raise Terminated

    monkeypatch.setattr(os, "replace", replace)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with pytest.raises((KeyboardInterrupt, Terminated)):
            codemod(tmp_path, ".")
    finally:
        signal.signal(signal.SIGTERM, previous)
    monkeypatch.undo()
    assert calls == ["b.py", "a.py"], calls
    assert "@pytree_class" in (tmp_path / "pkg/a.py").read_text(encoding="utf-8")
    assert "@pytree_class" in (tmp_path / "pkg/b.py").read_text(encoding="utf-8")
    run = python_in(tmp_path, "import jax, pkg.b; print(jax.tree_util.tree_leaves(pkg.b.Sub(1.5)))")
    assert run.returncode == 0 and run.stdout.strip() == "[1.5]", run.stderr


# -- r4. an interrupted write leaves no temporary file --------------------------------------------


def test_an_interrupt_while_writing_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _hierarchy(tmp_path)

    def replace(source: Any, destination: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        codemod(tmp_path, ".")
    monkeypatch.undo()
    _untouched(tmp_path, before)


# -- r5. a file with a second hard link -----------------------------------------------------------


def test_a_file_with_another_hard_link_is_left_with_a_reason(tmp_path: Path) -> None:
    before = _hierarchy(tmp_path)
    os.link(tmp_path / "pkg/b.py", tmp_path / "b_elsewhere.py")
    result = codemod(tmp_path, "--report", "json", "pkg")
    _both_failed(result, "hard links")
    assert (tmp_path / "b_elsewhere.py").read_bytes() == before["b.py"]
    assert os.path.samefile(tmp_path / "pkg/b.py", tmp_path / "b_elsewhere.py")
    _untouched(tmp_path, before)


# -- r6. a rewritten file keeps its owner, group, mode and extended attributes ---------------------


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="only a superuser can make a file of another user, and keep it theirs",
)
def test_a_file_written_as_root_keeps_its_owner_group_mode_and_xattrs(tmp_path: Path) -> None:
    _hierarchy(tmp_path)
    path = tmp_path / "pkg/a.py"
    os.chown(path, 1234, 2345)
    path.chmod(0o640)
    try:
        os.setxattr(path, "user.pytreekit_test", b"kept")
        xattrs = True
    except (AttributeError, OSError):  # a file system without user xattrs (tmpfs before 6.6)
        xattrs = False
    result = codemod(tmp_path, ".")
    assert result.code == 0, result.out + result.err
    assert "@pytree_class" in path.read_text(encoding="utf-8")
    status = path.stat()
    assert (status.st_uid, status.st_gid) == (1234, 2345)
    assert stat.S_IMODE(status.st_mode) == 0o640
    if xattrs:
        assert os.getxattr(path, "user.pytreekit_test") == b"kept"


# -- r2. a PTK110 comment cites a line its own run moves ---------------------------------------

TWICE = """
import jax


class Loader:
    def __init__(self, train, val):
        self.train = train
        self.val = val

    def tree_flatten(self):
        return (self.train, self.val), {}

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.train, obj.val = children
        return obj


jax.tree_util.register_pytree_node(Loader, Loader.tree_flatten, Loader.tree_unflatten)


def test_it():
    class Compat(Loader):
        pass

    jax.tree_util.register_pytree_node(Compat, Compat.tree_flatten, Compat.tree_unflatten)
"""


def test_a_ptk110_comment_is_stable_so_check_passes_after_a_run(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": TWICE})
    first = codemod(tmp_path, "--report", "json", ".")
    assert first.code == 0, first.err
    assert by_class(first)["Loader"]["code"] == "PTK110"
    written = (tmp_path / "m.py").read_text(encoding="utf-8")
    assert "PTK110" in written and "function 'test_it'" in written, written
    again = codemod(tmp_path, "--check", ".")
    assert again.code == 0, again.out + again.err
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == written


# -- r3. an object.__setattr__ conversion longer than an excerpt ---------------------------------

LONG_CONVERSION = """
from dataclasses import dataclass

import jax
import jax.numpy as jnp


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class State:
    nominal_axis_unit: jnp.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "nominal_axis_unit",
            jnp.asarray(self.nominal_axis_unit, dtype=jnp.float32).reshape((3,)),
        )

    def tree_flatten(self):
        return (self.nominal_axis_unit,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


def test_a_long_conversion_gets_its_real_reason_not_ptk199(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": LONG_CONVERSION})
    entry = by_class(codemod(tmp_path, "--report", "json", "--diff", "."))["State"]
    assert entry["code"] == "PTK109", entry
    assert "nominal_axis_unit" in entry["reason"], entry


# -- the write step's other refusals and the xattr and thread cases ------------------------------

import threading  # noqa: E402

import pytreekit.migrate._write as write_module  # noqa: E402


def test_a_new_text_the_files_encoding_cannot_hold_withdraws_the_hierarchy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = write_module.encode

    def encode(module: Any, text: str) -> bytes:
        if text != module.source:  # the new text: as a latin-1 file meeting a character beyond
            raise UnicodeEncodeError("latin-1", "\u20ac", 0, 1, "ordinal not in range(256)")
        return real(module, text)

    _withdrawn_with(tmp_path, monkeypatch, write_module, "encode", encode, "ordinal not in range")


def test_a_file_changed_after_its_temporary_was_written_withdraws_the_hierarchy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, asked = write_module._refusal, []

    def refusal(module: Any) -> str | None:  # the second look, just before replacing
        asked.append(module)
        return real(module) if len(asked) <= 2 else "changed on disk while the codemod ran"

    cause = "changed on disk while the codemod ran"
    _withdrawn_with(tmp_path, monkeypatch, write_module, "_refusal", refusal, cause)
    assert not list(tmp_path.rglob("*.migrate"))


def test_a_file_removed_during_the_run_is_named_as_not_written(tmp_path: Path) -> None:
    write(tmp_path, {"gone.py": "x = 1\n"})
    module = type("M", (), {"path": tmp_path / "gone.py", "source": "x = 1\n"})()
    (tmp_path / "gone.py").unlink()
    why = write_module._refusal(module)  # type: ignore[arg-type]
    assert why is not None and why.startswith("not written: ") and "gone.py" in why
    assert write_module.explain(ValueError("plain words")) == "plain words"


@pytest.mark.parametrize("failure", [errno.ENOTSUP, errno.EIO])
def test_extended_attributes_a_file_system_lacks_are_skipped_others_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: int
) -> None:
    if not hasattr(os, "listxattr"):
        pytest.skip("no extended attributes on this platform")
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")

    def refuse(*args: Any) -> Any:
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(os, "listxattr", refuse)
    if failure == errno.ENOTSUP:
        write_module._copy_xattrs(str(tmp_path / "a"), str(tmp_path / "b"))  # nothing to keep
    else:
        with pytest.raises(OSError, match=os.strerror(failure)):
            write_module._copy_xattrs(str(tmp_path / "a"), str(tmp_path / "b"))
    monkeypatch.setattr(os, "listxattr", lambda path: ["user.k"])
    monkeypatch.setattr(os, "getxattr", lambda path, name: b"v")
    monkeypatch.setattr(os, "setxattr", refuse)
    if failure == errno.ENOTSUP:
        write_module._copy_xattrs(str(tmp_path / "a"), str(tmp_path / "b"))
    else:
        with pytest.raises(OSError, match=os.strerror(failure)):
            write_module._copy_xattrs(str(tmp_path / "a"), str(tmp_path / "b"))


def test_writing_from_another_thread_leaves_the_signal_handlers_alone() -> None:
    seen = []

    def write_in_thread() -> None:
        with write_module._signals_held():
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=write_in_thread)
    thread.start()
    thread.join()
    assert seen == [before]
