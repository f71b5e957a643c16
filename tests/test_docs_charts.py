"""The Speed page's tables (benchmarks/tables.py) and charts (benchmarks/charts.py), from a run's
results: here a small made-up run (the benchmarks themselves are exercised by
tests/test_benchmarks.py), and the committed docs/speed/results.json the page is built from."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from benchmarks import tables

pytest.importorskip("matplotlib", reason="matplotlib (the docs and bench extras) draws the charts")

from benchmarks import charts

HAND = tables.HAND
STYLES = (HAND, "equinox.Module", "pytreekit annotated", "pytreekit existing class")
SIZES = (4, 64, 512)


def made_up_results(*, repeats: int = 11, json_keys: bool = False) -> dict[str, Any]:
    """A run's results, with a different figure for every style, operation and size."""

    def measured(base: float) -> dict[Any, Any]:
        return {
            (str(size) if json_keys else size): {
                style: {
                    "median_us": base * size * (1 + 0.25 * i),
                    "spread": 1.1 + i,
                    "repeats": repeats,
                }
                for i, style in enumerate(STYLES)
            }
            for size in SIZES
        }

    return {
        "machine": {
            "date": "2026-11-26",
            "cpu": "Test CPU",
            "cores": 2,
            "python": "3.11.7",
            "platform": "Linux",
            "jax_backend": "cpu",
            "versions": {"jax": "0.10.2", "pytreekit": "0.2.0"},
        },
        "missing": {"flax.struct": "flax is not installed"},
        "tree": {op: measured(0.5 + i / 10) for i, op in enumerate(tables.OPERATIONS)},
        "optax": measured(20.0),
        "construction": {
            "annotated vs @dataclass": {"pytreekit": 450.0, "reference": 390.0, "ratio": 1.15},
            "replace vs dataclasses.replace": {"pytreekit": 900, "reference": 1000, "ratio": 0.9},
        },
        "decoration": {
            "annotated: @pytree_class vs @dataclass": {
                "pytreekit": 625_000.0,
                "reference": 565_000.0,
                "ratio": 1.11,
            },
        },
        "ad": {
            "custom_jvp_method: jit(grad) dispatch": {"pytreekit": 21.0, "jax": 20.0, "ratio": 1.05}
        },
        "import": {"import jax (ms)": 600.0, "import pytreekit after jax (ms)": 9.2, "runs": 7},
    }


def test_the_summary_is_each_style_against_hand_written_code_at_the_middle_size() -> None:
    results = made_up_results()
    summary = tables.summary(results)
    assert summary.startswith("At 64 layers")
    rows = {line.split(" | ")[0].strip("| "): line for line in summary.splitlines()[3:]}
    assert rows["hand-written, `object.__new__`"].count("1.00x") == 7  # 6 operations, optax
    # equinox is the second style: 1.25 times hand-written's figure everywhere
    assert rows["`equinox.Module`"].count("1.25x") == 7
    assert "flatten, as constructed" not in summary.splitlines()[2]


def test_every_operation_has_a_tab_with_every_size_in_us() -> None:
    tabs = tables.operation_tabs(made_up_results())
    titles = re.findall(r'^=== "(.+)"$', tabs, re.MULTILINE)
    assert titles == [*tables.OPERATIONS.values(), "optax step"]
    first = tabs.split("=== ")[1]
    assert "| style | 4 layers | 64 layers | 512 layers |" in first
    # flatten, hand-written, 64 layers: 0.5 * 64 µs
    assert (
        "| hand-written, `object.__new__` | 2.0 (1.00x) | 32.0 (1.00x) | 256.0 (1.00x) |" in first
    )


def test_code_is_code_in_the_tables() -> None:
    """A bare object.__new__ in a table renders as object.**new**."""
    text = tables.summary(made_up_results()) + tables.operation_tabs(made_up_results())
    assert "object.__new__" in text
    assert re.search(r"(?<!`)object\.__new__(?!`)", text) is None


def test_units_are_the_tables_own() -> None:
    results = made_up_results()
    assert "| classes | pytreekit (ns) | reference (ns) | ratio |" in tables.construction(results)
    decoration = tables.decoration(results)
    assert "| classes | pytreekit (µs) | reference (µs) | ratio |" in decoration
    assert "| 625 | 565.0 | 1.11x |" in decoration  # from ns to µs
    assert "JAX by hand (µs)" in tables.derivatives(results)
    assert "9 ms (median of 7 runs" in tables.import_time(results)


def test_the_run_note_says_where_and_how_noisy_and_flags_a_smoke_run() -> None:
    note = tables.machine(made_up_results())
    assert "2026-11-26" in note and "Test CPU" in note and "jax 0.10.2" in note
    assert "median of 11 repeats" in note and "4.10x (worst: " in note
    # where the worst spread was: a measurement whose ratios are the least certain
    found = [
        (float(m["spread"]), f"(worst: {operation} at {size} layers")
        for operation, by_size in tables.measurements(made_up_results()).items()
        for size, measured in by_size.items()
        for m in measured.values()
    ]
    assert any(where in note for spread, where in found if spread == max(found)[0])
    assert "Not measured: flax.struct: flax is not installed" in note
    assert "smoke run" not in note
    assert "commit" not in note  # a run that recorded none
    committed = made_up_results()
    committed["machine"]["commit"] = "v0.4.0-12-gabc1234"
    assert "The code measured is commit `v0.4.0-12-gabc1234`." in tables.machine(committed)
    smoke = tables.machine(made_up_results(repeats=1))
    assert "A smoke run, not a measurement" in smoke
    assert "spread" not in smoke  # one repeat has none


def test_results_read_back_from_json_give_the_same_tables() -> None:
    """JSON turns the sizes into strings; the tables are the same."""
    results = made_up_results()
    from_json = json.loads(json.dumps(made_up_results(json_keys=True)))
    for name, section in tables.SECTIONS.items():
        assert section(from_json) == section(results), name


def _svg_texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_the_tree_chart_shows_the_tables_figures() -> None:
    """Every bar's label is a figure of the operations table, at the same size: drawn from the
    same results, the chart and the table cannot disagree."""
    results = made_up_results()
    svg = charts.render(results)["tree-operations.svg"]
    labels = _svg_texts(svg)
    tabs = tables.operation_tabs(results)
    for operation in charts.CHART_OPERATIONS:
        assert f"{tables.OPERATIONS[operation]}, 64 layers" in labels
        for style in STYLES:
            measured = results["tree"][operation][64][style]["median_us"]
            ratio = measured / results["tree"][operation][64][HAND]["median_us"]
            assert f"{measured:.1f}  ({ratio:.2f}x)" in labels
            assert f"{measured:.1f} ({ratio:.2f}x)" in tabs
    assert "hand-written, object.__new__" in labels  # plain text, no Markdown
    assert any("lower is better" in label for label in labels)


@pytest.mark.parametrize(
    ("chart", "table", "unit"),
    [("construction.svg", tables.construction, "ns"), ("decoration.svg", tables.decoration, "µs")],
)
def test_the_bar_charts_use_their_tables_units_and_figures(
    chart: str, table: Any, unit: str
) -> None:
    results = made_up_results()
    labels = _svg_texts(charts.render(results)[chart])
    assert any(label.startswith(f"{unit} per") and "lower is better" in label for label in labels)
    text = table(results)
    for label in labels:
        if match := re.fullmatch(r"(\d+)  \((\d\.\d\dx)\)", label):
            assert f"| {match.group(1)} | " in text and f"| {match.group(2)} |" in text


def test_charts_are_drawn_at_the_column_width() -> None:
    """8.5 inches (612 pt, 816 CSS pixels), so a desktop browser shows 10-point text at its
    size."""
    for name, svg in charts.render(made_up_results()).items():
        width = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg).group(1))
        assert 600 <= width <= 612, name


def test_the_legend_is_above_the_bars() -> None:
    """The legend sits above the axes, where it hides no bar."""
    svg = charts.render(made_up_results())["construction.svg"]
    legend = re.search(r'<g id="legend_1">.*?<path d="M [\d.]+ ([\d.]+)', svg, re.S)
    axes = re.search(r'<g id="patch_2">\s*<path d="([^"]+)"', svg)
    assert legend and axes
    top_of_axes = min(float(y) for y in re.findall(r"[\d.]+ ([\d.]+)", axes.group(1)))
    assert float(legend.group(1)) < top_of_axes  # SVG's y grows downwards


def test_the_same_results_draw_the_same_files(tmp_path: Path) -> None:
    first = charts.write(made_up_results(), tmp_path / "a")
    second = charts.write(made_up_results(), tmp_path / "b")
    assert [p.name for p in first] == ["tree-operations.svg", "construction.svg", "decoration.svg"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_charts_command_line_reads_a_saved_run(tmp_path: Path) -> None:
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(made_up_results(json_keys=True)), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.charts", str(saved), str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "tree-operations.svg").exists()


def test_the_speed_page_is_drawn_from_the_committed_results() -> None:
    """docs/speed.md's markers name sections the tables module makes, its images the charts; the
    committed results file makes every one of them."""
    page = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    markers = re.findall(r"^<!--\s*speed:\s*(\S+)\s*-->$", page, re.MULTILINE)
    # The front page's sentence is on the front page (tests/test_docs_speed.py).
    assert sorted(markers) == sorted(set(tables.SECTIONS) - {"front-page"})
    results = json.loads((ROOT / "docs" / "speed" / "results.json").read_text(encoding="utf-8"))
    for name in markers:
        assert tables.SECTIONS[name](results)
    images = re.findall(r"!\[[^\]]*\]\(speed/([\w-]+\.svg)\)", page)
    assert sorted(images) == sorted(charts.render(results))
    # Each linked to itself at full size (on a phone the chart is shrunk to the screen).
    for image in images:
        assert f"[Open the chart at full size](speed/{image})" in page


def test_pages_quote_speed_figures_the_results_have() -> None:
    """A ``<!-- speed-ratio: OPERATION, STYLE -->`` quote on any page names a measured figure."""
    results = json.loads((ROOT / "docs" / "speed" / "results.json").read_text(encoding="utf-8"))
    size = tables.middle_size(results)
    quotes = [
        quote
        for page in (ROOT / "docs").rglob("*.md")
        for quote in re.findall(r"<!--\s*speed-ratio:\s*([^,]+?),\s*(.+?)\s*-->", page.read_text())
    ]
    assert quotes, "docs/why.md quotes the round trips"
    for operation, style in quotes:
        assert tables.ratio(tables.at(results["tree"][operation], size), style) is not None


def test_a_text_past_the_figure_s_edge_is_refused_and_the_charts_have_none() -> None:
    """A one-line axis caption wider than the chart was cut off ("...against the refere"):
    drawing such a chart fails; the real charts, from the committed results, draw."""
    plt = charts._pyplot()
    figure, ax = plt.subplots(figsize=(3, 2), layout="constrained")
    ax.set_xlabel("µs per call, median (lower is better); in brackets: against the reference " * 2)
    assert charts.cut_texts(figure)
    with pytest.raises(ValueError, match="cut off at the figure's edge"):
        charts._svg(figure)
    results = json.loads((ROOT / "docs" / "speed" / "results.json").read_text(encoding="utf-8"))
    assert sorted(charts.render(results)) == [
        "construction.svg",
        "decoration.svg",
        "tree-operations.svg",
    ]
