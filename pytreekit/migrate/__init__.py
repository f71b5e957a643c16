"""``python -m pytreekit.migrate PATH...``: hand-written JAX registrations rewritten into
``@pytree_class``, and the rest explained.

A codemod on LibCST (``pip install "pytreekit[migrate]"``, or ``pip install ".[migrate]"`` from a
clone): it scans the modules under the paths, rewrites each registration it can prove equivalent
(leaves, their order, statics, for every class of its hierarchy), leaves a short comment with a
code above every other one, and reports every reason, with ``file:line:col``. ``--diff`` and
``--check`` write nothing; ``--verify`` replays the constructor calls your tests make against the
original and the rewritten classes. The migration guide (docs/migrating/register-pytree-node.md)
explains every option and code. The report always ends with one count line:

>>> import tempfile
>>> from pytreekit.migrate import main
>>> main(["--check", tempfile.mkdtemp()])  # an empty directory: nothing to do, exit code 0
Summary: 0 files scanned, 0 registrations found:
    0 rewritten, 0 unsafe (not applied), 0 left, 0 failed verification; 0 files would change.
0 files would be transformed, 0 skipped, 0 warnings, 0 failures.
0
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("libcst") is None:
    raise ModuleNotFoundError(
        "pytreekit.migrate needs LibCST, which pytreekit installs with its 'migrate' extra "
        '(in a clone of pytreekit: pip install ".[migrate]"), or install it alone: '
        'pip install "libcst>=1.5"',
        name="libcst",
    )

from ._cli import main

__all__ = ["main"]
