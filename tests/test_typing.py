"""The typing suite: user code in tests/typing/ under mypy, pyright and basedpyright, each in its
standard and its strict mode.

- ``*_ok.py`` files must draw no error (nor warning) from any checker in any mode, and must run:
  what they tell the checkers (``assert_type`` and all) is what pytreekit does.
- ``*_errors.py`` files mark every line a checker must report with ``# E:`` followed by the
  checkers and the code each reports there: ``# E: mypy[arg-type] pyright[reportArgumentType]``.
  ``pyright[...]`` covers basedpyright too unless ``basedpyright[...]`` is given. Each checker must
  report exactly the marked lines (no more, no fewer), each with its marked code among those it
  gives there; a checker not named on a line must report nothing on it (checkers differ on a few
  lines, and the marks say where).

Each checker runs once per mode over all the files. pyright and basedpyright get a configuration
of their own (the mode, and the repository root as an import path), mypy none but ``--strict``.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import jax
import pytest
from _versions import JAX
from markdown_blocks import Block, missing_libraries, pages, python_blocks, unmet

ROOT = Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"
CHECKERS = ("mypy", "pyright", "basedpyright")
MODES = ("standard", "strict")

OK_FILES = sorted(TYPING.glob("*_ok.py"))
ERROR_FILES = sorted(TYPING.glob("*_errors.py"))
CHECKED_FILES = OK_FILES + ERROR_FILES
# Checked with the cases, compared with nothing: what a checker reports there is this JAX's own
# typing, and a mode that reports it cannot tell pytreekit's cases from JAX's gaps.
JAX_PROBE = TYPING / "jax_probe.py"

MARK = re.compile(r"#\s*E:(?P<marks>.*)$")
CHECKER_CODE = re.compile(r"(?P<checker>[a-z]+)(?:-(?P<mode>[a-z]+))?\[(?P<code>[\w-]+)\]")
NONE = "none"  # basedpyright[none]: no error there, though pyright reports one

# line -> codes reported there, per file name
Report = dict[str, dict[int, set[str]]]


def expected_errors(path: Path, mode: str) -> dict[str, dict[int, str]]:
    """checker -> {line: code} from the ``# E:`` marks of one file, for one mode."""
    expected: dict[str, dict[int, str]] = {checker: {} for checker in CHECKERS}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = MARK.search(line)
        if match is None:
            continue
        tokens = list(CHECKER_CODE.finditer(match["marks"]))
        leftover = CHECKER_CODE.sub("", match["marks"]).strip()
        if (
            not tokens
            or leftover
            or any(t["checker"] not in CHECKERS or t["mode"] not in (None, *MODES) for t in tokens)
        ):
            raise ValueError(
                f"{path.name}:{number}: a mark is `# E: checker[code] ...` with checkers among "
                f"{CHECKERS}, optionally suffixed -strict or -standard; got {match.group(0)!r}"
            )
        marks = {t["checker"]: t["code"] for t in tokens if t["mode"] in (None, mode)}
        if "pyright" in marks:
            marks.setdefault("basedpyright", marks["pyright"])
        for checker, code in marks.items():
            if code != NONE:
                expected[checker][number] = code
    return expected


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    # The pyright package would ask PyPI for a newer release on every run; CI may be offline.
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, check=False, env=env, **kwargs
    )


def _mypy(mode: str, files: list[Path], extra: tuple[str, ...] = ()) -> Report:
    # No config file: [tool.mypy] in pyproject.toml says strict, and "standard" means mypy's own
    # defaults. Errors inside pytreekit itself are not this suite's business (CI checks them).
    options = ["--config-file=", "--no-incremental", "--show-error-codes", "--no-pretty"]
    options += ["--follow-imports=silent", "--python-version=3.11", *extra]
    if mode == "strict":
        options.append("--strict")
    result = _run([sys.executable, "-m", "mypy", *options, *map(str, files)])
    if result.returncode not in (0, 1) or "error: INTERNAL ERROR" in result.stdout:
        raise RuntimeError(f"mypy failed to run:\n{result.stdout}{result.stderr}")
    report: Report = defaultdict(lambda: defaultdict(set))
    for match in re.finditer(
        r"^(?P<file>[^:\n]+):(?P<line>\d+): error: .*?(?:  \[(?P<code>[\w-]+)\])?$",
        result.stdout,
        re.MULTILINE,
    ):
        report[Path(match["file"]).name][int(match["line"])].add(match["code"] or "error")
    return report


def _pyright(
    checker: str, mode: str, files: list[Path], tmp: Path, extra: dict[str, object] | None = None
) -> Report:
    config = tmp / f"{checker}-{mode}.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": mode,
                "pythonVersion": "3.11",
                "extraPaths": [str(ROOT)],  # this checkout's pytreekit, installed or not
                **(extra or {}),
            }
        )
    )
    options = ["-p", str(config), "--outputjson", "--pythonpath", sys.executable]
    result = _run([sys.executable, "-m", checker, *options, *map(str, files)])
    try:
        diagnostics = json.loads(result.stdout)["generalDiagnostics"]
    except (ValueError, KeyError):
        raise RuntimeError(f"{checker} failed to run:\n{result.stdout}{result.stderr}") from None
    checked = {str(f) for f in files}
    report: Report = defaultdict(lambda: defaultdict(set))
    for diagnostic in diagnostics:
        if diagnostic["file"] not in checked:
            raise RuntimeError(f"{checker} checked a file it was not given: {diagnostic}")
        if diagnostic["severity"] in ("error", "warning"):
            line = diagnostic["range"]["start"]["line"] + 1
            report[Path(diagnostic["file"]).name][line].add(diagnostic.get("rule", "error"))
    return report


@functools.cache
def pyright_report(checker: str, mode: str) -> Report:
    """What pyright or basedpyright reports on the cases and the JAX probe."""
    with tempfile.TemporaryDirectory() as tmp:
        return _pyright(checker, mode, [*CHECKED_FILES, JAX_PROBE], Path(tmp))


@functools.cache
def mypy_report(mode: str, blocks: frozenset[str]) -> Report:
    """What mypy reports on the cases, the JAX probe and the documentation's ``blocks`` (ids),
    in one run: mypy spends most of a run on what the files import (JAX above all), however few
    the files. --ignore-missing-imports is for the blocks' untyped libraries; the cases import
    only JAX and pytreekit. Each block is a module of its own, so none affects another's report."""
    files = [*CHECKED_FILES, JAX_PROBE, *block_files(blocks, mode)]
    return _mypy(mode, files, README_MYPY)


def test_suite_has_files() -> None:
    names = {p.name for p in CHECKED_FILES}
    for area in ("core", "frozen", "subclass", "methods", "linearize", "converter"):
        assert {f"{area}_ok.py", f"{area}_errors.py"} <= names, area


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("checker", CHECKERS)
def test_checker_reports_exactly_the_marked_lines(
    checker: str, mode: str, request: pytest.FixtureRequest
) -> None:
    if checker == "mypy":
        report = mypy_report(mode, _selected_blocks(request.session))
    else:
        report = pyright_report(checker, mode)
    # JAX 0.10 and later type what the probe calls: there a report is a failure, not a skip.
    if JAX_PROBE.name in report and JAX < (0, 10):
        found = {line: sorted(codes) for line, codes in sorted(report[JAX_PROBE.name].items())}
        pytest.skip(
            f"{checker} ({mode}) reports JAX {jax.__version__}'s own API in {JAX_PROBE.name} "
            f"(line: codes {found}): it would check JAX's typing here, not pytreekit's"
        )
    problems = []
    for path in [*CHECKED_FILES, JAX_PROBE]:
        expected = expected_errors(path, mode)[checker]
        reported = report.get(path.name, {})
        for line in sorted(set(expected) | set(reported)):
            source = path.read_text(encoding="utf-8").splitlines()[line - 1].strip()
            if line not in reported:
                problems.append(f"{path.name}:{line}: expected {expected[line]}, got nothing")
            elif line not in expected:
                problems.append(f"{path.name}:{line}: unexpected {sorted(reported[line])}")
            elif expected[line] not in reported[line]:
                problems.append(
                    f"{path.name}:{line}: expected {expected[line]}, got {sorted(reported[line])}"
                )
            else:
                continue
            problems[-1] += f"  | {source}"
    assert not problems, f"{checker} ({mode}):\n" + "\n".join(problems)


def _jax_names(path: Path) -> set[str]:
    """The dotted ``jax.…`` names a file uses, ``jax.Array`` (a class, typed everywhere) aside."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            name = ast.unparse(node)
            if name.startswith("jax.") and re.fullmatch(r"[\w.]+", name):
                names.add(name)
    # Only the longest chains: jax.random.normal, not also jax.random.
    return {n for n in names if not any(m.startswith(n + ".") for m in names)} - {"jax.Array"}


def test_jax_probe_uses_what_the_cases_use() -> None:
    used = set().union(*map(_jax_names, CHECKED_FILES))
    assert used <= _jax_names(JAX_PROBE), (
        f"add to {JAX_PROBE.name}: {sorted(used - _jax_names(JAX_PROBE))}"
    )


@pytest.mark.parametrize("path", ERROR_FILES, ids=lambda p: p.name)
def test_error_files_mark_errors_for_every_checker(path: Path) -> None:
    for mode in MODES:
        expected = expected_errors(path, mode)
        for checker in CHECKERS:
            assert expected[checker], f"{path.name} marks no error for {checker} ({mode})"


@pytest.mark.parametrize("path", OK_FILES, ids=lambda p: p.name)
def test_ok_files_mark_nothing_and_run(path: Path) -> None:
    assert "# E:" not in path.read_text(encoding="utf-8"), f"{path.name} is an _ok file with marks"
    runpy.run_path(str(path), run_name=f"typing_{path.stem}")


def test_marks_are_read_per_checker_and_mode(tmp_path: Path) -> None:
    case = tmp_path / "case.py"
    case.write_text(
        "a = 1\n"
        "b: int = ''  # E: mypy[assignment] pyright[reportAssignmentType]\n"
        "c = 1  # E: pyright-strict[reportX] basedpyright[none] mypy-standard[misc]\n",
        encoding="utf-8",
    )
    assert expected_errors(case, "strict") == {
        "mypy": {2: "assignment"},
        "pyright": {2: "reportAssignmentType", 3: "reportX"},
        "basedpyright": {2: "reportAssignmentType"},
    }
    assert expected_errors(case, "standard") == {
        "mypy": {2: "assignment", 3: "misc"},
        "pyright": {2: "reportAssignmentType"},
        "basedpyright": {2: "reportAssignmentType"},
    }
    for bad in ("# E: ty[x]", "# E: mypy[x] and more", "# E:", "# E: mypy-lenient[x]"):
        case.write_text(f"x = 1  {bad}\n", encoding="utf-8")
        with pytest.raises(ValueError, match=r"case.py:1: a mark is `# E: checker\[code\]"):
            expected_errors(case, "strict")


# Documentation examples (README.md and every docs/ page: tests/markdown_blocks.py finds them).
# Every ```python block is type-checked by each checker: in standard mode, and in strict mode too
# when it is fully annotated (every function's parameters, self and cls aside, and its return; an
# unannotated class is ordinary Python that strict modes reject by design). A block that continues
# an earlier one is checked with it. Strict here is the checkers' strict less what third-party
# stubs trip: pyright's reportUnknown* rules (JAX leaves much of its API unknown to pyright) and
# missing stubs (optax, orbax), as for pytreekit's own source in pyproject.toml. A block that
# imports a library which is not installed is skipped (the checkers cannot see its types). A block
# listed in README_NOT_TYPED is expected to fail and says why; once it type-checks, the test asks
# for it to leave the list.
# docs/pitfalls.md is not: its blocks reproduce errors, some of which the checkers see too.
README_BLOCKS = [
    block
    for page in pages()
    if page.name != "pitfalls.md"
    for block in python_blocks(page)
    if block.marker not in ("skip", "raises")
]
README_NOT_TYPED: dict[str, str] = {
    # What the block shows is what the checkers flag: an int assigned to a converter's field.
    "docs/migrating/equinox::converters-and-your-own-init-1": (
        "an __init__ of its own assigns an int where the converter would have made an array"
    ),
    # Third-party typing, not pytreekit's:
    "docs/guide/other-registries::other-registries-optree-and-torch-1": (
        "optree's tree_flatten_with_path is typed for optree's own PyTree"
    ),
    "docs/migrating/flax-struct-and-chex::"
    "migrating-from-flax-struct-register-dataclass-and-chex-1": (
        "flax.struct.field is untyped (mypy strict)"
    ),
    "docs/using/optax::parameter-labels-1": (
        "a label tree (strings at array fields) and optax's ArrayTree"
    ),
    "docs/using/optax::masks-1": "a mask tree (bools at array fields) and optax's ArrayTree",
    "docs/using/jax-export::what-an-artifact-stores-and-why-loading-it-runs-no-code-it-chooses-2": (
        "JAX's PyTreeDef is partly unknown to mypy, which refuses == between two"
    ),
    "docs/migrating/flax-linen::migrating-from-flax-linen-and-trainstate-2": (
        "optax types params as ArrayTree (arrays, sequences, mappings): a class is not one"
    ),
    "docs/migrating/flax-struct-and-chex::chex-1": "chex.dataclass is untyped for the checkers",
    "docs/using/flax::flax-serialization-and-msgpack-checkpoints-1": (
        "flax.serialization.from_bytes is typed to return a state dict"
    ),
    "docs/using/numpyro-and-blackjax::numpyro-1": "numpyro's param and distributions' types",
    "docs/using/numpyro-and-blackjax::blackjax-1": "blackjax's window_adaptation and states",
    # Errors on purpose, which the checkers report too:
    "docs/guide/frozen-and-replace::frozen-classes-and-replace-1": "assigns to a frozen instance",
    "docs/using/beartype::beartype-and-jaxtyping-1": "passes a str where an array is annotated",
}
README_MYPY = ("--ignore-missing-imports",)
README_PYRIGHT: dict[str, object] = {
    "reportMissingTypeStubs": False,
    "reportMissingModuleSource": False,
    **{
        f"reportUnknown{kind}Type": False
        for kind in ("Member", "Argument", "Variable", "Lambda", "Parameter")
    },
}


def fully_annotated(code: str) -> bool:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            if node.returns is None or any(
                a.annotation is None and not (i == 0 and a.arg in ("self", "cls"))
                for i, a in enumerate(arguments)
            ):
                return False
    return True


def _readme_file(block: Block) -> str:
    return re.sub(r"\W", "_", block.full_id) + ".py"


CHECKED_BLOCKS = [block for block in README_BLOCKS if not missing_libraries(block)]


_BLOCK_DIR = tempfile.TemporaryDirectory(prefix="pytreekit-blocks-")  # removed at exit


def block_files(selected: frozenset[str], mode: str) -> list[Path]:
    """A file with each selected block's program, for the blocks checked in ``mode``."""
    files = []
    for block in CHECKED_BLOCKS:
        if block.full_id in selected and (mode == "standard" or fully_annotated(block.program)):
            path = Path(_BLOCK_DIR.name) / _readme_file(block)
            path.write_text(block.program, encoding="utf-8")
            files.append(path)
    return files


@functools.cache
def readme_problems(selected: frozenset[str]) -> dict[str, list[str]]:
    """Block id -> what the checkers report on it, for the blocks whose ids are ``selected``
    (each block's file stands alone, so checking fewer changes no block's result)."""
    blocks = [block for block in CHECKED_BLOCKS if block.full_id in selected]
    problems: dict[str, list[str]] = {block.full_id: [] for block in blocks}
    files = {mode: block_files(selected, mode) for mode in MODES}
    for checker in CHECKERS:
        for mode in MODES:
            checked = files[mode]
            if not checked:
                continue
            if checker == "mypy":
                report = mypy_report(mode, selected)
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    report = _pyright(checker, mode, checked, Path(tmp), README_PYRIGHT)
            for block in blocks:
                offset = block.line + len(block.code.splitlines()) - len(block.program.splitlines())
                for line, codes in sorted(report.get(_readme_file(block), {}).items()):
                    code_line = block.program.splitlines()[line - 1].strip()
                    problems[block.full_id].append(
                        f"{checker} ({mode}) {block.page} line {offset + line}: "
                        f"{sorted(codes)} | {code_line}"
                    )
    return problems


def _selected_blocks(session: pytest.Session) -> frozenset[str]:
    """The ids of the blocks this session runs test_docs_block_type_checks on: all of them in a
    whole run, one or two when a block's test is run alone (the checkers start once either way)."""
    return frozenset(
        item.callspec.params["block"].full_id
        for item in session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_docs_block_type_checks"
    )


# Every block's test reads the same checker runs (readme_problems, and mypy's shared with the
# cases' test): each pytest-xdist worker would make them for itself, so .ci/run keeps a file's
# tests on one worker (--dist loadfile).
@pytest.mark.parametrize("block", README_BLOCKS, ids=[block.full_id for block in README_BLOCKS])
def test_docs_block_type_checks(block: Block, request: pytest.FixtureRequest) -> None:
    if block.marker == "requires" and (why := unmet(block.marker_text or "")):
        pytest.skip(f"{block.where}: {why}")
    missing = missing_libraries(block)
    if missing:
        named = "; ".join(f"No module named '{name}'" for name in missing)
        pytest.skip(f"{block.where} needs {', '.join(missing)} ({named}): not checked")
    problems = readme_problems(_selected_blocks(request.session))[block.full_id]
    if block.full_id in README_NOT_TYPED:
        assert problems, f"block {block.full_id} type-checks now: remove it from README_NOT_TYPED"
        return
    assert not problems, f"{block.where}:\n" + "\n".join(problems)


def test_readme_not_typed_lists_existing_blocks() -> None:
    assert set(README_NOT_TYPED) <= {block.full_id for block in README_BLOCKS}
