"""docs/pitfalls.md stays true: every error it shows still occurs, and every fix still works.

Each entry (a ``##`` section) lists error texts in a ```text block, one per line, ``...`` standing
for what varies. Its ``<!-- pitfalls-test: raises -->`` scripts must each raise one of those
errors, and together raise all of them; its other ```python blocks (the fixes) must run cleanly.
The page's blocks run as every page's do (tests/markdown_blocks.py: found by Sybil, the page in a
fresh interpreter, each block a script of its own, as a reader would run it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT
from markdown_blocks import Block, code_blocks, page_outcomes

from pytreekit import custom_jvp_method, linearize, pytree_class

PAGE = ROOT / "docs" / "pitfalls.md"


@dataclass(frozen=True)
class Entry:
    title: str
    errors: tuple[str, ...]
    reproductions: tuple[Block, ...]
    fixes: tuple[Block, ...]


def entries(page: Path) -> list[Entry]:
    text = page.read_text(encoding="utf-8")
    blocks = code_blocks(page)
    titles = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    found = []
    for title in titles:
        own = [block for block in blocks if block.heading == title]
        errors = tuple(
            line
            for block in own
            if block.language == "text"
            for line in block.code.splitlines()
            if line.strip()
        )
        python = [block for block in own if block.language == "python"]
        found.append(
            Entry(
                title=title,
                errors=errors,
                reproductions=tuple(block for block in python if block.marker == "raises"),
                fixes=tuple(block for block in python if block.marker is None),
            )
        )
    return found


def error_pattern(shown: str) -> re.Pattern[str]:
    """The error text as the page shows it, with each ``...`` standing for anything."""
    return re.compile(".*?".join(re.escape(part) for part in shown.split("...")), re.DOTALL)


ENTRIES = entries(PAGE)
FIXES = [(entry, block) for entry in ENTRIES for block in entry.fixes]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@pytest.mark.parametrize("entry", ENTRIES, ids=[slug(entry.title) for entry in ENTRIES])
def test_each_error_shown_still_occurs(entry: Entry) -> None:
    unmatched = set(entry.errors)
    for block in entry.reproductions:
        outcome = page_outcomes(PAGE)[block.line]
        assert outcome.status == "raised" and outcome.exception is not None, (
            f"docs/pitfalls.md line {block.line} ('{entry.title}') no longer raises: "
            f"{outcome.detail}"
        )
        matching = [
            shown for shown in entry.errors if error_pattern(shown).fullmatch(outcome.exception)
        ]
        assert matching, (
            f"docs/pitfalls.md line {block.line} ('{entry.title}') now raises an error the page "
            f"does not show; update the page:\n{outcome.exception}"
        )
        unmatched -= set(matching)
    assert not unmatched, (
        f"'{entry.title}': no script on the page raises {sorted(unmatched)}; "
        "the error text changed or its reproduction is missing"
    )


@pytest.mark.parametrize(
    ("entry", "block"), FIXES, ids=[f"{slug(entry.title)}-{block.index}" for entry, block in FIXES]
)
def test_each_fix_runs(entry: Entry, block: Block) -> None:
    outcome = page_outcomes(PAGE)[block.line]
    if outcome.status != "passed":
        pytest.fail(
            f"docs/pitfalls.md line {block.line} ('{entry.title}'): the fix fails: "
            f"{outcome.detail}",
            pytrace=False,
        )


def test_every_entry_has_errors_a_reproduction_and_a_fix() -> None:
    assert len(ENTRIES) >= 7
    for entry in ENTRIES:
        assert entry.errors, entry.title
        assert entry.reproductions, entry.title
        assert entry.fixes, entry.title


def test_the_page_covers_the_errors_users_meet_first() -> None:
    shown = "\n".join(error for entry in ENTRIES for error in entry.errors)
    for text in [
        "zeros_like requires ndarray or scalar arguments, got <class 'function'>",  # optax.init
        "is not a valid JAX type",  # jax.grad on a function leaf
        "must return a pair (primal_out, tangent_out)",  # a JVP rule returning only the tangent
        "Can't pickle <function <lambda> at ...>",  # pickling a lambda in a static field
        "linearized function called on tangent values inconsistent",  # jax.linearize, int leaf
        "must have the same tree structure",  # None in a tangent given to jax.jvp
        "'list' object has no attribute 'shape'",  # replace does not convert
        "unhashable type",  # jax.jit(model)
    ]:
        assert text in shown, text


def test_page_links_resolve() -> None:
    text = PAGE.read_text(encoding="utf-8")
    # GitHub's anchors: lower case, punctuation dropped, spaces turned into hyphens.
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
        for title in re.findall(r"^## (.+)$", text, re.MULTILINE)
    }
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert len(links) == len(ENTRIES)
    assert [link for link in links if link not in anchors] == []


def test_error_pattern() -> None:
    pattern = error_pattern("TypeError: unhashable type: '...'")
    assert pattern.fullmatch("TypeError: unhashable type: 'Linear'")
    assert not pattern.fullmatch("TypeError: unhashable type: 'Linear' and more")
    assert error_pattern("ValueError: a:...").fullmatch("ValueError: a:\nline two")
    assert not error_pattern("a.b").fullmatch("aXb")


# Claims the page makes in prose rather than in a script, checked here.


def test_a_bare_tangent_of_length_two_is_refused() -> None:
    """The page says a bare tangent is an error even where its length happens to be two."""

    @pytree_class
    class Sine:
        def __init__(self, frequency):
            self.frequency = frequency

        @custom_jvp_method
        def __call__(self, x):
            return jnp.sin(self.frequency * x)

    @Sine.__call__.defjvp
    def _sine_jvp(primals, tangents):
        (self, x), (_, dx) = primals, tangents
        return jnp.cos(self.frequency * x) * self.frequency * dx

    x = jnp.asarray([0.0, 1.0])
    with pytest.raises(TypeError, match=r"_sine_jvp must return a pair .* shape \(2,\)"):
        jax.jvp(Sine(jnp.ones(2)), (x,), (jnp.ones(2),))


def test_linearize_holds_python_floats_fixed_unlike_jax() -> None:
    _, jax_jvp = jax.linearize(lambda x: 2 * x, 1.0)
    _, jvp_fn = linearize(lambda x: 2 * x, 1.0)
    assert jax_jvp(1.0) == 2.0
    assert jvp_fn(1.0) is None
    _, jvp_fn = linearize(lambda x: 2 * x, jnp.asarray(1.0))
    assert jvp_fn(jnp.asarray(1.0)) == 2.0
