"""Every ```python block of README.md runs, as written, as a script of its own.

A block is a newcomer's first contact with the library, so each must be self-contained: imports
and definitions included. A block that is deliberately partial is marked by the line
``<!-- readme-test: skip (reason) -->`` right above its opening fence and is skipped with that
reason. Blocks importing optree or torch need those libraries, as the backend tests do
(``conftest.require``: skipped when absent, a failure in CI). The ```bash blocks are not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, require
from markdown_blocks import Block, code_blocks, imported_libraries, run_script, undefined_names

README = ROOT / "README.md"
OPTIONAL_LIBRARIES = {"optree", "torch"}

BLOCKS = [
    block
    for block in code_blocks(README.read_text(encoding="utf-8"), "README.md")
    if block.language == "python"
]


def skip_if_marked(block: Block) -> None:
    if block.marker == "skip":
        pytest.skip(f"README.md line {block.line}: {block.marker_text}")
    if block.marker is not None:
        pytest.fail(f"README.md line {block.line}: unknown readme-test marker {block.marker!r}")


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_readme_block_runs(block: Block, tmp_path: Path) -> None:
    skip_if_marked(block)
    for library in sorted(imported_libraries(block.code) & OPTIONAL_LIBRARIES):
        require(library)
    outcome = run_script(block.code, tmp_path, f"readme_{block.id.replace('-', '_')}")
    if outcome.returncode != 0:
        pytest.fail(
            f"README.md block at line {block.line} (under '{block.heading}') failed: "
            f"{outcome.report()}",
            pytrace=False,
        )


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_readme_block_names_are_defined(block: Block, tmp_path: Path) -> None:
    skip_if_marked(block)
    report = undefined_names(block.code, tmp_path)
    if report:
        pytest.fail(
            f"README.md block at line {block.line} (under '{block.heading}') uses names it "
            f"does not define or import:\n{report}",
            pytrace=False,
        )


def test_readme_has_python_blocks_and_few_skips() -> None:
    assert len(BLOCKS) >= 4
    skipped = [block for block in BLOCKS if block.marker == "skip"]
    assert len(skipped) <= len(BLOCKS) // 4, "prefer runnable blocks to skipped ones"


def test_readme_test_command_follows_its_marker() -> None:
    """.ci/run runs the line two below the marker (after the opening fence): keep that shape."""
    lines = README.read_text(encoding="utf-8").splitlines()
    at = lines.index("<!-- ci: test command -->")
    assert lines[at + 1] == "```bash"
    assert lines[at + 2].startswith("python -m pip install ")
    assert "python -m pytest" in lines[at + 2]
    assert lines[at + 3] == "```"


def test_block_parser_headings_indices_and_markers() -> None:
    text = "\n".join(
        [
            "# Title",
            "```python",
            "a = 1",
            "```",
            "## Section two",
            "```bash",
            "# not a heading",
            "```",
            "<!-- readme-test: skip (needs a GPU) -->",
            "```python",
            "# a comment, not a heading",
            "b = 2",
            "```",
            "<!-- pitfalls-test: raises -->",
            "```python",
            "c = 3",
            "```",
        ]
    )
    blocks = [
        (b.language, b.id, b.line, b.marker, b.marker_text) for b in code_blocks(text, "t.md")
    ]
    assert blocks == [
        ("python", "title-1", 2, None, None),
        ("bash", "section-two-1", 6, None, None),
        ("python", "section-two-1", 10, "skip", "needs a GPU"),
        ("python", "section-two-2", 15, "raises", None),
    ]
    assert code_blocks(text)[2].code == "# a comment, not a heading\nb = 2\n"


def test_block_parser_rejects_an_unclosed_fence() -> None:
    with pytest.raises(ValueError, match=r"^t\.md line 2: code fence is never closed$"):
        code_blocks("text\n```python\nx = 1\n", "t.md")


def test_run_script_reports_the_exception_as_a_traceback_names_it(tmp_path: Path) -> None:
    ok = run_script("print('hello')\n", tmp_path)
    assert (ok.returncode, ok.stdout, ok.exception) == (0, "hello\n", None)
    failed = run_script("import pickle\nraise pickle.PicklingError('no\\nway')\n", tmp_path)
    assert failed.returncode == 1
    assert failed.exception == "_pickle.PicklingError: no\nway"
    assert "Traceback" in failed.stderr
    builtin = run_script("raise TypeError('bad')\n", tmp_path)
    assert builtin.exception == "TypeError: bad"


def test_undefined_names_are_reported(tmp_path: Path) -> None:
    assert undefined_names("import jax\nx = jax.numpy.ones(2)\n", tmp_path) == ""
    report = undefined_names("def rule():\n    return jax.jvp\n", tmp_path)
    assert "F821 Undefined name `jax`" in report


def test_readme_relative_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [
        target for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in target
    ]
    assert "docs/pitfalls.md" in targets
    assert [target for target in targets if not (ROOT / target).exists()] == []
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    anchors = re.findall(r"\]\(#([^)]+)\)", text)
    assert [anchor for anchor in anchors if anchor not in headings] == []


def test_readme_links_every_public_name_to_the_module_documenting_it() -> None:
    import inspect

    import pytreekit

    text = README.read_text(encoding="utf-8")
    links = dict(re.findall(r"\[`(\w+)`\]\((pytreekit/[^)]+)\)", text))
    for name in pytreekit.__all__:
        if name == "MISSING":  # the standard library's sentinel: no docstring of ours
            assert "`MISSING`" in text
            continue
        source = inspect.getsourcefile(getattr(pytreekit, name))
        assert source is not None
        assert name in links, f"README links no `{name}`"
        assert (ROOT / links[name]).resolve() == Path(source).resolve(), name
