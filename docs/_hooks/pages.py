"""mkdocs hook: what every page shows besides its own text.

- ``{{ version }}`` in a page is the version pip installs (pyproject.toml), defined once; the
  footer shows it on every page. ``{{ repo_url }}`` is the repository (mkdocs.yml's
  ``repo_url``): the build fails on a page that uses it while it is empty (no repository yet).
- A code block marked ``<!-- docs-test: raises -->`` (any ``word-test`` spelling; tests/
  markdown_blocks.py runs it and expects it to raise) is shown in a red box saying that it
  raises, and on such a page the blocks that run cleanly (the fixes, on the Pitfalls page) in a
  green one, so a reader never mistakes a reproduction for the fix.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
RAISES = re.compile(r"^(?P<indent>[ \t]*)<!--\s*[\w-]+-test:\s*raises\b.*-->\s*$")
CLOSING = re.compile(r"^[ \t]*```+[ \t]*$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+)\s*python\s*$")


def version() -> str:
    # The one version source, pytreekit.__version__, read without importing the package (as
    # setuptools reads it: pyproject.toml's dynamic version).
    tree = ast.parse((ROOT / "pytreekit" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__version__":
            return str(ast.literal_eval(node.value))
    raise RuntimeError("pytreekit/__init__.py sets no __version__")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    config.copyright = f"pytreekit {version()} · MIT License"
    return config


def _substitute(markdown: str, config: MkDocsConfig, where: str) -> str:
    repo_url = (config.repo_url or "").rstrip("/")
    values = {"repo_url": repo_url, "version": version()}

    def value(match: re.Match[str]) -> str:
        if match.group(1) == "repo_url" and not repo_url:
            # An empty address would make an empty link: the page must not need one.
            raise PluginError(f"docs/{where} uses {{{{ repo_url }}}}, but mkdocs.yml sets none")
        return values.get(match.group(1), match.group(0))

    return VARIABLE.sub(value, markdown)


def _boxed(lines: list[str], start: int, kind: str, title: str) -> tuple[list[str], int]:
    """The fenced block opening at ``lines[start]`` inside an admonition; the index after it."""
    opening = FENCE.match(lines[start])
    assert opening is not None
    indent, fence = opening.group("indent"), opening.group("fence")
    end = start + 1
    while not (lines[end].startswith(indent + fence) and not lines[end].strip("` \t")):
        end += 1
    body = [
        f"{indent}    {line[len(indent) :]}" if line.strip() else ""
        for line in lines[start : end + 1]
    ]
    return [f'{indent}!!! {kind} "{title}"', "", *body], end + 1


def _label_blocks(markdown: str) -> str:
    lines = markdown.splitlines()
    if not any(RAISES.match(line) for line in lines):
        return markdown
    out: list[str] = []
    index, inside_fence = 0, False
    while index < len(lines):
        line = lines[index]
        if not inside_fence and FENCE.match(line):
            raises = bool(out) and RAISES.match(out[-1]) is not None
            kind, title = (
                ("failure", "Reproduces the error: this raises")
                if raises
                else ("success", "Runs cleanly")
            )
            boxed, index = _boxed(lines, index, kind, title)
            out += boxed
            continue
        if not inside_fence and line.lstrip().startswith("```"):
            inside_fence = True
        elif inside_fence and CLOSING.match(line):
            inside_fence = False
        out.append(line)
        index += 1
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if getattr(page.file, "generated_by", None):
        return markdown  # a page made from a repository file shows the file as it is
    return _label_blocks(_substitute(markdown, config, page.file.src_uri))
