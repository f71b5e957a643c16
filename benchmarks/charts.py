"""The Speed page's charts (matplotlib, SVG), drawn from one run's results.

docs/_hooks/speed.py draws them when the site is built, from docs/speed/results.json, the file
the page's tables (benchmarks/tables.py) come from too. To look at them without building the
site:

    python -m benchmarks.charts docs/speed/results.json DIR   # writes DIR/*.svg

- ``tree-operations.svg``: flatten, unflatten and round trip at the size the page's summary
  table shows, in µs as in its tables, every style, the ratio to hand-written code at each bar;
- ``construction.svg``: building and replacing an instance against the reference, in ns as in
  its table;
- ``decoration.svg``: decorating a class against the reference, in µs as in its table.

Each is drawn at the width of the page's content column (8.5 inches: 816 CSS pixels), with
10-point text, so the browser shows it at its own size on a desktop.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks import tables

WIDTH = 8.5  # inches
CHART_OPERATIONS = ("tree_flatten", "tree_unflatten", "round trip")
PYTREEKIT, REFERENCE, OTHER = "#1565c0", "#424242", "#b0bec5"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.hashsalt": "pytreekit",  # the same results give the same file
            "svg.fonttype": "none",  # text stays text: smaller files, searchable
            "font.size": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def cut_texts(figure: Any) -> list[str]:
    """The texts of ``figure`` that reach past its edges (they would be cut off in the image):
    axis captions, titles, the bars' labels, the legend and the tick labels drawn."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    texts = []
    for ax in figure.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        legend = ax.get_legend()
        texts += legend.get_texts() if legend is not None else []
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = min(low, high), max(low, high)
            for tick in axis.get_major_ticks():
                if low <= tick.get_loc() <= high:
                    texts.append(tick.label1)
    cut = []
    for text in texts:
        if not text.get_visible() or not text.get_text().strip():
            continue
        extent = text.get_window_extent(renderer)
        if extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1 or extent.y0 < box.y0 - 1:
            cut.append(text.get_text())
    return cut


def _svg(figure: Any) -> str:
    cut = cut_texts(figure)
    if cut:
        _pyplot().close(figure)
        raise ValueError(f"chart texts cut off at the figure's edge: {cut}")
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None}, facecolor="white")
    _pyplot().close(figure)
    return buffer.getvalue()


def _plain(name: str) -> str:
    """A style's page name without Markdown (a chart label is plain text)."""
    return tables.style_name(name).replace("`", "").replace("**", "")


def _color(style: str) -> str:
    if style.startswith("pytreekit"):
        return PYTREEKIT
    return REFERENCE if style == tables.HAND else OTHER


def _bar_labels(ax: Any, bars: Any, labels: list[str]) -> None:
    for bar, label in zip(bars, labels, strict=True):
        ax.annotate(
            label,
            (bar.get_width(), bar.get_y() + bar.get_height() / 2),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
        )
    ax.margins(x=0.25)  # room for the labels at the longest bar


def tree_operations(results: dict[str, Any]) -> str:
    plt = _pyplot()
    size = tables.middle_size(results)
    styles = tables.styles(results)
    operations = [op for op in CHART_OPERATIONS if op in results["tree"]]
    height = 0.3 * len(styles) + 0.9
    figure, axes = plt.subplots(
        len(operations), 1, figsize=(WIDTH, height * len(operations)), layout="constrained"
    )
    for ax, operation in zip([axes] if len(operations) == 1 else axes, operations, strict=True):
        measured = tables.at(results["tree"][operation], size)
        shown = [style for style in styles if style in measured]
        values = [measured[style]["median_us"] for style in shown]
        bars = ax.barh(range(len(shown)), values, color=[_color(s) for s in shown], height=0.7)
        labels = []
        for style, value in zip(shown, values, strict=True):
            ratio = tables.ratio(measured, style)
            labels.append(f"{value:.1f}" + (f"  ({ratio:.2f}x)" if ratio is not None else ""))
        _bar_labels(ax, bars, labels)
        ax.set_yticks(range(len(shown)), [_plain(s) for s in shown])
        ax.invert_yaxis()
        ax.set_title(f"{tables.OPERATIONS[operation]}, {size} layers", loc="left")
        # Two short lines: one long line is cut at the figure's edge when the labels are wide.
        ax.set_xlabel("µs per call, median (lower is better)\nin brackets: against hand-written")
        ax.grid(True, axis="x", alpha=0.3)
    return _svg(figure)


def _pairs(rows: dict[str, dict[str, float]], scale: float, unit: str, title: str) -> str:
    """Two bars per row, pytreekit and the reference; the legend above the bars, so it hides
    none of them."""
    plt = _pyplot()
    names = list(rows)
    figure, ax = plt.subplots(figsize=(WIDTH, 0.65 * len(names) + 1.4), layout="constrained")
    positions = range(len(names))
    height = 0.38
    ours = ax.barh(
        [p - height / 2 for p in positions],
        [rows[n]["pytreekit"] / scale for n in names],
        height,
        label="pytreekit",
        color=PYTREEKIT,
    )
    theirs = ax.barh(
        [p + height / 2 for p in positions],
        [rows[n]["reference"] / scale for n in names],
        height,
        label="reference",
        color=OTHER,
    )
    _bar_labels(
        ax,
        ours,
        [f"{rows[n]['pytreekit'] / scale:.0f}  ({rows[n]['ratio']:.2f}x)" for n in names],
    )
    _bar_labels(ax, theirs, [f"{rows[n]['reference'] / scale:.0f}" for n in names])
    ax.set_yticks(list(positions), names)
    ax.invert_yaxis()
    ax.set_xlabel(f"{unit}, median (lower is better)\nin brackets: pytreekit against the reference")
    ax.set_title(title, loc="left")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, frameon=False, borderaxespad=1.5)
    ax.grid(True, axis="x", alpha=0.3)
    return _svg(figure)


def construction(results: dict[str, Any]) -> str:
    return _pairs(results["construction"], 1.0, "ns per call", "Building and replacing an instance")


def decoration(results: dict[str, Any]) -> str:
    return _pairs(results["decoration"], 1e3, "µs per class", "Decorating a class")


def render(results: dict[str, Any]) -> dict[str, str]:
    """The charts of a run, by file name: SVG text."""
    charts = {"tree-operations.svg": tree_operations(results)}
    if results.get("construction"):
        charts["construction.svg"] = construction(results)
    if results.get("decoration"):
        charts["decoration.svg"] = decoration(results)
    return charts


def write(results: dict[str, Any], directory: Path) -> list[Path]:
    """Write the charts of a run into ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, svg in render(results).items():
        path = directory / name
        path.write_text(svg, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.exit("usage: python -m benchmarks.charts RESULTS.json DIRECTORY")
    results = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    for path in write(results, Path(args[1])):
        print(path)


if __name__ == "__main__":
    main()
