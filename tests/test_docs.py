"""Every ```python block of every documentation page (README.md and docs/) runs, as written.

The blocks are found and evaluated by Sybil (tests/markdown_blocks.py says how, and which HTML
comments above a block skip it, continue the previous block, or expect it to raise). Each page
runs once, in a fresh interpreter; each block is a test of its own here. A block that imports a
library which is not installed is skipped with that reason; optree and torch are the optional
backends, whose absence fails in CI (``conftest.require``), as for the backend tests.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, require
from markdown_blocks import (
    Block,
    code_blocks,
    missing_libraries,
    page_name,
    page_outcomes,
    pages,
    python_blocks,
    run_page,
    undefined_names,
)

PAGES = pages()
BLOCKS = [block for page in PAGES for block in python_blocks(page)]
BACKENDS = {"optree", "torch"}


@pytest.mark.parametrize("block", BLOCKS, ids=[block.full_id for block in BLOCKS])
def test_block_runs(block: Block) -> None:
    for library in sorted(set(missing_libraries(block)) & BACKENDS):
        require(library)  # skips, or fails in CI
    outcome = page_outcomes(ROOT / block.page)[block.line]
    if outcome.status == "skipped":
        pytest.skip(f"{block.page} line {block.line}: {outcome.detail}")
    if outcome.status == "failed":
        pytest.fail(f"{block.where} failed:\n{outcome.detail}", pytrace=False)
    assert outcome.status == ("raised" if block.marker == "raises" else "passed")


@pytest.mark.parametrize("block", BLOCKS, ids=[block.full_id for block in BLOCKS])
def test_block_names_are_defined(block: Block, tmp_path: Path) -> None:
    if block.marker == "skip":
        pytest.skip(f"{block.page} line {block.line}: {block.marker_text}")
    report = undefined_names(block.program, tmp_path)
    if report:
        pytest.fail(f"{block.where} uses names it does not define or import:\n{report}")


def test_every_page_is_covered_and_has_few_skips() -> None:
    names = {page_name(page) for page in PAGES}
    assert "README.md" in names and "docs/pitfalls.md" in names
    on_disk = {path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md")}
    assert on_disk <= names
    skipped = [block for block in BLOCKS if block.marker == "skip"]
    assert len(BLOCKS) >= 40
    assert len(skipped) <= len(BLOCKS) // 10, "prefer runnable blocks to skipped ones"


def test_block_parser_headings_indices_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "# Title",
                "```python",
                "a = 1",
                "```",
                "## Section two",
                "```bash",
                "# not a heading",
                "```",
                "<!-- docs-test: skip (needs a GPU) -->",
                "```python",
                "# a comment, not a heading",
                "b = 2",
                "```",
                "<!-- pitfalls-test: raises -->",
                "```python",
                "c = 3",
                "```",
                "!!! note",
                "    <!-- docs-test: continue -->",
                "    ```python",
                "    d = c",
                "    ```",
                "",
            ]
        ),
        encoding="utf-8",
    )
    blocks = [(b.language, b.id, b.line, b.marker, b.marker_text) for b in code_blocks(page)]
    assert blocks == [
        ("python", "title-1", 2, None, None),
        ("bash", "section-two-1", 6, None, None),
        ("python", "section-two-1", 10, "skip", "needs a GPU"),
        ("python", "section-two-2", 15, "raises", None),
        ("python", "section-two-3", 20, "continue", None),
    ]
    assert code_blocks(page)[2].code == "# a comment, not a heading\nb = 2\n"
    assert code_blocks(page)[4].program == "c = 3\n\nd = c\n"


def test_pages_run_blocks_in_order_with_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "# Page",
                "```python",
                "import pickle",
                "class Point:",
                "    x = 1",
                "assert pickle.loads(pickle.dumps(Point())).x == 1  # __main__ is the block",
                "```",
                "<!-- docs-test: continue -->",
                "```python",
                "assert Point.x == 1",
                "```",
                "```python",
                "Point  # not continued: undefined",
                "```",
                "<!-- docs-test: raises -->",
                "```python",
                "raise KeyError('k')",
                "```",
                "```python",
                "import a_library_that_is_not_installed",
                "```",
                "",
            ]
        ),
        encoding="utf-8",
    )
    outcomes = run_page(page)
    assert [outcome.status for outcome in outcomes.values()] == [
        "passed",
        "passed",
        "failed",
        "raised",
        "skipped",
    ]
    assert outcomes[12].exception == "NameError: name 'Point' is not defined"
    assert f'{page}", line 13' in outcomes[12].detail  # the traceback names the page's line
    assert outcomes[16].exception == "KeyError: 'k'"
    assert outcomes[19].detail == (
        "needs a_library_that_is_not_installed (not installed: "
        "No module named 'a_library_that_is_not_installed')"
    )


def test_undefined_names_are_reported(tmp_path: Path) -> None:
    assert undefined_names("import jax\nx = jax.numpy.ones(2)\n", tmp_path) == ""
    report = undefined_names("def rule():\n    return jax.jvp\n", tmp_path)
    assert "F821 Undefined name `jax`" in report


def test_docs_link_only_to_existing_pages_and_anchors() -> None:
    """What `mkdocs build --strict` checks, for readers of the Markdown files themselves (on
    GitHub): relative links between pages resolve. The strict build checks anchors and
    references too (below, when mkdocs is installed)."""
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            if "://" not in target and not (page.parent / target).resolve().exists():
                broken.append(f"{page_name(page)}: {target}")
    assert broken == []


# What `mkdocs build` imports: mkdocs.yml's theme, plugins and hooks (the docs extra).
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings_handlers.python", "markdown_exec", "matplotlib")


@pytest.mark.skipif(
    any(importlib.util.find_spec(name.partition(".")[0]) is None for name in DOCS_EXTRA),
    reason="the docs extra is not installed (mkdocs, its plugins); .ci/run builds the site",
)
def test_site_builds_in_strict_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "search" / "search_index.json").exists()


def test_the_front_page_shows_the_codemod_s_own_output(tmp_path: Path) -> None:
    """docs/index.md's "after" is what ``python -m pytreekit.migrate`` makes of its "before",
    and its last block prints what its comments say."""
    require("libcst")
    from migrate_helpers import codemod, write

    page = ROOT / "docs" / "index.md"
    blocks = [block for block in code_blocks(page) if block.language == "python"]
    [before] = [block.code for block in blocks if block.heading == "`model.py` before"]
    [after, demo] = [block.code for block in blocks if block.heading == "`model.py` after"]
    write(tmp_path, {"model.py": before})
    assert codemod(tmp_path, "model.py").code == 0
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == after
    commands = [block.code for block in code_blocks(page) if block.heading == "The codemod"]
    assert "python -m pytreekit.migrate model.py" in commands[0]
    run = subprocess.run(
        [sys.executable, "-c", after + demo],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    said = re.findall(r"^print\(.*\)  # (.*)$", demo, re.MULTILINE)
    assert run.stdout.splitlines() == said


def test_the_host_callback_recipe_holds_in_a_fresh_process() -> None:
    """docs/using/jax-export.md's last block exports a model that runs an Equinox check, with
    EQX_ON_ERROR=nan set before Equinox is imported; without that line, exporting fails as the
    page says. Each runs in a fresh interpreter (Equinox reads the setting once, on import)."""
    require("equinox")
    page = ROOT / "docs" / "using" / "jax-export.md"
    [recipe] = [
        block.code
        for block in code_blocks(page)
        if block.language == "python" and "EQX_ON_ERROR" in block.code
    ]
    line = 'os.environ["EQX_ON_ERROR"] = "nan"'
    assert line in recipe

    def run(code: str) -> subprocess.CompletedProcess[str]:
        env = {key: value for key, value in os.environ.items() if key != "EQX_ON_ERROR"}
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
        )

    works = run(recipe)
    assert works.returncode == 0, works.stderr
    said = re.findall(r"^print\(.*\)  # (\[[^\]]*\])", recipe, re.MULTILINE)
    assert works.stdout.splitlines() == said
    fails = run(recipe.replace(line, ""))
    assert "NotImplementedError: serialization of host_callbacks is not yet implemented" in (
        fails.stderr
    )
    assert "NotImplementedError: serialization of host_callbacks" in page.read_text("utf-8")
