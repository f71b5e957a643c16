"""Every speed figure and comparison the site and the README state in prose comes from the
benchmark results (docs/speed/results.json): the Speed page's and the front page's sentences are
made from them when the site is built (benchmarks/tables.py), and the README's words, which no
build rewrites, are checked against them here. A later run that changes the figures changes the
sentences, or fails this file."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from conftest import ROOT

from benchmarks import tables

RESULTS = json.loads((ROOT / "docs" / "speed" / "results.json").read_text(encoding="utf-8"))
SENTENCES = ("findings", "derivative-notes", "init-check", "front-page")
# A ratio written as a figure: "1.3x", "~4x", "2.56x".
RATIO = re.compile(r"~?\b\d+(?:\.\d+)?x\b")


def _prose(text: str) -> str:
    """``text`` without its code blocks, inline code and HTML comments (the markers)."""
    text = re.sub(r"^(\s*)(`{3,}).*?^\1\2\s*$", "", text, flags=re.M | re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def test_no_page_states_a_ratio_by_hand() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {
        f"{page.relative_to(ROOT)}: {ratio}"
        for page in pages
        for ratio in RATIO.findall(_prose(page.read_text(encoding="utf-8")))
    }
    assert found == set()


def test_the_pages_take_their_sentences_from_the_results() -> None:
    speed = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    for name in ("findings", "derivative-notes", "init-check"):
        assert f"<!-- speed: {name} -->" in speed
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "<!-- speed: front-page -->" in index


def _every_ratio(results: dict[str, Any]) -> set[str]:
    """Every ratio the results give, as the tables print it."""
    found = set()
    for by_size in tables.measurements(results).values():
        for size in tables.sizes(results):
            measured = tables.at(by_size, size)
            for style in measured:
                value = tables.ratio(measured, style)
                if value is not None:
                    found.add(f"{value:.2f}x")
    for section in ("construction", "ad"):
        found |= {f"{r['ratio']:.2f}x" for r in results.get(section, {}).values()}
    return found


def _slower(results: dict[str, Any], factor: float) -> dict[str, Any]:
    """The results with pytreekit's every tree time multiplied by ``factor``."""
    changed = copy.deepcopy(results)
    for by_size in tables.measurements(changed).values():
        for measured in by_size.values():
            for style in tables.PYTREEKIT:
                if style in measured:
                    measured[style]["median_us"] *= factor
    return changed


@pytest.mark.parametrize("results", [RESULTS, _slower(RESULTS, 1.5)], ids=["run", "slower"])
def test_each_sentence_quotes_figures_of_the_tables_with_their_size_and_jax(
    results: dict[str, Any],
) -> None:
    ratios = _every_ratio(results)
    jax = f"JAX {results['machine']['versions']['jax']}"
    for name in SENTENCES:
        text = tables.SECTIONS[name](results)
        quoted = re.findall(r"\d+\.\d\dx", text)
        assert quoted, name
        assert set(quoted) <= ratios, name
        if name != "init-check":  # a construction figure: no model size, no JAX
            assert jax in text, name
    sizes = tables.sizes(results)
    assert f"at {sizes[0]} to {sizes[-1]} layers" in tables.findings(results)
    assert f"{tables.middle_size(results)}-layer model" in tables.front_page(results)


def test_a_claim_in_words_is_made_only_when_the_figures_bear_it_out() -> None:
    slower = _slower(RESULTS, 1.5)
    for results, holds in ((RESULTS, True), (slower, False)):
        ours = [
            value
            for op in ("tree_flatten", "tree_unflatten", "round trip", "tree_map")
            for style in tables.PYTREEKIT
            for value in tables._ratios(results, op, style)
        ]
        assert (max(ours) <= 1 + tables.SAME) is holds
        said = "cost what hand-written code costs" in tables.findings(results)
        assert said is holds
        assert ("costs what the pair you wrote costs" in tables.front_page(results)) is holds
    # register_dataclass's flatten said faster than Python's only while it is.
    c_flatten = copy.deepcopy(RESULTS)
    for measured in c_flatten["tree"]["tree_flatten"].values():
        measured["register_dataclass"]["median_us"] = 2 * measured[tables.HAND]["median_us"]
    assert "flattens in C++" in tables.findings(RESULTS)
    assert "flattens in C++" not in tables.findings(c_flatten)


def test_the_readme_claims_hold_for_the_results() -> None:
    """The README says pytreekit's flatten, unflatten and round trip cost what hand-written code
    costs, and that its round trips are faster than register_dataclass's, flax.struct's and
    Equinox's: true at every size of the run, or the README must change."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (
        "flatten, unflatten and round trips cost what a careful `register_pytree_node` pair "
        "costs, and round trips are faster than with `register_dataclass`, flax.struct or "
        "Equinox" in readme
    )
    for operation in ("tree_flatten", "tree_unflatten", "round trip"):
        for style in tables.PYTREEKIT:
            ratios = tables._ratios(RESULTS, operation, style)
            assert ratios and max(ratios) <= 1 + tables.SAME, (operation, style, ratios)
    for size in tables.sizes(RESULTS):
        measured = tables.at(RESULTS["tree"]["round trip"], size)
        ours = max(measured[style]["median_us"] for style in tables.PYTREEKIT)
        for peer in tables.PEERS:
            assert ours < measured[peer]["median_us"], (size, peer)


def test_benchmark_names_render_as_written() -> None:
    assert tables.label("annotated with __post_init__ vs @dataclass") == (
        "annotated with `__post_init__` vs `@dataclass`"
    )
    assert tables.label("custom_jvp_method: eager call, 1 leaves") == (
        "custom_jvp_method: eager call, 1 leaf"
    )
    assert tables.label("eager call, 512 leaves") == "eager call, 512 leaves"
    table = tables.construction(RESULTS) + tables.derivatives(RESULTS)
    assert re.search(r"(?<!`)__\w+__(?!`)", table) is None
