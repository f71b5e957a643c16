"""The reasons the codemod gives, each with a stable code.

A code appears in the report, in the JSON report, and in the one comment the codemod leaves above a
registration it does not rewrite; the migration guide (docs/migrating/register-pytree-node.md) has
a paragraph per code. Codes never change meaning: a second run recognises its own comments by them.

- PTK1xx: left as it is; a person decides.
- PTK2xx: unsafe, applied only with ``--unsafe``: the rewrite is provably equal in leaves and
  statics, but changes something a user may depend on.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

# The comment left above a registration: "# TODO[pytreekit-migrate] PTK104: <reason>".
COMMENT_PREFIX = "# TODO[pytreekit-migrate] "
COMMENT_PATTERN = re.compile(r"#\s*TODO\[pytreekit-migrate\]\s*(PTK\d{3})\b")

TITLES: dict[str, str] = {
    "PTK100": "left by a '# noqa: PTK' comment",
    "PTK101": "registration not a plain module-level statement",
    "PTK102": "registration under a condition",
    "PTK103": "registered class not defined in the scanned files",
    "PTK104": "flatten returns a derived value",
    "PTK105": "aux data is a dict or a derived value",
    "PTK106": "flatten reads a property, method or class attribute",
    "PTK107": "unflatten is not the inverse of flatten",
    "PTK108": "__init__ does not set exactly the attributes flatten carries",
    "PTK109": "__init__ transforms a value before storing it",
    "PTK110": "class registered more than once",
    "PTK111": "a container pytreekit does not model",
    "PTK112": "the class customises its creation or its attributes",
    "PTK113": "another class of its hierarchy cannot be rewritten",
    "PTK114": "a static value is unhashable",
    "PTK115": "a base class outside the scanned files",
    "PTK116": "flatten or unflatten cannot be read",
    "PTK117": "the file does not survive LibCST byte for byte",
    "PTK120": "verification failed",
    "PTK199": "the codemod failed on this registration",
    "PTK201": "leaf order changes",
    "PTK202": "key paths change",
    "PTK203": "registration in another module",
    "PTK204": "subclasses become pytrees",
    "PTK205": "a conversion no longer runs on unflatten",
}

UNSAFE = frozenset(code for code in TITLES if code.startswith("PTK2"))
# A registration carrying this code's comment stays as it is until the comment is deleted: it is
# what --verify leaves behind when the rewritten class behaved differently.
PINNED = frozenset({"PTK120"})


# A comment's further lines, when its reason does not fit on one.
CONTINUATION = "#   "


def comment(code: str, reason: str, width: int = 88) -> str:
    """The comment left above a registration, its lines joined by newlines: the code and the
    whole reason, wrapped at ``width`` characters onto ``CONTINUATION`` lines (a reason cut
    short would say nothing a person could act on), the same for the same code and reason, so
    that a second run changes nothing."""
    unsafe = " (unsafe: --unsafe applies it)" if code in UNSAFE else ""
    words = " ".join(reason.split())
    lines = textwrap.wrap(
        words,
        width,
        initial_indent=f"{COMMENT_PREFIX}{code}{unsafe}: ",
        subsequent_indent=CONTINUATION,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(lines) or f"{COMMENT_PREFIX}{code}{unsafe}:"


def reason_of(lines: Sequence[str]) -> str:
    """The reason a comment (its first line, then its continuation lines) gives."""
    first = lines[0].partition(":")[2] if lines else ""
    rest = [line.removeprefix(CONTINUATION) for line in lines[1:]]
    return " ".join(" ".join([first, *rest]).split())
