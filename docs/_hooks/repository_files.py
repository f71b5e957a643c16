"""mkdocs hook: publish the repository files the pages cite (tests, benchmarks, examples).

The "Why pytreekit" page backs each claim with a test or a benchmark, and the guide points at the
runnable examples. Those files live outside ``docs/``; this hook adds each one to the site as a
static file under its repository path (``tests/test_why.py``), so a page links to it as
``[...](tests/test_why.py)`` from the site's root (``../tests/...`` from a subfolder), and
``mkdocs build --strict`` fails on a link to a file that does not exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ("tests/*.py", "tests/typing/*.py", "benchmarks/*.py", "examples/*.py")


def on_files(files: Files, config: Any) -> Files:
    for pattern in PUBLISHED:
        for path in sorted(ROOT.glob(pattern)):
            uri = path.relative_to(ROOT).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
