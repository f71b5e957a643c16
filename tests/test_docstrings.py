"""Every docstring example in pytreekit runs, self-contained, and shows what it claims.

Each module's examples run with doctest in an empty namespace, not the module's own globals: an
example must import what it uses, as a reader pasting it into a fresh interpreter would.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import importlib.util
import inspect
import pkgutil
from types import ModuleType

import pytest
from conftest import require

import pytreekit

# Modules whose adapters import an optional library: skipped without it (a failure in CI).
OPTIONAL = {"pytreekit._backends.optree": "optree", "pytreekit._backends.torch": "torch"}

# Examples that use an optional backend's library (skipped without it, outside CI).
NEEDS_LIBRARY = {"pytreekit._backends": "optree"}

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def module_names() -> list[str]:
    found = pkgutil.walk_packages(pytreekit.__path__, prefix="pytreekit.")
    return ["pytreekit", *sorted(info.name for info in found)]


def load(name: str) -> ModuleType:
    if name in OPTIONAL:
        require(OPTIONAL[name])
    return importlib.import_module(name)


def examples(module: ModuleType) -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [test for test in finder.find(module, globs={}) if test.examples]


def has_examples(name: str) -> bool:
    if name in OPTIONAL and importlib.util.find_spec(OPTIONAL[name]) is None:
        return True  # cannot look without the library: let the test skip (or fail in CI)
    return bool(examples(importlib.import_module(name)))


MODULES_WITH_EXAMPLES = [name for name in module_names() if has_examples(name)]


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_docstring_examples_run(name: str) -> None:
    if name in NEEDS_LIBRARY:
        require(NEEDS_LIBRARY[name])
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    for test in examples(load(name)):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    if result.failed:
        pytest.fail(
            f"{result.failed} of {result.attempted} docstring examples in {name} failed:\n"
            + "".join(report),
            pytrace=False,
        )


def test_modules_with_examples() -> None:
    """The package's entry points carry examples, the custom-derivative ones included."""
    assert {
        "pytreekit",
        "pytreekit._derivatives.filters",
        "pytreekit._derivatives.linearize",
    } <= set(MODULES_WITH_EXAMPLES)
    expected = {
        "pytreekit._derivatives.custom_jvp",
        "pytreekit._derivatives.custom_vjp",
        "pytreekit._backends",
    }
    assert expected | set(NEEDS_LIBRARY) <= set(MODULES_WITH_EXAMPLES)


def test_every_public_name_has_a_docstring() -> None:
    undocumented = [
        name
        for name in pytreekit.__all__
        # MISSING is the standard library's sentinel, documented where it is defined.
        if name != "MISSING" and not inspect.getdoc(getattr(pytreekit, name))
    ]
    assert pytreekit.MISSING is dataclasses.MISSING
    assert undocumented == []


def test_a_failing_example_is_reported() -> None:
    """The runner catches what it is for: an example that uses a name it never imports."""
    module = ModuleType("example_module", "Doc.\n\n>>> partition({}, bool)\n({}, {})\n")
    tests = examples(module)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 1
    assert "NameError: name 'partition' is not defined" in "".join(report)
