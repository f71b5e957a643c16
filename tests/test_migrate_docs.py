"""The migration guide (docs/migrating/register-pytree-node.md) shows what the codemod really does,
and explains every code it gives. (Its python blocks run in tests/test_docs.py, as every page's.)"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT, require

require("libcst")

from markdown_blocks import code_blocks  # noqa: E402
from migrate_helpers import codemod, write  # noqa: E402

from pytreekit.migrate._cli import _parser  # noqa: E402
from pytreekit.migrate._codes import TITLES  # noqa: E402

PAGE = ROOT / "docs" / "migrating" / "register-pytree-node.md"


def _block(heading: str, language: str) -> str:
    [block] = [b for b in code_blocks(PAGE) if b.heading == heading and b.language == language]
    return block.code


def test_the_guide_shows_the_codemod_s_own_output(tmp_path: Path) -> None:
    write(tmp_path, {"models.py": _block("`models.py` before", "python")})
    result = codemod(tmp_path, "models.py")
    assert result.code == 0
    assert (tmp_path / "models.py").read_text() == _block("`models.py` after", "python")
    assert result.out == _block("The run", "text")


def test_the_guide_shows_the_readme_pattern_first(tmp_path: Path) -> None:
    write(tmp_path, {"layers.py": _block("`layers.py` before", "python")})
    result = codemod(tmp_path, "layers.py")
    assert result.code == 0
    assert (tmp_path / "layers.py").read_text() == _block("`layers.py` after", "python")
    assert result.out == _block("The run on `layers.py`", "text")
    text = PAGE.read_text(encoding="utf-8")
    assert text.index("### `layers.py` before") < text.index("### `models.py` before")


def test_the_guide_shows_every_option_the_ci_recipe_and_the_count_line() -> None:
    text = PAGE.read_text(encoding="utf-8")
    options = [
        option
        for action in _parser()._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]
    assert len(options) >= 13
    for option in options:
        assert f"`{option}" in text, option
    assert "python -m pytreekit.migrate --check --comments never src/mypkg" in text
    count_line = _block("In CI", "text").strip()
    assert re.fullmatch(
        r"\d+ files would be transformed, \d+ skipped, \d+ warnings, \d+ failures\.", count_line
    )


def test_the_guide_explains_every_code() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for code, title in TITLES.items():
        match = re.search(rf"^### {code}\n\n\*\*(.+?)\*\*", text, re.MULTILINE | re.DOTALL)
        assert match, f"no paragraph for {code}"
        assert " ".join(match.group(1).replace("`", "").split()).lower() == title.lower(), code
    assert sorted(re.findall(r"^### (PTK\d+)$", text, re.MULTILINE)) == sorted(TITLES)


def test_the_readme_and_the_changelog_mention_the_codemod() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python -m pytreekit.migrate" in readme
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    since_020 = changelog.split("## [Unreleased]")[1].split("\n## [0.2.0]")[0]
    assert "python -m pytreekit.migrate" in since_020
