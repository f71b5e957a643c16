"""mkdocs hook: the repository's Python files that the pages cite, as pages of the site.

The "Why pytreekit" page backs each claim with a test or a benchmark, and the guide points at
tests and at the runnable examples. Those files live outside ``docs/``. A page links to one at
its repository path, from the site's root (``tests/test_why.py``, ``../tests/...`` from a
subfolder), optionally with a function or class name as the anchor
(``tests/test_why.py#test_static_fields``). This hook turns each such link into one to a page:

- an example (``examples/*.py``) goes to its page in the examples gallery (``docs/examples/``,
  the page that includes the script), where it is shown with the output of a run;
- any other file (``tests/``, ``benchmarks/``) goes to a page generated from it: the file's code,
  highlighted with its line numbers, one section per top-level function or class, so the link
  opens at the test it names. These pages are out of the navigation and of the search.

Every module of the package (``pytreekit/``) gets such a page too: the API reference's "source"
links (docs/_templates/python/material/source_link.html.jinja writes them as
``pytreekit-source:PATH#NAME``) open the module's page at the top-level name, so they work
offline and show the code the site was built from. A generated page links to the file in the
repository only when mkdocs.yml's ``repo_url`` names one (it is empty until the repository is
published).

``mkdocs build --strict`` fails on a link to a file that does not exist, or to a name that the
file does not define at its top level. A link with a scheme (``https://...``) is left alone.
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GALLERY = DOCS / "examples"
PACKAGE = "pytreekit/"
SOURCES = ("tests/", "benchmarks/", PACKAGE)
# A Markdown link's target to a .py file of the repository (not an address with a scheme):
# (path)(#anchor)
LINK = re.compile(
    r"(?P<open>\]\()(?![a-zA-Z][\w+.-]*:)(?P<path>[^)#\s]+\.py)(?P<anchor>#[\w-]+)?(?P<close>\))"
)
# What the API reference's source links hold before on_page_content makes them relative.
SOURCE_LINK = re.compile(r'href="pytreekit-source:(?P<path>[\w/]+\.py)(?P<anchor>#\w+)?"')
SNIPPET = re.compile(r'--8<--\s+"(examples/[\w/]+\.py)"')


def _site_path(page_uri: str, target: str) -> str:
    """The repository path a page's relative link names (the docs root is the site's root)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), target))


def _cited(files: Files) -> set[str]:
    cited = set()
    for file in files.documentation_pages():
        text = Path(file.abs_src_path).read_text(encoding="utf-8") if file.abs_src_path else ""
        for match in LINK.finditer(text):
            path = _site_path(file.src_uri, match.group("path"))
            if path.startswith(SOURCES):
                cited.add(path)
    return cited


def _gallery() -> dict[str, str]:
    """Each example script's gallery page, found by the snippet that includes the script."""
    pages = {}
    for page in sorted(GALLERY.glob("*.md")):
        for script in SNIPPET.findall(page.read_text(encoding="utf-8")):
            pages.setdefault(script, page.relative_to(DOCS).as_posix())
    return pages


def _chunks(source: str) -> list[tuple[str | None, int, int]]:
    """``(name or None, first line, last line)`` of each top-level statement, the comments and
    blank lines before it included; consecutive statements that define no name are merged."""
    chunks: list[tuple[str | None, int, int]] = []
    start = 1
    for node in ast.parse(source).body:
        end = node.end_lineno or node.lineno
        name = (
            node.name
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else None
        )
        if name is None and chunks and chunks[-1][0] is None:
            chunks[-1] = (None, chunks[-1][1], end)
        else:
            chunks.append((name, start, end))
        start = end + 1
    return chunks


def _package_modules() -> set[str]:
    return {path.relative_to(ROOT).as_posix() for path in (ROOT / PACKAGE).rglob("*.py")}


def source_page(path: str, repo_url: str) -> str:
    """The Markdown of the page that shows the repository file at ``path``; with a ``repo_url``,
    a link to the file there."""
    source = (ROOT / path).read_text(encoding="utf-8")
    lines = source.splitlines()
    out = [
        "---",
        "search:",
        "  exclude: true",
        "---",
        "",
        f"# `{path}`",
        "",
    ]
    if repo_url:
        out += [f"In the repository: [{path}]({repo_url.rstrip('/')}/blob/main/{path}).", ""]
    for name, first, last in _chunks(source):
        body = lines[first - 1 : last]
        while body and not body[0].strip():
            body, first = body[1:], first + 1
        if name is not None:
            out += [f"## `{name}` {{#{name}}}", ""]
        fence = "````" if any(line.lstrip().startswith("```") for line in body) else "```"
        out += [f'{fence}python linenums="{first}"', *body, fence, ""]
    return "\n".join(out)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in sorted(_cited(files) | _package_modules()):
        if not (ROOT / path).is_file():
            continue  # the link stays as written: the strict build reports it as broken
        page = File.generated(
            config,
            path.removesuffix(".py") + ".md",
            content=source_page(path, config.repo_url or ""),
            inclusion=InclusionLevel.NOT_IN_NAV,
        )
        files.append(page)
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    gallery = _gallery()

    def rewrite(match: re.Match[str]) -> str:
        path = _site_path(page.file.src_uri, match.group("path"))
        target = gallery.get(path)
        if target is None and path.startswith(SOURCES):
            target = path.removesuffix(".py") + ".md"
        if target is None:
            return match.group(0)
        relative = posixpath.relpath(target, posixpath.dirname(page.file.src_uri) or ".")
        return f"{match.group('open')}{relative}{match.group('anchor') or ''}{match.group('close')}"

    return LINK.sub(rewrite, markdown)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    def relative(match: re.Match[str]) -> str:
        target = match.group("path").removesuffix(".py") + ".md"
        source = files.get_file_from_path(target)
        if source is None:
            raise PluginError(f"docs/{page.file.src_uri}: no page for {match.group('path')}")
        url = source.url_relative_to(page.file)
        return f'href="{url}{match.group("anchor") or ""}"'

    return SOURCE_LINK.sub(relative, html)
