"""The command line: scan, analyze, optionally verify, rewrite, then write, diff or check.

Exit codes follow ruff and black: 0 when done (or nothing to do), 1 when ``--check`` finds files
the codemod would change, 2 for a usage error or a failure (a file not read, decoded, parsed or
written, or a failed verification). A failure is per file: the run goes on past it, names it,
and the report (with its final count line) is always printed.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ._analyze import Options, Outcome, analyze, settle
from ._codes import TITLES
from ._report import as_json, as_text, build
from ._rewrite import rewrite
from ._scan import Module, Project, loops, resolved, scan
from ._verify import DEFAULT_COMMAND, VerificationError, verify
from ._write import explain as _why
from ._write import groups, write_group

DESCRIPTION = """\
Rewrite hand-written JAX pytree registrations (register_pytree_node, register_pytree_node_class,
register_pytree_with_keys, register_pytree_with_keys_class) into @pytree_class, where the codemod
can prove the leaves, their order and the statics stay the same. Every other registration gets a
'# TODO[pytreekit-migrate] PTKnnn: reason' comment (unless --comments never); the report gives
every reason, with file:line:col; the migration guide explains each code.
"""

EXIT_CHANGES = 1  # --check: a file would change
EXIT_FAILED = 2  # a usage error, or a file that failed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytreekit.migrate",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories")
    mode = parser.add_argument_group("mode (default: rewrite the files in place)")
    mode.add_argument(
        "--diff", action="store_true", help="print a unified diff of the changes; write nothing"
    )
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when any file would change (for CI)",
    )
    parser.add_argument(
        "--unsafe",
        action="store_true",
        help="also apply rewrites that change leaf order or key paths, drop a conversion, or "
        "delete a registration in another module (PTK2xx; always reported)",
    )
    parser.add_argument(
        "--adopt-dunders",
        action="store_true",
        help="let pytreekit generate __eq__ and __repr__ (default: eq=False, repr=False keep the "
        "class's own behaviour, including hashing by identity)",
    )
    parser.add_argument(
        "--comments",
        choices=("always", "never"),
        default="always",
        help="'never': leave no TODO comment (the report alone says why; for CI with --check)",
    )
    parser.add_argument(
        "--line-length",
        type=int,
        metavar="N",
        help="the longest TODO comment line (default: line-length of [tool.ruff] or [tool.black] "
        "in the nearest pyproject.toml, else 88)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip files and directories matching GLOB (a name, or a path below the working "
        "directory); repeatable",
    )
    parser.add_argument(
        "--select",
        type=_code_list,
        default=None,
        metavar="CODES",
        help="report and comment only these codes (comma-separated, prefixes allowed: PTK1)",
    )
    parser.add_argument(
        "--ignore",
        type=_code_list,
        default=(),
        metavar="CODES",
        help="neither report nor comment these codes (comma-separated, prefixes allowed)",
    )
    parser.add_argument(
        "--transparent-decorator",
        action="append",
        default=[],
        metavar="NAME",
        help="a class decorator (qualified name, e.g. mypkg.utils.register) that only sets "
        "attributes and returns the class; repeatable",
    )
    parser.add_argument(
        "--format-command",
        metavar="CMD",
        help="run CMD on the files the codemod wrote, their paths appended (e.g. 'ruff "
        "format'); a file it fails on is named as a failure",
    )
    parser.add_argument(
        "--report", choices=("text", "json"), default="text", help="report format (default: text)"
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="worker processes that rewrite and check the changed modules (default 1: none; "
        "0: one per CPU). Modules are parsed once, in the main process, after a text "
        "pre-filter",
    )
    parser.add_argument(
        "--verify",
        metavar="CMD",
        help=f"run CMD (alone, --verify runs {DEFAULT_COMMAND!r}) on the original code, "
        "recording the constructor arguments of each registered class; then rebuild those "
        "instances with the original and the rewritten classes and compare leaves, statics, "
        "treedefs, round trips, jit and grad. A class that differs is left as it was and fails "
        "the run (exit 2). Give another command as --verify=CMD",
    )
    return parser


def _code_list(text: str) -> tuple[str, ...]:
    codes = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    for code in codes:
        if not code.startswith("PTK") or not any(known.startswith(code) for known in TITLES):
            raise argparse.ArgumentTypeError(f"{code} is not a code (PTK101, PTK2, ...)")
    return codes


def _arguments(argv: Sequence[str]) -> list[str]:
    """``--verify`` alone means the default command; ``--verify=CMD`` gives one. (An optional
    value would take the path that follows, as in ``--verify src/mypkg``.)"""
    return [f"--verify={DEFAULT_COMMAND}" if arg == "--verify" else arg for arg in argv]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the codemod with the command line's arguments; returns the exit code."""
    parser = _parser()
    arguments = parser.parse_args(_arguments(sys.argv[1:] if argv is None else argv))
    missing = [_missing(path) for path in arguments.paths if not path.exists()]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    if arguments.line_length is not None and arguments.line_length < 40:
        parser.error("--line-length must be at least 40")
    terminal = sys.stderr.isatty()
    reading = _Progress(sys.stderr, "modules parsed") if terminal else None
    project = scan(arguments.paths, arguments.exclude, progress=reading)
    if reading is not None:
        reading.done()
    options = Options(
        unsafe=arguments.unsafe,
        adopt_dunders=arguments.adopt_dunders,
        transparent=frozenset(arguments.transparent_decorator),
    )
    outcomes = analyze(project, options)
    verification_failed = False
    if arguments.verify is not None:
        try:
            verification_failed = not verify(project, outcomes, arguments.verify, options)
        except VerificationError as error:
            sys.stderr.write(f"pytreekit.migrate --verify: {error}\n")
            return EXIT_FAILED
    settle(
        outcomes,
        select=arguments.select,
        ignore=arguments.ignore,
        comments=arguments.comments == "always",
    )
    length = arguments.line_length or _line_length(arguments.paths)
    jobs = arguments.jobs if arguments.jobs > 0 else os.cpu_count() or 1
    progress = _Progress(sys.stderr, "modules rewritten") if terminal else None
    sources, failures = rewrite(project, outcomes, line_length=length, jobs=jobs, progress=progress)
    if progress is not None:
        progress.done()
    if arguments.diff or arguments.check:  # what the run would write, no more
        _withdraw_broken(project, outcomes, sources, failures)
    else:
        _write_all(project, outcomes, sources, failures)
        if arguments.format_command and sources:
            failures.update(_format(arguments.format_command, list(sources)))
    report = build(
        project,
        outcomes,
        list(sources),
        verify=arguments.verify,
        failures={module.display: error for module, error in failures.items()},
        written=not (arguments.diff or arguments.check),
    )
    out = sys.stdout
    if arguments.diff:
        for module, new in sorted(sources.items(), key=lambda item: item[0].display):
            _emit(sys.stdout, module, diff(module, new))
        out = sys.stderr
    out.write(as_json(report) + "\n" if arguments.report == "json" else as_text(report))
    if verification_failed or report["summary"]["failures"]:
        return EXIT_FAILED
    if arguments.check and sources:
        return EXIT_CHANGES
    return 0


class _Progress:
    """One line on a terminal, rewritten in place: how many modules are done."""

    def __init__(self, stream: TextIO, what: str) -> None:
        self.stream = stream
        self.what = what
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        self.stream.write(f"\rpytreekit.migrate: {done}/{total} {self.what}")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _write_all(
    project: Project,
    outcomes: Sequence[Outcome],
    sources: dict[Module, str],
    failures: dict[Module, str],
) -> None:
    """Write the new sources, a group of files whose rewrites depend on each other together or
    not at all (one that could not be rewritten withdraws its group); a module not written
    moves from ``sources`` to ``failures``."""
    for group in _withdraw_broken(project, outcomes, sources, failures):
        found = write_group([(module, sources[module]) for module in group])
        for module, why in found.items():
            failures[module] = why
            del sources[module]


def _withdraw_broken(
    project: Project,
    outcomes: Sequence[Outcome],
    sources: dict[Module, str],
    failures: dict[Module, str],
) -> list[list[Module]]:
    """Move to ``failures`` the modules of a group of which one could not be rewritten (the
    files of a hierarchy are written together or not at all; --check and --diff say so too);
    the other groups' modules to write, group by group."""
    whole: list[list[Module]] = []
    for group in groups(project, outcomes, [*sources, *failures]):
        items = [module for module in group if module in sources]
        broken = [module for module in group if module in failures]
        if broken and items:
            why = (
                f"not written: {broken[0].display}, rewritten with it, could not be rewritten; "
                f"the files of a hierarchy are written together or not at all"
            )
            for module in items:
                failures[module] = why
                del sources[module]
        elif items:
            whole.append(items)
    return whole


def diff(module: Module, new: str) -> list[str]:
    """The unified diff of the module's text: lines end at a line feed only, as diff and patch
    read them (a CR-only file is one line to them; a form feed ends none), a last line without
    one is marked "No newline at end of file", and a BOM starts the first line as it starts the
    file. ``diff_bytes`` gives it in the file's own encoding, which ``patch -p1`` applies to give
    ``new`` exactly."""
    bom = "\ufeff" if module.encoding == "utf-8-sig" else ""
    lines = difflib.unified_diff(
        _patch_lines(bom + module.source),
        _patch_lines(bom + new),
        fromfile=f"a/{module.display}",
        tofile=f"b/{module.display}",
    )
    return [line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}" for line in lines]


_NO_NEWLINE = "\\ No newline at end of file\n"


def diff_bytes(module: Module, lines: Sequence[str]) -> bytes:
    """``diff``'s lines as the file's bytes: its text in its encoding (a latin-1 file's
    ``é`` is one byte there, as in the file), the file names as the file system spells them."""
    codec = "utf-8" if module.encoding == "utf-8-sig" else module.encoding  # the BOM is text
    data = bytearray()
    for index, line in enumerate(lines):
        if index < 2 or line.startswith("@@ "):  # the ---/+++ headers and the hunks' ranges
            data += os.fsencode(line)
            continue
        text, marked, _ = line.partition(f"\n{_NO_NEWLINE}")
        data += line[:1].encode("ascii") + text[1:].encode(codec)
        data += f"\n{_NO_NEWLINE}".encode("ascii") if marked else b""
    return bytes(data)


def _emit(stream: TextIO, module: Module, lines: Sequence[str]) -> None:
    """A module's diff on ``stream``: its bytes (``diff_bytes``) where the stream has a binary
    buffer, as a terminal or a pipe does; else (an in-memory stream) its text."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.writelines(lines)
        return
    stream.flush()
    buffer.write(diff_bytes(module, lines))
    buffer.flush()


def _patch_lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [f"{part}\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _format(command: str, modules: Sequence[Module]) -> dict[Module, str]:
    """The project's formatter on the written files (as LibCST's runner does); the files
    whose run failed, and why."""
    argv = [*shlex.split(command), *(str(module.path) for module in modules)]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as error:
        why = f"written, but --format-command could not run: {_why(error)}"
        return dict.fromkeys(modules, why)
    if result.returncode == 0:
        return {}
    tail = " ".join((result.stderr or result.stdout).strip().splitlines()[-2:])[:200]
    why = f"written, but --format-command failed (exit {result.returncode}): {tail}"
    return dict.fromkeys(modules, why)


def _missing(path: Path) -> str:
    """A path given that names nothing to read: a symbolic link says where it leads."""
    if loops(path):
        return f"{path} (a symbolic link that loops, to {os.readlink(path)})"
    if path.is_symlink():
        return f"{path} (a dangling symbolic link, to {os.readlink(path)})"
    return str(path)


def _line_length(paths: Sequence[Path]) -> int:
    """The project's line length: [tool.ruff] or [tool.black] of the nearest pyproject.toml."""
    start = resolved(Path(paths[0]))
    for directory in [start, *start.parents]:
        candidate = directory / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            config = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 88
        tool = config.get("tool", {})
        for section in (tool.get("ruff", {}), tool.get("black", {})):
            value = section.get("line-length", section.get("line_length"))
            if isinstance(value, int):
                return value
        return 88
    return 88
