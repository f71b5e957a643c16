"""Charts of a benchmark run (matplotlib, SVG), for the documentation's Speed page.

    python -m benchmarks                              # runs, then writes the charts to docs/speed/
    python -m benchmarks.charts results.json [DIR]    # charts of a saved run

Written into DIR (docs/speed/ by default):

- ``tree-operations.svg``: per-node cost (µs per layer) of flatten, unflatten and round trip
  against model size, one line per style (log-log);
- ``construction.svg``: building and replacing an instance, pytreekit against the reference;
- ``decoration.svg``: decorating a class, when the run measured it (``benchmarks/decoration.py``);
- ``machine.md``: the run's machine and versions, which the Speed page includes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "docs" / "speed"
OPERATIONS = ("tree_flatten", "tree_unflatten", "round trip")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "pytreekit"  # the same run gives the same file
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller files, searchable
    return plt


def _save(figure: Any, path: Path) -> Path:
    figure.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    figure.clf()
    return path


def tree_operations(results: dict[str, Any], path: Path) -> Path:
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(OPERATIONS), figsize=(5 * len(OPERATIONS), 4.2), sharey=True)
    styles = sorted(
        {style for op in OPERATIONS for by in results["tree"][op].values() for style in by}
    )
    for ax, operation in zip(axes, OPERATIONS, strict=True):
        by_size = {int(size): measured for size, measured in results["tree"][operation].items()}
        sizes = sorted(by_size)
        for style in styles:
            points = [(n, by_size[n][style]["median_us"] / n) for n in sizes if style in by_size[n]]
            if points:
                pytreekit = style.startswith("pytreekit")
                ax.plot(
                    *zip(*points, strict=True),
                    marker="o",
                    label=style,
                    linewidth=2.5 if pytreekit else 1.2,
                    linestyle="-" if pytreekit else "--",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(operation)
        ax.set_xlabel("layers in the model (N)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per layer (median)")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    figure.suptitle("Per-node cost against model size (lower is better)")
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return _save(figure, path)


def _bars(rows: dict[str, dict[str, float]], title: str, unit: str, path: Path) -> Path:
    plt = _pyplot()
    names = list(rows)
    figure, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.5))
    positions = range(len(names))
    height = 0.38
    ax.barh(
        [p - height / 2 for p in positions],
        [rows[n]["pytreekit"] for n in names],
        height,
        label="pytreekit",
    )
    ax.barh(
        [p + height / 2 for p in positions],
        [rows[n]["reference"] for n in names],
        height,
        label="reference",
    )
    for p, name in zip(positions, names, strict=True):
        ax.annotate(
            f"{rows[name]['ratio']:.2f}x",
            (rows[name]["pytreekit"], p - height / 2),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(list(positions), names)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    return _save(figure, path)


def machine_note(results: dict[str, Any]) -> str:
    info = results["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in info["versions"].items())
    spreads = sorted(
        m["spread"]
        for by_size in results["tree"].values()
        for measured in by_size.values()
        for m in measured.values()
    )
    noise = (
        f" Spread (slowest/fastest of the repeats of one measurement): median "
        f"{spreads[len(spreads) // 2]:.2f}x, worst {spreads[-1]:.2f}x."
        if spreads
        else ""
    )
    date = info.get("date", "a date not recorded")
    return (
        f"Charts from one run of `python -m benchmarks` on {date}: "
        f"{info['cpu']}, {info['cores']} cores, Python {info['python']} on {info['platform']}, "
        f"JAX backend {info['jax_backend']}; {versions}.{noise}\n"
    )


def write(results: dict[str, Any], directory: Path = DEFAULT_DIR) -> list[Path]:
    """Write the charts (and machine.md) of a run into ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [tree_operations(results, directory / "tree-operations.svg")]
    if results.get("construction"):
        written.append(
            _bars(
                {
                    name: {
                        "pytreekit": r["pytreekit"],
                        "reference": r["reference"],
                        "ratio": r["ratio"],
                    }
                    for name, r in results["construction"].items()
                },
                "Building and replacing an instance\n"
                "(median ns; reference: dataclass or undecorated)",
                "ns per instance",
                directory / "construction.svg",
            )
        )
    decoration = results.get("decoration")
    if decoration:
        first = next(iter(decoration.values()))
        reference = next((k for k in first if k not in ("pytreekit", "ratio")), None)
        written.append(
            _bars(
                {
                    name: {
                        "pytreekit": r["pytreekit"],
                        "reference": r[reference] if reference else 0.0,
                        "ratio": r.get("ratio", 0.0),
                    }
                    for name, r in decoration.items()
                },
                "Decorating a class (median ns per class; reference: the same class\n"
                "as a @dataclass, or only defined)",
                "ns per decoration",
                directory / "decoration.svg",
            )
        )
    note = directory / "machine.md"
    note.write_text(machine_note(results), encoding="utf-8")
    return [*written, note]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.exit("usage: python -m benchmarks.charts RESULTS.json [DIRECTORY]")
    results = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    for path in write(results, Path(args[1]) if len(args) > 1 else DEFAULT_DIR):
        print(path)


if __name__ == "__main__":
    main()
