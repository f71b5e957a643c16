"""The command line: scan, analyze, optionally verify, rewrite, then write, diff or check.

Exit codes follow ruff and black: 0 when done (or nothing to do), 1 when ``--check`` finds files
the codemod would change, 2 for a usage error, a file that could not be parsed (the run goes on
past it and names it) or a failed verification.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from ._analyze import Options, analyze
from ._report import as_json, as_text, build
from ._rewrite import rewrite
from ._scan import scan
from ._verify import DEFAULT_COMMAND, VerificationError, verify

DESCRIPTION = """\
Rewrite hand-written JAX pytree registrations (register_pytree_node, register_pytree_node_class,
register_pytree_with_keys, register_pytree_with_keys_class) into @pytree_class, where the codemod
can prove the leaves, their order and the statics stay the same. Every other registration gets a
'# TODO[pytreekit-migrate] PTKnnn: reason' comment; the migration guide explains each code.
"""


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
        help="also apply rewrites that change leaf order or key paths, or delete a registration "
        "in another module (PTK2xx; always reported)",
    )
    parser.add_argument(
        "--adopt-dunders",
        action="store_true",
        help="let pytreekit generate __eq__ and __repr__ (default: eq=False, repr=False keep the "
        "class's own behaviour, including hashing by identity)",
    )
    parser.add_argument(
        "--report", choices=("text", "json"), default="text", help="report format (default: text)"
    )
    parser.add_argument(
        "--verify",
        nargs="?",
        const=DEFAULT_COMMAND,
        metavar="CMD",
        help="run CMD (default: %(const)r) on the original code, recording the constructor "
        "arguments of each registered class; then rebuild those instances with the original and "
        "the rewritten classes and compare leaves, statics, treedefs, round trips, jit and grad. "
        "A class that differs is left as it was and fails the run (exit 2)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the codemod with the command line's arguments; returns the exit code."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    missing = [str(path) for path in arguments.paths if not path.exists()]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    project = scan(arguments.paths)
    options = Options(unsafe=arguments.unsafe, adopt_dunders=arguments.adopt_dunders)
    outcomes = analyze(project, options)
    verification_failed = False
    if arguments.verify is not None:
        try:
            verification_failed = not verify(project, outcomes, arguments.verify, options)
        except VerificationError as error:
            sys.stderr.write(f"pytreekit.migrate --verify: {error}\n")
            return 2
    sources = rewrite(project, outcomes)
    report = build(project, outcomes, list(sources), verify=arguments.verify)
    out = sys.stdout
    if arguments.diff:
        for module, new in sorted(sources.items(), key=lambda item: item[0].display):
            sys.stdout.writelines(
                difflib.unified_diff(
                    module.source.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"a/{module.display}",
                    tofile=f"b/{module.display}",
                )
            )
        out = sys.stderr
    elif not arguments.check:
        for module, new in sources.items():
            module.path.write_bytes(new.encode("utf-8"))
    out.write(as_json(report) + "\n" if arguments.report == "json" else as_text(report))
    if verification_failed or report["summary"]["files_not_parsed"]:
        return 2
    if arguments.check and sources:
        return 1
    return 0
