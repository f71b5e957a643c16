"""README.md is the front door: its code blocks run (tests/test_docs.py runs them with every
page's), its test command is the one .ci/run runs, and its links lead into the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from markdown_blocks import python_blocks

import pytreekit

README = ROOT / "README.md"


def test_readme_is_a_front_door_with_the_quickstart() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    blocks = python_blocks(README)
    assert [block.heading for block in blocks] == ["30 seconds"]
    quickstart = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    for name in ("class Linear", "class Model", "def sgd_step"):
        assert name in blocks[0].code and name in quickstart
    assert "mkdocs serve" in text


@pytest.mark.parametrize(
    ("marker", "command"),
    [
        ("quickstart", "python -m pip install . && python examples/quickstart.py"),
        ("test", 'python -m pip install ".[test]" && python -m pytest -n auto --dist loadfile'),
    ],
)
def test_readme_commands_follow_their_markers(marker: str, command: str) -> None:
    """.ci/run runs the line two below each marker (after the opening fence): keep that shape."""
    lines = README.read_text(encoding="utf-8").splitlines()
    at = lines.index(f"<!-- ci: {marker} command -->")
    assert lines[at + 1 : at + 4] == ["```bash", command, "```"]


def test_readme_relative_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [
        target for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in target
    ]
    assert {"docs/pitfalls.md", "docs/speed.md", "docs/why.md", "docs/api.md"} <= set(targets)
    assert [target for target in targets if not (ROOT / target).exists()] == []
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    anchors = re.findall(r"\]\(#([^)]+)\)", text)
    assert [anchor for anchor in anchors if anchor not in headings] == []


def test_api_page_links_every_public_name_to_its_reference() -> None:
    """The API page's summary table names every public name, each linked to its generated
    entry (mkdocs build --strict fails on a reference that does not resolve)."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\[`(\w+)`\]\[pytreekit\.(\w+)\]", text))
    for name in pytreekit.__all__:
        if name == "MISSING":  # the standard library's sentinel: no docstring of ours
            assert "`MISSING`" in text
            continue
        assert (name, name) in linked, f"docs/api.md links no `{name}`"
    assert "::: pytreekit" in text


def test_every_site_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    in_nav = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", config, re.MULTILINE))
    on_disk = {
        path.relative_to(ROOT / "docs").as_posix()
        for path in (ROOT / "docs").rglob("*.md")
        if "_hooks" not in path.parts and path != ROOT / "docs" / "speed" / "machine.md"
    }
    assert on_disk == in_nav, on_disk ^ in_nav
    assert Path(ROOT / "docs" / "_hooks" / "repository_files.py").exists()
