"""mkdocs hook: the Speed page's tables and charts, and every speed figure a page quotes, from
one run's results.

``python -m benchmarks`` writes docs/speed/results.json. Every figure on docs/speed.md comes from
that file when the site is built: each ``<!-- speed: NAME -->`` line of the page becomes the
Markdown that ``benchmarks.tables.SECTIONS[NAME]`` makes of the results, and the charts the page
shows (``speed/*.svg``) are drawn from them by ``benchmarks.charts``. Another page quotes a figure
with ``<!-- speed-ratio: OPERATION, STYLE -->`` (that style's time against hand-written code, at
the size the Speed page's summary shows) and that size with ``<!-- speed-size -->``. A table, a
chart and a quoted figure cannot come from different runs.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "speed" / "results.json"
MARKER = re.compile(r"^<!--\s*speed:\s*(\S+)\s*-->$", re.MULTILINE)
QUOTE = re.compile(r"<!--\s*speed-(?:size|ratio:\s*(?P<operation>[^,]+?),\s*(?P<style>.+?))\s*-->")


def _benchmarks(module: str) -> Any:
    # The benchmarks package is the repository's, next to docs/ (not an installed package).
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"benchmarks.{module}")


def _results() -> dict[str, Any]:
    if not RESULTS.is_file():
        raise PluginError(f"{RESULTS.relative_to(ROOT)} is missing: run `python -m benchmarks`")
    return dict(json.loads(RESULTS.read_text(encoding="utf-8")))


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for name, svg in _benchmarks("charts").render(_results()).items():
        files.append(File.generated(config, f"speed/{name}", content=svg))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    tables = _benchmarks("tables")
    results = _results()

    def section(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in tables.SECTIONS:
            raise PluginError(
                f"docs/{page.file.src_uri}: no speed section {name!r} ({list(tables.SECTIONS)})"
            )
        return str(tables.SECTIONS[name](results))

    def quote(match: re.Match[str]) -> str:
        size = tables.middle_size(results)
        if match.group("operation") is None:
            return str(size)
        measured = tables.at(results["tree"].get(match.group("operation"), {}), size)
        ratio = tables.ratio(measured, match.group("style"))
        if ratio is None:
            raise PluginError(f"docs/{page.file.src_uri}: the results have no {match.group(0)}")
        return f"{ratio:.2f}x"

    return QUOTE.sub(quote, MARKER.sub(section, markdown))
