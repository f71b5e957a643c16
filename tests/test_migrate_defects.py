"""Defects found on real repositories and crafted files: each left a file broken, changed
behaviour silently, hung, or misreported. Every test here fails without its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import pytest
from conftest import require

require("libcst")

from migrate_helpers import codemod, hand_registered, load, write  # noqa: E402

import pytreekit.migrate._codes as migrate_codes  # noqa: E402

CLASS_A = hand_registered("A", style="from")


def _report(directory: Path, *paths: str) -> list[dict[str, Any]]:
    result = codemod(directory, "--check", "--report", "json", *paths)
    return list(result.report["registrations"])


# -- 1. a class registered again (under try, with, if, in a function) keeps its methods ---------

SECOND = {
    "try": "try:\n    register_pytree_node_class(A)\nexcept ValueError:\n    pass\n",
    "with": (
        "import contextlib\nwith contextlib.suppress(ValueError):\n"
        "    register_pytree_node_class(A)\n"
    ),
    "if": (
        "import os\nif os.environ.get('NEVER_SET_BY_THE_TESTS'):\n"
        "    register_pytree_node_class(A)\n"
    ),
    "plain": "register_pytree_node_class(A)\n",
    "function": "def again():\n    register_pytree_node_class(A)\n",
}


@pytest.mark.parametrize("where", sorted(SECOND))
def test_a_class_registered_again_is_left_and_imports(where: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": CLASS_A + "\n\n" + SECOND[where]})
    before = (tmp_path / "mod.py").read_bytes()
    result = codemod(tmp_path, "--comments", "never", "--report", "json", "mod.py")
    assert (tmp_path / "mod.py").read_bytes() == before
    decorator = result.report["registrations"][0]
    assert (decorator["verdict"], decorator["code"]) == ("left", "PTK110")
    assert "registered 2 times" in decorator["reason"]
    if where == "plain":
        return  # the original raises on import too: a file left as it is says nothing more
    module = load(tmp_path / "mod.py")
    if where == "function":
        with pytest.raises(ValueError):
            module.again()


def test_the_outcome_of_a_file_does_not_depend_on_the_other_files(tmp_path: Path) -> None:
    # two top-level modules of one name (two roots): each class is its own file's
    for name in ("one", "two"):
        write(tmp_path / name, {"double.py": CLASS_A})
    alone = _report(tmp_path, "one")
    together = _report(tmp_path, "one", "two")
    assert [e["verdict"] for e in alone] == ["rewritten"]
    assert [(e["file"], e["verdict"]) for e in together] == [
        ("one/double.py", "rewritten"),
        ("two/double.py", "rewritten"),
    ]


def test_an_import_of_a_module_two_files_define_is_not_resolved(tmp_path: Path) -> None:
    for name in ("one", "two"):
        write(
            tmp_path / name,
            {"double.py": "class A:\n    def __init__(self, x):\n        self.x = x\n"},
        )
    write(
        tmp_path / "one",
        {
            "user.py": """
            from jax.tree_util import register_pytree_node
            from double import A

            register_pytree_node(A, lambda a: ((a.x,), None), lambda _, c: A(*c))
            """
        },
    )
    entries = _report(tmp_path, "one", "two")
    assert (entries[0]["verdict"], entries[0]["code"]) == ("left", "PTK103")
    assert "defined by two scanned files named double" in entries[0]["reason"]


def test_a_method_an_importing_module_calls_is_kept(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "mod.py": CLASS_A,
            "user.py": "from mod import A\n\nflatten = A.tree_flatten\n",
        },
    )
    codemod(tmp_path, "mod.py", "user.py")
    assert "def tree_flatten" in (tmp_path / "mod.py").read_text()
    load(tmp_path / "user.py")


# -- 2. every return of __init__ is a path ------------------------------------------------------

INIT = """
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class H:
    def __init__(self, x, y=None):
{body}

    def tree_flatten(self):
        return (self.x, self.y), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""

EARLY = {
    "if": "self.x = x\nif y is None:\n    return\nself.y = y",
    "else": "self.x = x\nif y is not None:\n    pass\nelse:\n    return\nself.y = y",
    "for": "self.x = x\nfor _ in range(int(y is None)):\n    return\nself.y = y",
    "with": "self.x = x\nimport contextlib\nwith contextlib.nullcontext():\n    return\nself.y = y",
    "nested": "if y is None:\n    self.x = x\n    return\n    self.y = y\nself.x = x\nself.y = y",
}


@pytest.mark.parametrize("name", sorted(EARLY))
def test_an_early_return_of_init_is_not_proven(name: str, tmp_path: Path) -> None:
    body = "\n".join(f"        {line}" for line in EARLY[name].splitlines())
    write(tmp_path, {"early.py": INIT.format(body=body)})
    entry = _report(tmp_path, "early.py")[0]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK108"), entry["reason"]
    assert "may return early" in entry["reason"] or "every path" in entry["reason"]


@pytest.mark.parametrize(
    "body",
    [
        "self.x = x\nself.y = y\nreturn",
        "self.x = x\nif y is None:\n    self.y = y\n    return\nelse:\n    self.y = y",
        "self.x = x\nself.y = y\n\ndef later():\n    return 1",
    ],
)
def test_a_return_that_ends_init_is_proven(body: str, tmp_path: Path) -> None:
    indented = "\n".join(f"        {line}" if line else "" for line in body.splitlines())
    write(tmp_path, {"late.py": INIT.format(body=indented)})
    entry = _report(tmp_path, "late.py")[0]
    assert entry["verdict"] == "rewritten", entry["reason"]


# -- 3. a registrar bound conditionally is a conditional registration ---------------------------

FALLBACKS = {
    "try": (
        "try:\n    from jax.tree_util import register_pytree_node_class\n"
        "except ImportError:\n    def register_pytree_node_class(cls):\n        return cls\n"
    ),
    "if": (
        "import os\nif os.environ.get('WITH_JAX', '1'):\n"
        "    from jax.tree_util import register_pytree_node_class\n"
        "else:\n    register_pytree_node_class = lambda cls: cls\n"
    ),
    "module": ("try:\n    import jax.tree_util as jtu\nexcept ImportError:\n    jtu = None\n"),
    "assigned": (
        "from jax.tree_util import register_pytree_node_class\n\n"
        "def _identity(cls):\n    return cls\n\n"
        "register_pytree_node_class = _identity\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_a_registrar_bound_conditionally_leaves_the_file(name: str, tmp_path: Path) -> None:
    body = CLASS_A.split("\n\n\n", 1)[1]
    if name == "module":
        body = body.replace("@register_pytree_node_class", "@jtu.register_pytree_node_class")
    write(tmp_path, {"opt.py": FALLBACKS[name] + "\n\n" + body})
    before = (tmp_path / "opt.py").read_bytes()
    result = codemod(tmp_path, "--comments", "never", "--report", "json", "opt.py")
    assert (tmp_path / "opt.py").read_bytes() == before
    entry = result.report["registrations"][0]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK102"), entry["reason"]
    assert "may not be JAX's" in entry["reason"]


def test_a_registrar_imported_plainly_is_still_rewritten(tmp_path: Path) -> None:
    # an unrelated try block, and the API imported inside a function, change nothing
    extra = "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n"
    write(tmp_path, {"mod.py": CLASS_A + "\n\n" + extra})
    assert [e["verdict"] for e in _report(tmp_path, "mod.py")] == ["rewritten"]


# -- 4. what is not a regular file is skipped, never read -----------------------------------------


def _run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The codemod in a process of its own, with a timeout: the defect was a hang."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "pytreekit.migrate", "--report", "json", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("given", ["directory", "file"])
def test_a_fifo_is_skipped_not_read(given: str, tmp_path: Path) -> None:
    write(tmp_path / "d", {"good.py": CLASS_A})
    os.mkfifo(tmp_path / "d" / "pipe.py")
    os.symlink("/dev/null", tmp_path / "d" / "device.py")
    paths = ["d"] if given == "directory" else ["d/good.py", "d/pipe.py", "d/device.py"]
    result = _run(tmp_path, *paths)
    report = json.loads(result.stdout)
    assert result.returncode == 0, result.stderr
    skipped = {entry["file"]: entry["reason"] for entry in report["skipped_files"]}
    assert skipped == {
        "d/pipe.py": "not a regular file (a FIFO)",
        "d/device.py": "not a regular file (a character device)",
    }
    assert [e["verdict"] for e in report["registrations"]] == ["rewritten"]
    assert "@pytree_class" in (tmp_path / "d" / "good.py").read_text()


def test_a_dangling_link_is_named_by_its_own_name(tmp_path: Path) -> None:
    write(tmp_path / "d", {"good.py": CLASS_A})
    os.symlink("nowhere.py", tmp_path / "d" / "dangling.py")
    result = _run(tmp_path, "d")
    report = json.loads(result.stdout)
    assert result.returncode == 0, result.stderr
    assert report["skipped_files"] == [
        {"file": "d/dangling.py", "reason": "a dangling symbolic link (to nowhere.py)"}
    ]
    assert "nowhere" not in result.stderr


# -- 5. a file this Python does not compile is left, and no unwritten file counts as rewritten ---


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            "type Alias = int\n",
            marks=pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 syntax"),
        ),
        "def f():\n    pass\nreturn\n",  # LibCST parses it; no Python compiles it
    ],
)
def test_a_module_this_python_does_not_compile_is_left(code: str, tmp_path: Path) -> None:
    write(tmp_path, {"new.py": CLASS_A + "\n\n" + code})
    before = (tmp_path / "new.py").read_bytes()
    result = codemod(tmp_path, "--report", "json", "new.py")
    report = result.report
    assert (tmp_path / "new.py").read_bytes() == before
    assert result.code == 2  # a file nothing looked at fails the run, as one not parsed does
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    [failed] = report["failed_files"]
    assert failed["error"].startswith(f"does not compile on this Python ({version}): left as it")
    assert report["registrations"] == []
    assert (report["summary"]["rewritten"], report["summary"]["transformed"]) == (0, 0)
    assert "please report" not in result.out + result.err


def test_a_rewrite_whose_file_is_not_written_is_not_counted(tmp_path: Path) -> None:
    write(tmp_path, {"ro.py": CLASS_A, "rw.py": CLASS_A.replace("class A", "class B")})
    (tmp_path / "ro.py").chmod(0o444)
    result = codemod(tmp_path, "--report", "json", "ro.py", "rw.py")
    summary = result.report["summary"]
    verdicts = {e["file"]: e["verdict"] for e in result.report["registrations"]}
    assert verdicts == {"ro.py": "not written", "rw.py": "rewritten"}
    assert (summary["rewritten"], summary["not_written"], summary["transformed"]) == (1, 1, 1)
    text = codemod(tmp_path, "ro.py").out
    assert "ro.py:4:1: A (register_pytree_node_class): not written: its file failed" in text
    assert "0 rewritten, 1 not written" in text


# -- 6. line endings: kept to the last byte, and --diff applies with patch -----------------------

CALL_LAST = (
    "from jax.tree_util import register_pytree_node\n\n\nclass E:\n    def __init__(self, x):\n"
    "        self.x = x\n\n\n"
    "register_pytree_node(E, lambda e: ((e.x,), None), lambda _, c: E(*c))\n"
)
ENDINGS = {
    "cr": CALL_LAST.replace("\n", "\r"),
    "crlf": CALL_LAST.replace("\n", "\r\n"),
    "lf": CALL_LAST,
    "cr_no_final": CALL_LAST.replace("\n", "\r")[:-1],
    "lf_no_final": CALL_LAST[:-1],
    "form_feed": CALL_LAST.replace("\n\n\nclass", "\n\n\x0c\nclass"),
    "decorator_cr": CLASS_A.lstrip("\n").replace("\n", "\r"),
}


def _written(name: str, tmp_path: Path) -> bytes:
    """What the codemod writes over ``ENDINGS[name]``, in ``tmp_path / "written"``."""
    (tmp_path / "written").mkdir()
    (tmp_path / "written" / "mod.py").write_bytes(ENDINGS[name].encode())
    assert codemod(tmp_path / "written", "mod.py").code == 0
    return (tmp_path / "written" / "mod.py").read_bytes()


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_line_endings_are_kept(name: str, tmp_path: Path) -> None:
    source = ENDINGS[name]
    written = _written(name, tmp_path)
    assert written != source.encode()
    ending = "\r\n" if "\r\n" in source else "\r" if "\r" in source else "\n"
    assert written.endswith(ending.encode()) == source.endswith(ending)
    assert "@pytree_class" in written.decode()
    assert not set(written.decode().replace(ending, "")) & {"\r", "\n"}  # one kind of ending


@pytest.mark.skipif(shutil.which("patch") is None, reason="the patch program is not installed")
@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_the_diff_applies_with_patch(name: str, tmp_path: Path) -> None:
    written = _written(name, tmp_path)
    (tmp_path / "patched").mkdir()
    (tmp_path / "patched" / "mod.py").write_bytes(ENDINGS[name].encode())
    result = codemod(tmp_path / "patched", "--diff", "mod.py")
    (tmp_path / "mod.diff").write_bytes(result.out.encode())
    subprocess.run(
        ["patch", "-p1", "--quiet", "--batch", "-i", str(tmp_path / "mod.diff")],
        cwd=tmp_path / "patched",
        check=True,
        timeout=60,
    )
    assert (tmp_path / "patched" / "mod.py").read_bytes() == written


def test_the_diff_marks_a_last_line_without_newline(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(CALL_LAST[:-1])
    (tmp_path / "b.py").write_text(CALL_LAST.replace("E", "F")[:-1])
    out = codemod(tmp_path, "--diff", "a.py", "b.py").out
    assert out.count("\\ No newline at end of file\n") == 4
    assert "\n--- a/b.py\n" in out  # the next header on a line of its own


# -- 7. a link to a file outside the given paths is not written through ---------------------------


def test_a_link_outside_the_given_paths_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere", {"outside.py": CLASS_A})
    write(tmp_path / "pkg", {"inside.py": CLASS_A.replace("class A", "class B")})
    os.symlink("../elsewhere/outside.py", tmp_path / "pkg" / "link.py")
    before = (tmp_path / "elsewhere" / "outside.py").read_bytes()
    report = codemod(tmp_path, "--report", "json", "pkg").report
    assert (tmp_path / "elsewhere" / "outside.py").read_bytes() == before
    [skipped] = report["skipped_files"]
    assert skipped["file"] == "pkg/link.py"
    assert "outside the given paths: not written through" in skipped["reason"]
    assert [e["file"] for e in report["registrations"]] == ["pkg/inside.py"]
    # given both, the file is rewritten once, by its own path
    report = codemod(tmp_path, "--report", "json", "pkg", "elsewhere").report
    assert report["skipped_files"] == []
    # (pkg/inside.py was rewritten by the first run)
    assert [e["file"] for e in report["registrations"]] == ["elsewhere/outside.py"]
    assert "@pytree_class" in (tmp_path / "elsewhere" / "outside.py").read_text()


# -- 7. a comment keeps its whole reason, wrapped; a pinned one is read back whole ---------------

EXTRA = '        self.remember_in_a_registry_with_a_long_name(x, "and a long label")\n'
LONG = CLASS_A.replace("        self.x = x\n", "        self.x = x\n" + EXTRA)


@pytest.mark.parametrize("width", ["60", "79", "88"])
def test_a_long_reason_is_wrapped_not_dropped(width: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": LONG})
    report = codemod(tmp_path, "--line-length", width, "--report", "json", "mod.py").report
    [entry] = report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK108")
    lines = (tmp_path / "mod.py").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "TODO[pytreekit-migrate]" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("@"))
    comment = lines[start:end]
    assert len(comment) > 1 and all(line.startswith("#   ") for line in comment[1:])
    words = [word for line in comment for word in line.split() if not word.startswith("#")]
    assert " ".join(words[2:]) == " ".join(entry["reason"].split())  # after the tag and code
    # every line within the width but a word longer than it
    assert all(len(line) <= int(width) or " " not in line.strip("# ") for line in comment)
    before = (tmp_path / "mod.py").read_text()
    assert codemod(tmp_path, "--line-length", width, "mod.py").code == 0
    assert (tmp_path / "mod.py").read_text() == before  # a second run changes nothing


def test_a_wrapped_comment_goes_whole_once_the_class_is_rewritten(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": LONG})
    codemod(tmp_path, "mod.py")
    assert "#   " in (tmp_path / "mod.py").read_text()
    text = (tmp_path / "mod.py").read_text()
    fixed = text.replace(EXTRA, "")
    (tmp_path / "mod.py").write_text(fixed)
    codemod(tmp_path, "mod.py")
    after = (tmp_path / "mod.py").read_text()
    assert "@pytree_class" in after and "#" not in after


def test_a_pinned_verification_comment_is_read_back_whole(tmp_path: Path) -> None:
    reason = (
        "leaves differ for A(1.0): [float32[] 1.0] against [float32[] 2.0] after the round "
        "trip through flatten and unflatten; delete this comment to try again"
    )
    comment = migrate_codes.comment("PTK120", reason, 60)
    joined = " ".join(comment.replace("\n#   ", " ").split())
    assert comment.count("\n") >= 2 and joined.endswith("delete this comment to try again")
    assert all(len(line) <= 60 for line in comment.splitlines())
    source = CLASS_A.replace("@register", comment + "\n@register")
    write(tmp_path, {"mod.py": source})
    before = (tmp_path / "mod.py").read_text()
    report = codemod(tmp_path, "--line-length", "60", "--report", "json", "mod.py").report
    [entry] = report["registrations"]
    assert (entry["code"], entry["reason"]) == ("PTK120", reason)
    assert (tmp_path / "mod.py").read_text() == before


# -- 8. an import another module takes from the rewritten one stays -----------------------------


@pytest.mark.parametrize(
    "form",
    [
        "from src import register_pytree_node_class",
        "from src import (\n    A,\n    register_pytree_node_class,\n)",
        "import src\nregister_pytree_node_class = src.register_pytree_node_class",
        "from src import *",
    ],
)
def test_an_import_another_module_reexports_is_kept(form: str, tmp_path: Path) -> None:
    body = CLASS_A.split("\n\n\n", 1)[1].replace("class A", "class Other")
    user = form + "\n\n\n" + body
    write(tmp_path, {"src.py": CLASS_A, "user.py": user, "alone.py": CLASS_A})
    codemod(tmp_path, "src.py", "user.py", "alone.py")
    assert "@pytree_class" in (tmp_path / "src.py").read_text()
    load(tmp_path / "user.py")  # its import from src still works
    # where no other module names the rewritten one, the import the rewrite freed goes
    assert "register_pytree_node_class" not in (tmp_path / "alone.py").read_text()


# -- 9. an API's name the imports do not tie to JAX is reported, not passed over -----------------

LOOKALIKES = {
    "star": ("from jax.tree_util import *\n", "reached through 'from jax.tree_util import *'"),
    "reexport": ("from src import register_pytree_node_class\n", "imported from src"),
    "own": (
        "def register_pytree_node_class(cls):\n    return cls\n",
        "defined in this module",
    ),
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_a_registration_api_not_tied_to_jax_is_reported(name: str, tmp_path: Path) -> None:
    head, why = LOOKALIKES[name]
    body = CLASS_A.split("\n\n\n", 1)[1]
    write(tmp_path, {"src.py": "from jax.tree_util import register_pytree_node_class\n"})
    write(tmp_path, {"mod.py": head + "\n\n" + body})
    before = (tmp_path / "mod.py").read_bytes()
    result = codemod(tmp_path, "--comments", "never", "--report", "json", "mod.py", "src.py")
    assert (tmp_path / "mod.py").read_bytes() == before
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK102")
    assert entry["reason"].startswith(f"register_pytree_node_class is {why}")


def test_an_import_only_the_deleted_code_used_still_goes(tmp_path: Path) -> None:
    # another module naming this one, and using jax itself, does not keep an unused import
    decorated = "import jax\n\n\n" + CLASS_A.split("\n\n\n", 1)[1].replace(
        "@register_pytree_node_class", "@jax.tree_util.register_pytree_node_class"
    )
    user = "import jax\nfrom src import A\n\nleaves = jax.tree_util.tree_leaves(A(1.0))\n"
    write(tmp_path, {"src.py": decorated, "user.py": user})
    codemod(tmp_path, "src.py", "user.py")
    assert "import jax" not in (tmp_path / "src.py").read_text()
    load(tmp_path / "user.py")


# -- 10. lines are counted as Python counts them (a form feed or U+2028 is not a line break) ----

# a page break or a line separator in the text, above the registrations
BREAKS = {
    "form_feed": "\x0c",
    "vertical_tab": "\x0b",
    "next_line": "\x85",
    "line_separator": "\u2028",
    "paragraph_separator": "\u2029",
}
SUPPRESSED_AGAIN = (
    "import contextlib\n\nwith contextlib.suppress(ValueError):\n"
    "    register_pytree_node_class(A)\n"
)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_second_registration_below_a_page_break_is_counted(name: str, tmp_path: Path) -> None:
    # enough breaks that the second registration's statement would be read from A's body
    head = f'"""Models.{BREAKS[name] * 20}See the paper."""\n'
    source = head + CLASS_A + "\n\n" + SUPPRESSED_AGAIN + "\nDONE = True\n"
    write(tmp_path, {"mod.py": source})
    before = (tmp_path / "mod.py").read_bytes()
    result = codemod(tmp_path, "--comments", "never", "--report", "json", "mod.py")
    assert (tmp_path / "mod.py").read_bytes() == before
    codes = sorted(entry["code"] for entry in result.report["registrations"])
    assert codes == ["PTK102", "PTK110"]
    load(tmp_path / "mod.py")


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_noqa_is_read_from_its_own_line_below_a_page_break(name: str, tmp_path: Path) -> None:
    head = f'"""Models.{BREAKS[name]}See the paper."""\n'
    source = head + CLASS_A.replace("class A:", "class A:  # noqa: PTK")
    write(tmp_path, {"mod.py": source})
    before = (tmp_path / "mod.py").read_bytes()
    result = codemod(tmp_path, "--report", "json", "mod.py")
    assert (tmp_path / "mod.py").read_bytes() == before
    [entry] = result.report["registrations"]
    assert entry["verdict"] != "rewritten"


def test_every_registration_below_a_page_break_is_found(tmp_path: Path) -> None:
    second = CLASS_A.split("\n\n\n", 1)[1].replace("A", "B")
    page = "\n" + "\x0c" * 30 + "\n"  # one line to Python, 31 to str.splitlines
    write(tmp_path, {"mod.py": CLASS_A + page + second + page + second.replace("B", "C")})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    assert sorted(entry["class"] for entry in result.report["registrations"]) == ["A", "B", "C"]


def test_a_cr_only_file_keeps_the_import_a_left_class_uses(tmp_path: Path) -> None:
    # B's registration is left (its flatten is not plain), so its decorator stays, and so must
    # the import the decorator names
    left = CLASS_A.split("\n\n\n", 1)[1].replace("A", "B").replace("(self.x,)", "(self.x + 1,)")
    source = CLASS_A.lstrip("\n") + "\n\n" + left
    (tmp_path / "mod.py").write_bytes(source.replace("\n", "\r").encode())
    result = codemod(tmp_path, "--report", "json", "mod.py")
    verdicts = sorted(entry["verdict"] for entry in result.report["registrations"])
    assert verdicts == ["left", "rewritten"]
    written = (tmp_path / "mod.py").read_bytes()
    assert b"\n" not in written
    assert b"from jax.tree_util import register_pytree_node_class\r" in written
    load(tmp_path / "mod.py")


def test_a_module_of_comments_only_is_no_failure(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": "# tree_util.register_pytree_node(A, f, g)\n"})
    result = codemod(tmp_path, "--check", "mod.py")
    assert result.code == 0, result.out + result.err
    assert "0 failures" in result.out + result.err


# -- 11. a registration the codemod cannot tie to a class keeps every class it may register -----

HIDDEN_SECOND = {
    "loop": "for cls in (A,):\n    jax.tree_util.register_pytree_node_class(cls)\n",
    "alias": "register = jax.tree_util.register_pytree_node_class\nregister(A)\n",
    "map": "CLASSES = [A]\nlist(map(jax.tree_util.register_pytree_node_class, CLASSES))\n",
    "getattr": 'getattr(jax.tree_util, "register_pytree_node_class")(A)\n',
}


@pytest.mark.parametrize("name", sorted(HIDDEN_SECOND))
def test_a_second_registration_not_tied_to_the_class_leaves_it(name: str, tmp_path: Path) -> None:
    second = "import contextlib\n\nwith contextlib.suppress(ValueError):\n" + "".join(
        f"    {line}\n" for line in HIDDEN_SECOND[name].splitlines()
    )
    write(tmp_path, {"mod.py": "import jax\n" + CLASS_A + "\n\n" + second})
    load(tmp_path / "mod.py")
    result = codemod(tmp_path, "--comments", "never", "--report", "json", "mod.py")
    [first, *_] = result.report["registrations"]
    assert (first["class"], first["verdict"], first["code"]) == ("A", "left", "PTK110")
    load(tmp_path / "mod.py")


def test_a_registration_elsewhere_naming_no_class_of_the_module_leaves_it_alone(
    tmp_path: Path,
) -> None:
    other = "import jax\n\nfor cls in ():\n    jax.tree_util.register_pytree_node_class(cls)\n"
    write(tmp_path, {"mod.py": CLASS_A, "other.py": other})
    result = codemod(tmp_path, "--report", "json", "mod.py", "other.py")
    verdicts = {entry["class"]: entry["verdict"] for entry in result.report["registrations"]}
    assert verdicts == {"A": "rewritten", "cls": "left"}


ALIASED = """
import jax

_pytree_base = jax.tree_util.register_pytree_node_class


@_pytree_base
class B:
    def __init__(self, y):
        self.y = y

    def tree_flatten(self):
        return (self.y,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


def test_a_registration_through_an_alias_by_assignment_is_reported(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": ALIASED})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    [entry] = result.report["registrations"]
    assert (entry["class"], entry["verdict"], entry["code"]) == ("B", "left", "PTK102")
    assert "bound by an assignment" in entry["reason"]
    assert "_pytree_base" in entry["reason"]
    assert result.code == 1


def test_unsafe_keeps_a_base_whose_subclass_is_registered_through_an_alias(
    tmp_path: Path,
) -> None:
    sub = "\n\nregister = jax.tree_util.register_pytree_node_class\n\n\n@register\nclass Sub(A):\n"
    sub += "    pass\n"
    write(tmp_path, {"mod.py": "import jax\n" + CLASS_A + sub})
    result = codemod(tmp_path, "--unsafe", "--report", "json", "mod.py")
    verdicts = {entry["class"]: entry["verdict"] for entry in result.report["registrations"]}
    assert verdicts == {"A": "left", "Sub": "left"}
    module = load(tmp_path / "mod.py")
    assert jax.tree_util.tree_leaves(module.Sub(2.0)) == [2.0]


# -- 12. a function another module reaches through its module object is kept --------------------

OPS = """
import jax.tree_util as jtu


class Dense:
    def __init__(self, array):
        self.array = array


def dense_flatten(dense):
    return (dense.array,), None


def dense_unflatten(aux_data, children):
    return Dense(children[0])


jtu.register_pytree_node(Dense, dense_flatten, dense_unflatten)
"""
THROUGH_MODULE = {
    "from_package": "from pkg import ops\n\nDENSE = ops.dense_unflatten(None, (1,))\n",
    "aliased": "import pkg.ops as ops\n\nDENSE = ops.dense_unflatten(None, (1,))\n",
    "dotted": "import pkg.ops\n\nDENSE = pkg.ops.dense_unflatten(None, (1,))\n",
    "relative": "from . import ops\n\nDENSE = ops.dense_unflatten(None, (1,))\n",
}


@pytest.mark.parametrize("name", sorted(THROUGH_MODULE))
def test_a_function_used_through_its_module_object_is_kept(name: str, tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/user.py": THROUGH_MODULE[name]})
    result = codemod(tmp_path, "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten"
    assert "def dense_unflatten" in (tmp_path / "pkg" / "ops.py").read_text()
    code = "import pkg.user; assert pkg.user.DENSE.array == 1"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root])}
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=120)


# -- 13. an unhashable static value is seen in a tuple, and in cls(...) / type(self)(...) -------

SENSORS = """
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class Sensors:
    def __init__(self, positions, dt):
        self.positions = positions
        self.dt = dt

    def tree_flatten(self):
        return (self.dt,), (self.positions,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        (positions,) = aux
        return cls(positions, *children)
"""
BUILDS = {
    "tuple": "\n\nNONE = Sensors(positions=([], []), dt=1.0)\n",
    "nested_tuple": "\n\nNONE = Sensors(((1, [2]),), 1.0)\n",
    "cls": "\n    @classmethod\n    def empty(cls):\n        return cls(positions=[], dt=1.0)\n",
    "type_self": (
        "\n    def moved(self):\n        return type(self)([p for p in self.positions], self.dt)\n"
    ),
    "dunder_class": (
        "\n    def copy(self):\n        return self.__class__(list(self.positions), self.dt)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_an_unhashable_static_value_is_refused(name: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": SENSORS + BUILDS[name]})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK114"), entry["reason"]
    assert entry["reason"].startswith("static positions gets ")


def test_a_hashable_tuple_static_value_is_still_rewritten(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": SENSORS + "\n\nSOME = Sensors(positions=((1, 2), ()), dt=1.0)\n"})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten"


# -- 14. optree's and torch's registrations are not JAX's: passed over -----------------------------

FOREIGN = """
import optree
import torch.utils._pytree as pytree
from optree import register_pytree_node_class


@register_pytree_node_class(namespace="ops")
class Op:
    def __init__(self, x):
        self.x = x

    def tree_flatten(self):
        return (self.x,), None, None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Other:
    def __init__(self, y):
        self.y = y


pytree.register_pytree_node(Other, lambda o: ([o.y], None), lambda c, a: Other(*c))
optree.register_pytree_node(Other, lambda o: ((o.y,), None), lambda a, c: Other(*c), namespace="o")
"""


def test_optree_and_torch_registrations_are_passed_over(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": FOREIGN})
    before = (tmp_path / "ops.py").read_bytes()
    result = codemod(tmp_path, "--check", "--report", "json", "ops.py")
    assert result.code == 0
    assert result.report["registrations"] == []
    codemod(tmp_path, "ops.py")
    assert (tmp_path / "ops.py").read_bytes() == before


# -- 15. a base reached through a module-level alias (ABC = abc.ABC) is followed -----------------

ADD = """
import abc

import jax

ABC = abc.ABC


class AddBase(ABC):
    @abc.abstractmethod
    def add(self, a, b):
        ...


@jax.tree_util.register_pytree_node_class
class AddModular(AddBase):
    def __init__(self, moduli):
        self.moduli = moduli

    def add(self, a, b):
        return (a + b) % self.moduli

    def tree_flatten(self):
        return (self.moduli,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


def test_a_base_through_an_alias_of_an_import_is_followed(tmp_path: Path) -> None:
    write(tmp_path, {"add.py": ADD})
    result = codemod(tmp_path, "--report", "json", "add.py")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten", entry["reason"]
    module = load(tmp_path / "add.py")
    assert jax.tree_util.tree_leaves(module.AddModular(7)) == [7]
    assert module.AddModular(7).add(5, 4) == 2


def test_an_alias_bound_twice_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, {"add.py": ADD.replace("ABC = abc.ABC\n", "ABC = abc.ABC\nABC = object\n")})
    result = codemod(tmp_path, "--check", "--report", "json", "add.py")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK115")


def test_a_base_through_an_alias_in_another_module_is_followed(tmp_path: Path) -> None:
    misc = "class Finalizable:\n    def __init__(self):\n        self.done = False\n"
    user = (
        "import jax\nfrom pkg import utils\n\n\n@jax.tree_util.register_pytree_node_class\n"
        "class Loss(utils.Finalizable):\n    def __init__(self, w):\n        self.w = w\n\n"
        "    def tree_flatten(self):\n        return (self.w,), None\n\n    @classmethod\n"
        "    def tree_unflatten(cls, aux, children):\n        return cls(*children)\n"
    )
    files = {
        "pkg/__init__.py": "",
        "pkg/misc.py": misc,
        "pkg/utils/__init__.py": "from pkg import misc\n\nFinalizable = misc.Finalizable\n",
        "pkg/loss.py": user,
    }
    write(tmp_path, files)
    result = codemod(tmp_path, "--check", "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten", entry["reason"]
    codemod(tmp_path, "pkg")
    code = "import jax, pkg.loss; assert jax.tree_util.tree_leaves(pkg.loss.Loss(3)) == [3]"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root])}
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=120)


def test_a_base_in_a_module_not_compiling_is_named_as_such(tmp_path: Path) -> None:
    base = "type Alias = int\n\n\nclass Base:\n    pass\n"
    user = CLASS_A.replace("class A:", "class A(Base):").replace(
        "from jax.tree_util", "from base import Base\nfrom jax.tree_util"
    )
    write(tmp_path, {"base.py": base, "mod.py": user})
    if sys.version_info >= (3, 12):
        pytest.skip("the type statement compiles on this Python")
    result = codemod(tmp_path, "--check", "--report", "json", "base.py", "mod.py")
    [entry] = result.report["registrations"]
    assert entry["code"] == "PTK115"
    assert "base Base of A is in base.py, which the codemod could not read" in entry["reason"]


# -- 16. a link given on the command line is a place given, not its target -------------------------


@pytest.mark.parametrize("kind", ["file", "directory", "inside"])
def test_a_link_to_outside_is_not_followed_wherever_it_is(kind: str, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere", {"outside.py": CLASS_A})
    (tmp_path / "given").mkdir()
    if kind == "file":
        os.symlink("../elsewhere/outside.py", tmp_path / "given" / "link.py")
        given, shown = "given/link.py", "given/link.py"
    elif kind == "directory":
        os.symlink("../elsewhere", tmp_path / "given" / "link")
        given, shown = "given/link", "given/link"
    else:  # a directory link inside a given directory
        os.symlink("../elsewhere", tmp_path / "given" / "link")
        given, shown = "given", "given/link"
    before = (tmp_path / "elsewhere" / "outside.py").read_bytes()
    report = codemod(tmp_path, "--report", "json", given).report
    assert (tmp_path / "elsewhere" / "outside.py").read_bytes() == before
    [skipped] = report["skipped_files"]
    assert skipped["file"] == shown
    assert "outside the given paths: not" in skipped["reason"]
    assert report["registrations"] == []
    # given the target too, it is rewritten once, by its own path
    report = codemod(tmp_path, "--report", "json", given, "elsewhere").report
    assert report["skipped_files"] == []
    assert [e["file"] for e in report["registrations"]] == ["elsewhere/outside.py"]


def test_a_registration_of_cls_in_a_class_body_spares_unrelated_classes(tmp_path: Path) -> None:
    base = (
        "\n\nclass Node:\n    def __init_subclass__(cls, **kwargs):\n"
        "        super().__init_subclass__(**kwargs)\n"
        "        register_pytree_node_class(cls)\n\n\nDEFAULT = A(1.0)\n"
    )
    write(tmp_path, {"mod.py": CLASS_A + base})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    verdicts = {entry["class"]: entry["verdict"] for entry in result.report["registrations"]}
    assert verdicts == {"A": "rewritten", "cls": "left"}


@pytest.mark.parametrize("ending", ["\n", "\r", "\r\n"])
def test_a_subclass_in_a_cr_only_module_is_seen(ending: str, tmp_path: Path) -> None:
    # an unregistered subclass: pytreekit would make it a pytree too, so the base is not
    # rewritten in the default mode, whatever the subclass module's line endings
    write(tmp_path, {"base.py": CLASS_A})
    sub = "from base import A\n\n\nclass Sub(A):\n    pass\n"
    (tmp_path / "sub.py").write_bytes(sub.replace("\n", ending).encode())
    result = codemod(tmp_path, "--check", "--report", "json", "base.py", "sub.py")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "unsafe", entry["reason"]


def test_a_loop_registration_inside_a_function_leaves_the_classes_it_names(
    tmp_path: Path,
) -> None:
    second = (
        "\n\ndef register_all():\n    for cls in (A,):\n        register_pytree_node_class(cls)\n"
    )
    write(tmp_path, {"mod.py": CLASS_A + second})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    [first, *_] = result.report["registrations"]
    assert (first["class"], first["verdict"], first["code"]) == ("A", "left", "PTK110")


def test_a_helper_given_its_class_as_a_parameter_is_followed_as_before(tmp_path: Path) -> None:
    helper = (
        "\n\ndef register(klass):\n    return register_pytree_node_class(klass)\n\n\nX = A(1.0)\n"
    )
    write(tmp_path, {"mod.py": CLASS_A + helper})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    verdicts = {entry["class"]: entry["verdict"] for entry in result.report["registrations"]}
    assert verdicts == {"A": "rewritten", "klass": "left"}


def test_a_class_inheriting_an_unread_init_is_not_said_to_have_none(tmp_path: Path) -> None:
    base = "type Alias = int\n\n\nclass Base:\n    def __init__(self, x):\n        self.x = x\n"
    sub = CLASS_A.replace("class A:", "class A(Base):").replace(
        "from jax.tree_util", "from base import Base\nfrom jax.tree_util"
    )
    sub = sub.replace("    def __init__(self, x):\n        self.x = x\n\n", "")
    write(tmp_path, {"base.py": base, "mod.py": sub})
    if sys.version_info >= (3, 12):
        pytest.skip("the type statement compiles on this Python")
    out = codemod(tmp_path, "--check", "base.py", "mod.py").out
    assert "A has no __init__ the codemod can read" in " ".join(out.split())
