"""Shared by the tests that run documentation: find the code blocks of a Markdown file and run
one as a script of its own, in a fresh interpreter, the way a reader would paste it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytreekit

# `<!-- readme-test: skip (reason) -->` or `<!-- pitfalls-test: raises -->` right above a fence.
MARKER = re.compile(r"<!--\s*[\w-]+-test:\s*(?P<word>\w+)\s*(?:\((?P<text>.*)\))?\s*-->")


@dataclass(frozen=True)
class Block:
    language: str
    heading: str
    index: int  # among the blocks of this language under the same heading, from 1
    line: int  # of the opening fence, from 1
    code: str
    marker: str | None  # the marker's word ("skip", "raises"), if the block has one
    marker_text: str | None  # what the marker says in brackets

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-") or "top"
        return f"{slug}-{self.index}"


def code_blocks(text: str, source: str = "Markdown") -> list[Block]:
    """The fenced code blocks of a Markdown text, with the heading each belongs to."""
    blocks: list[Block] = []
    lines = text.splitlines()
    heading = ""
    per_heading: dict[tuple[str, str], int] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(`{3,})\s*(\S*)", line)
        if fence is None:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            i += 1
            continue
        closing = re.compile(rf"^{fence.group(1)}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:
            raise ValueError(f"{source} line {i + 1}: code fence is never closed")
        language = fence.group(2)
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i > 0 else None
        key = (heading, language)
        per_heading[key] = per_heading.get(key, 0) + 1
        blocks.append(
            Block(
                language=language,
                heading=heading,
                index=per_heading[key],
                line=i + 1,
                code="\n".join(lines[i + 1 : end]) + "\n",
                marker=marker.group("word") if marker else None,
                marker_text=marker.group("text") if marker else None,
            )
        )
        i = end + 1  # a '#' inside a block is a comment, not a heading
    return blocks


def imported_libraries(code: str) -> set[str]:
    """Top-level names of the modules a block imports."""
    return {
        match.group(1)
        for match in re.finditer(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", code, re.MULTILINE)
    }


# Runs a script as __main__ and, if it raises, reports the exception as the last line of a
# traceback names it (module-qualified unless builtin) with its whole message.
_RUNNER = """
import json, runpy, sys
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except BaseException as error:
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else (
        f"{kind.__module__}.{kind.__qualname__}")
    print("\\n" + json.dumps({"exception": name, "message": str(error)}))
    raise
"""


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    exception: str | None  # "TypeError: message" when the script raised

    def report(self) -> str:
        return f"exit code {self.returncode}\n{self.stderr[-4000:]}"


def run_script(code: str, directory: Path, name: str = "block") -> Outcome:
    """Run ``code`` in a fresh interpreter, in ``directory``, with JAX on CPU.

    The interpreter sees the pytreekit this test session imports (the clone, or what CI
    installed) and nothing else from the test environment: not conftest's ``sys.path``
    additions, not the repository as working directory.
    """
    script = directory / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    runner = directory / "_run_block.py"
    runner.write_text(_RUNNER, encoding="utf-8")
    package_home = str(Path(pytreekit.__file__).resolve().parent.parent)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": package_home}
    result = subprocess.run(
        [sys.executable, str(runner), str(script)],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    exception = None
    if result.returncode != 0:
        last = result.stdout.rstrip().rpartition("\n")[2]
        try:
            raised = json.loads(last)
        except json.JSONDecodeError:
            raised = None
        if isinstance(raised, dict) and "exception" in raised:
            exception = f"{raised['exception']}: {raised['message']}"
    return Outcome(result.returncode, result.stdout, result.stderr, exception)


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
