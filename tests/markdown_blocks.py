"""The code blocks of the documentation (README.md and every docs/ page), found and run by Sybil.

Sybil (https://sybil.readthedocs.io) lexes each Markdown page's fenced code blocks, also inside
admonitions and lists, and evaluates the ```python ones in order with the evaluator below. Each
page runs in a fresh interpreter of its own (``run_page``), and each block in it as a script of
its own, as a reader pastes it: ``runpy`` runs it as ``__main__`` from a file whose line numbers
are the page's, so a traceback points at the Markdown line, pickle and ``multiprocessing``'s
``spawn`` find the block's classes, and ``__file__`` is a real file.

An HTML comment right above a block's opening fence (invisible on the site) changes how it runs:

- ``<!-- docs-test: skip (reason) -->``: not run; the test is skipped with the reason.
- ``<!-- docs-test: continue -->``: runs with the names the page's previous block defined (for a
  page that builds an example up); a block without it must be self-contained.
- ``<!-- docs-test: raises -->``: must raise; the test of the page decides which error
  (docs/pitfalls.md shows each error's text above its reproduction).
- ``<!-- docs-test: requires (flax>=0.12) -->``: skipped, with the reason, where the installed
  release is older (the floor cell of .ci/run installs older clients).

Any ``<!-- word-test: ... -->`` spelling is accepted (``pitfalls-test: raises``). A block that
imports a library which is not installed (torch, optree, flax, orbax, numpyro...) is skipped with
that reason, and so is every block continuing it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sybil import Document, Example, Sybil
from sybil.parsers.markdown import CodeBlockParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# `<!-- docs-test: skip (reason) -->` or `<!-- pitfalls-test: raises -->` right above a fence.
MARKER = re.compile(r"<!--\s*[\w-]+-test:\s*(?P<word>\w+)\s*(?:\((?P<text>.*)\))?\s*-->")
MARKERS = ("skip", "continue", "raises", "requires")


def pages() -> list[Path]:
    """Every page of the documentation: README.md and docs/**/*.md (not docs/_hooks/)."""
    found = sorted(path for path in DOCS.rglob("*.md") if "_hooks" not in path.parts)
    return [ROOT / "README.md", *found]


def page_name(page: Path) -> str:
    page = page.resolve()
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else str(page)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Block:
    page: str  # its path from the repository root, "docs/guide/typing.md"
    language: str
    heading: str
    index: int  # among the blocks of this language under the same heading, from 1
    line: int  # of the opening fence, from 1
    code: str
    marker: str | None  # the marker's word ("skip", "continue", "raises"), if the block has one
    marker_text: str | None  # what the marker says in brackets
    previous: Block | None = None  # the block of the page this one continues

    @property
    def id(self) -> str:
        """Unique on its page: the heading's slug and the index."""
        return f"{slug(self.heading) or 'top'}-{self.index}"

    @property
    def full_id(self) -> str:
        return f"{self.page.removesuffix('.md')}::{self.id}"

    @property
    def program(self) -> str:
        """The code with that of the blocks it continues, as one script."""
        return self.code if self.previous is None else self.previous.program + "\n" + self.code

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line} (under '{self.heading}')"


def _lexer() -> FencedCodeBlockLexer:
    return FencedCodeBlockLexer(
        language=r".*", mapping={"language": "language", "source": "source"}
    )


def code_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with the heading each belongs to and its marker."""
    document = Document(page.read_text(encoding="utf-8"), str(page))
    return _blocks(document, page_name(page))


def _blocks(document: Document, name: str) -> list[Block]:
    text = document.text
    regions = sorted(_lexer()(document), key=lambda region: region.start)
    blocks: list[Block] = []
    per_heading: dict[tuple[str, str], int] = {}
    position, heading = 0, ""
    previous: Block | None = None
    for region in regions:
        # headings between the previous block and this one (a '#' inside a block is a comment)
        for line in text[position : region.start].splitlines():
            if re.match(r"#{1,6} ", line):
                heading = line.lstrip("#").strip()
        position = region.end
        language = str(region.lexemes["language"]).strip()
        above = text[: region.start].rstrip("\n").rpartition("\n")[2].strip()
        marker = MARKER.fullmatch(above)
        key = (heading, language)
        per_heading[key] = per_heading.get(key, 0) + 1
        word = marker.group("word") if marker else None
        block = Block(
            page=name,
            language=language,
            heading=heading,
            index=per_heading[key],
            line=text.count("\n", 0, region.start) + 1,
            code=str(region.lexemes["source"]),
            marker=word,
            marker_text=marker.group("text") if marker else None,
            previous=previous if word == "continue" and language == "python" else None,
        )
        if word == "continue" and block.previous is None:
            raise ValueError(f"{block.where}: 'continue' but no python block before it")
        if word is not None and word not in MARKERS:
            raise ValueError(f"{block.where}: unknown marker {word!r}, not one of {MARKERS}")
        blocks.append(block)
        if language == "python":
            previous = block
    return blocks


def python_blocks(page: Path) -> list[Block]:
    return [block for block in code_blocks(page) if block.language == "python"]


def imported_libraries(code: str) -> set[str]:
    """Top-level names of the modules a block imports."""
    return {
        match.group(1)
        for match in re.finditer(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", code, re.MULTILINE)
    }


def missing_libraries(block: Block) -> list[str]:
    """The libraries the block (or a block it continues) imports that are not installed."""
    return sorted(
        name for name in imported_libraries(block.program) if importlib.util.find_spec(name) is None
    )


# --- running a page: the Sybil evaluator, in the page's own interpreter -----------------------


@dataclass(frozen=True)
class Outcome:
    status: str  # "passed", "failed", "raised" (it raised, as a raises block must), "skipped"
    detail: str = ""  # the traceback, or the skip's reason
    exception: str | None = None  # "TypeError: message", as a traceback's last line names it


def _exception_text(error: BaseException) -> str:
    kind = type(error)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return f"{name}: {error}"


class _PageEvaluator:
    """Sybil's evaluator for a page's ```python blocks: each runs as a script, in order."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name, self.directory = name, directory
        self.outcomes: dict[int, Outcome] = {}
        self.blocks: dict[int, Block] = {}
        self.names: dict[int, dict[str, Any]] = {}  # line -> globals the block left

    def __call__(self, example: Example) -> None:
        if not self.blocks:
            self.blocks = {block.line: block for block in _blocks(example.document, self.name)}
        block = self.blocks[example.line]
        self.outcomes[block.line] = self.run(block)

    def run(self, block: Block) -> Outcome:
        if block.marker == "skip":
            return Outcome("skipped", block.marker_text or "marked skip")
        if block.marker == "requires" and (why := unmet(block.marker_text or "")):
            return Outcome("skipped", why)
        if block.previous is not None and self.outcomes[block.previous.line].status != "passed":
            return Outcome("skipped", f"continues the block at line {block.previous.line}")
        missing = missing_libraries(block)
        if missing:
            # "No module named": the words .ci/run looks for in a skip, to fail the skips of
            # modules its cell must have
            named = "; ".join(f"No module named '{name}'" for name in missing)
            return Outcome("skipped", f"needs {', '.join(missing)} (not installed: {named})")
        # The page's line numbers: the code starts on the line after the fence.
        script = self.directory / f"{slug(self.name)}_line_{block.line}.py"
        script.write_text("\n" * block.line + block.code, encoding="utf-8")
        start = None if block.previous is None else self.names.get(block.previous.line)
        try:
            names = runpy.run_path(str(script), init_globals=start, run_name="__main__")
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            if block.marker == "raises":
                return Outcome("raised", exception=_exception_text(error))
            # The traceback names the page where it names the script: the lines are the same.
            detail = traceback.format_exc().replace(str(script), self.name)
            return Outcome("failed", detail, _exception_text(error))
        self.names[block.line] = {k: v for k, v in names.items() if not k.startswith("__")}
        if block.marker == "raises":
            return Outcome("failed", "the block is marked raises but ran without an exception")
        return Outcome("passed")


def unmet(requirement: str) -> str | None:
    """Why ``requirement`` (``"flax>=0.12"``) is not met here, or ``None`` where it is."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    wanted = Requirement(requirement)
    try:
        installed = version(wanted.name)
    except PackageNotFoundError:
        return f"needs {requirement} (No module named '{wanted.name}')"
    if wanted.specifier.contains(installed, prereleases=True):
        return None
    return f"needs {requirement} (installed: {wanted.name} {installed})"


def _run_page_here(page: Path, report: Path) -> None:
    with tempfile.TemporaryDirectory() as directory:
        evaluator = _PageEvaluator(page_name(page), Path(directory))
        document = Sybil(parsers=[CodeBlockParser("python", evaluator)]).parse(page)
        for example in document:
            example.evaluate()
    outcomes = {line: outcome.__dict__ for line, outcome in evaluator.outcomes.items()}
    report.write_text(json.dumps(outcomes), encoding="utf-8")


def run_page(page: Path) -> dict[int, Outcome]:
    """Run a page's ```python blocks in a fresh interpreter; the outcome of each, by line.

    The interpreter sees the pytreekit this test session imports (the clone, or what CI
    installed), JAX on CPU, and runs in a directory of its own."""
    import pytreekit

    package_home = str(Path(pytreekit.__file__).resolve().parent.parent)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": package_home}
    with tempfile.TemporaryDirectory() as directory:
        report = Path(directory) / "outcomes.json"
        result = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), str(page), str(report)],
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if result.returncode != 0 or not report.exists():
            raise RuntimeError(
                f"running {page_name(page)} failed:\n{result.stdout[-3000:]}{result.stderr[-5000:]}"
            )
        outcomes = json.loads(report.read_text(encoding="utf-8"))
    return {int(line): Outcome(**outcome) for line, outcome in outcomes.items()}


@functools.cache
def page_outcomes(page: Path) -> dict[int, Outcome]:
    """``run_page``, once per page and test session (tests/test_docs.py and
    tests/test_pitfalls.py share the run of docs/pitfalls.md)."""
    return run_page(page.resolve())


def undefined_names(code: str, directory: Path) -> str:
    """ruff's report of names a block uses but never defines ('' if none): running a block
    misses names used only in functions it never calls, such as a JVP rule."""
    script = directory / "undefined_names_check.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
            "--select",
            "F821",
            "--output-format",
            "concise",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


if __name__ == "__main__":  # run_page's interpreter: python markdown_blocks.py PAGE REPORT
    _run_page_here(Path(sys.argv[1]), Path(sys.argv[2]))
