"""tools/mutation.py names modules and test files by path, and docs/mutation.md names them as
``--module`` takes them: both must follow the package's layout, or the documented commands fail
(as they did after the restructure, when ``_codec`` and ``_export`` had moved)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

from conftest import ROOT

import pytreekit

# The package as imported: the source tree, or the installed wheel (CI's wheel cell runs a copy
# of the tests without the source), which holds the same modules.
PACKAGE = Path(pytreekit.__file__).resolve().parent

# Modules of pytreekit/ the tool does not mutate, with the reason docs/mutation.md gives.
NOT_MUTATED = {
    "__init__": "re-exports",
    "_classes.__init__": "re-exports",
    "_derivatives.__init__": "re-exports",
    "_artifacts.__init__": "re-exports",
    "_layouts": "an alias for pickles",
    "_references": "an alias for pickles",
    "_wrappers": "an alias for pickles",
    "_markers": "a table of names",
    "_artifacts.schema": "a table of tags",
    "_messages": "error wording, asserted by tests/test_misuse.py",
}


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "tools" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_selection_names_a_module_and_tests_that_exist(tmp_path: Path) -> None:
    tool = _tool()
    (tmp_path / "pytreekit").symlink_to(PACKAGE)  # a tree as the tool reads one
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    assert tool.missing(tmp_path, sorted(tool.SELECTIONS)) == []


def test_missing_names_a_moved_module_and_test_file(tmp_path: Path) -> None:
    tool = _tool()
    name = "_derivatives.filters"
    (tmp_path / "tests").mkdir()
    (tmp_path / tool.SELECTIONS[name][0]).write_text("")
    assert tool.missing(tmp_path, [name]) == [
        "pytreekit/_derivatives/filters.py",
        *tool.SELECTIONS[name][1:],
    ]


def test_every_module_is_mutated_or_left_out_with_a_reason() -> None:
    tool = _tool()
    package = PACKAGE
    modules = {
        ".".join(path.relative_to(package).with_suffix("").parts)
        for path in package.rglob("*.py")
        if path.parts[len(package.parts)] not in ("_backends", "migrate")
    }
    assert modules == set(tool.SELECTIONS) | set(NOT_MUTATED)
    assert not set(tool.SELECTIONS) & set(NOT_MUTATED)


def test_the_page_names_the_modules_the_tool_takes() -> None:
    tool = _tool()
    page = (ROOT / "docs" / "mutation.md").read_text()
    for module in re.findall(r"--module (\S+)", page):
        assert module in tool.SELECTIONS, f"docs/mutation.md runs --module {module}"
    what = page[page.index("**What it mutates**") : page.index("Not mutated:")]
    assert set(re.findall(r"`(_[\w.]+)`", what)) == set(tool.SELECTIONS)


def test_a_sample_copies_the_same_mutants_in_the_same_order() -> None:
    tool = _tool()
    source = (PACKAGE / "_classes" / "replace.py").read_text()
    made = [(description, line, tree) for description, line, tree in tool.mutants(source)]
    drawn = list(tool.candidates(source))
    assert [(d, line) for d, line, _ in made] == [(d, line) for d, line, _ in drawn]
    assert [ast.dump(t) for *_, t in made] == [ast.dump(make()) for *_, make in drawn]
