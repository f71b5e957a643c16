"""The Speed page's tables and run notes, in Markdown, from one run's results.

``python -m benchmarks`` writes its results to docs/speed/results.json; when the site is built,
docs/_hooks/speed.py puts these tables into docs/speed.md and draws the charts
(benchmarks/charts.py) from that same file, so the page's figures all come from one run.

Each function takes the results as ``json.load`` reads them (sizes are then strings) or as
``benchmarks.run.main`` returns them (sizes are ints).
"""

from __future__ import annotations

import statistics
from typing import Any

HAND = "hand-written (object.__new__)"
# The operations of the tree tables, as the run names them, and their column titles.
OPERATIONS = {
    "tree_flatten": "flatten",
    "tree_unflatten": "unflatten",
    "round trip": "round trip",
    "tree_map": "tree_map",
    "tree_flatten_with_path": "flatten with path",
    "jax.jit dispatch": "jit dispatch",
    "tree_flatten (as constructed)": "flatten, as constructed",
}
OPTAX = "optax adam step"
# How the page names the run's styles (code as code: a bare object.__new__ would render bold).
STYLE_NAMES = {
    "builtin dict/list": "builtin `dict`/`list`",
    HAND: "hand-written, `object.__new__`",
    "register_dataclass": "`register_dataclass`",
    "equinox.Module": "`equinox.Module`",
    "flax.struct": "`flax.struct`",
    "pytreekit annotated": "**pytreekit**, annotated",
    "pytreekit existing class": "**pytreekit**, existing class",
}
# Fewer repeats than this: a smoke run (python -m benchmarks --quick), not a measurement.
MEASURED_REPEATS = 3


def style_name(style: str) -> str:
    return STYLE_NAMES.get(style, f"`{style}`")


def table(header: list[str], rows: list[list[str]], align: str = "l") -> str:
    """A Markdown table; the first column left-aligned, the others by ``align`` (l or r)."""
    rule = [":---", *(("---:" if align == "r" else ":---") for _ in header[1:])]
    lines = [header, rule, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def sizes(results: dict[str, Any]) -> list[int]:
    first = next(iter(results["tree"].values()))
    return sorted(int(size) for size in first)


def middle_size(results: dict[str, Any]) -> int:
    """The size the summary and the chart show: the middle one the run measured (64 of 4, 64,
    512)."""
    measured = sizes(results)
    return measured[len(measured) // 2]


def at(by_size: dict[Any, Any], size: int) -> dict[str, Any]:
    return by_size.get(size, by_size.get(str(size), {}))


def measurements(results: dict[str, Any]) -> dict[str, dict[Any, dict[str, Any]]]:
    """Every tree measurement by operation, then size, then style: the run's tree operations
    (in the order above) and the optax step."""
    found = {op: results["tree"][op] for op in OPERATIONS if op in results["tree"]}
    if results.get("optax"):
        found[OPTAX] = results["optax"]
    return found


def styles(results: dict[str, Any]) -> list[str]:
    """The styles measured, in the run's order."""
    seen: dict[str, None] = {}
    for by_size in measurements(results).values():
        for measured in by_size.values():
            seen.update(dict.fromkeys(measured))
    return list(seen)


def ratio(measured: dict[str, Any], style: str) -> float | None:
    if style not in measured or HAND not in measured:
        return None
    return float(measured[style]["median_us"] / measured[HAND]["median_us"])


def summary(results: dict[str, Any]) -> str:
    """Each style's time for each operation at the middle size, relative to hand-written code."""
    size = middle_size(results)
    titles = {**OPERATIONS, OPTAX: "optax step"}
    found = {op: at(by_size, size) for op, by_size in measurements(results).items()}
    found.pop("tree_flatten (as constructed)", None)
    rows = []
    for style in styles(results):
        cells = [_ratio_text(ratio(measured, style)) for measured in found.values()]
        rows.append([style_name(style), *cells])
    return (
        f"At {size} layers, each style's median time against hand-written code's (lower is "
        f"better; hand-written is 1.00x):\n\n"
        + table(["style", *(titles[op] for op in found)], rows, align="r")
    )


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _cell(measured: dict[str, Any], style: str) -> str:
    if style not in measured:
        return "-"
    value = ratio(measured, style)
    return f"{measured[style]['median_us']:.1f}" + ("" if value is None else f" ({value:.2f}x)")


def operation_tabs(results: dict[str, Any]) -> str:
    """One tab per operation: every style at every size, median µs and the ratio."""
    measured_sizes = sizes(results)
    tabs = []
    for operation, by_size in measurements(results).items():
        rows = []
        for style in styles(results):
            cells = [_cell(at(by_size, size), style) for size in measured_sizes]
            rows.append([style_name(style), *cells])
        title = OPERATIONS.get(operation, operation.removesuffix(" adam step") + " step")
        body = table(["style", *(f"{n} layers" for n in measured_sizes)], rows, align="r")
        tabs.append(f'=== "{title}"\n\n' + "\n".join(f"    {line}" for line in body.splitlines()))
    return "\n\n".join(tabs)


def construction(results: dict[str, Any]) -> str:
    rows = [
        [name, f"{r['pytreekit']:.0f}", f"{r['reference']:.0f}", f"{r['ratio']:.2f}x"]
        for name, r in results["construction"].items()
    ]
    return table(["classes", "pytreekit (ns)", "reference (ns)", "ratio"], rows, align="r")


def decoration(results: dict[str, Any]) -> str:
    rows = [
        [name, f"{r['pytreekit'] / 1e3:.0f}", f"{r['reference'] / 1e3:.1f}", f"{r['ratio']:.2f}x"]
        for name, r in results["decoration"].items()
    ]
    return table(["classes", "pytreekit (µs)", "reference (µs)", "ratio"], rows, align="r")


def derivatives(results: dict[str, Any]) -> str:
    rows = [
        [name, f"{r['pytreekit']:.1f}", f"{r['jax']:.1f}", f"{r['ratio']:.2f}x"]
        for name, r in results["ad"].items()
    ]
    return table(["benchmark", "pytreekit (µs)", "JAX by hand (µs)", "ratio"], rows, align="r")


def artifacts(results: dict[str, Any]) -> str:
    measured = results.get("artifacts")
    if not measured:
        return "*Not measured in this run.*"
    rows = [
        [
            name,
            f"{m['pickle']['median_us']:.0f}",
            f"{m['data']['median_us']:.0f}",
            f"{m['data']['median_us'] / m['pickle']['median_us']:.2f}x",
        ]
        for name, m in measured.items()
    ]
    return table(["operation", "pickle (µs)", "static data (µs)", "ratio"], rows, align="r")


def codemod(results: dict[str, Any]) -> str:
    measured = results.get("migrate")
    if not measured:
        return "*Not measured in this run.*"
    if "seconds" not in measured:
        return f"*Not measured: {measured.get('skipped', 'no timing in the results')}.*"
    text = (
        f"`python -m pytreekit.migrate --check` on a generated package of "
        f"{measured['lines']:,} lines with {measured['registrations']} registrations: "
        f"{measured['seconds']:.1f} s."
    )
    small = results.get("migrate_small")
    if small and "seconds_j1" in small:
        text += (
            f" On a tree of {small['files']:,} small files ({small['registrations']} "
            f"registrations): {small['seconds_j1']:.1f} s, {small['seconds_j2']:.1f} s with "
            f"`-j 2`."
        )
    return text


def import_time(results: dict[str, Any]) -> str:
    measured = results["import"]
    return (
        f"`import pytreekit` after `import jax`: "
        f"{measured['import pytreekit after jax (ms)']:.0f} ms (median of {measured['runs']} "
        f"runs of `python -X importtime`, with bytecode compiled as pip does on install)."
    )


def repeats(results: dict[str, Any]) -> int:
    return min(
        int(m["repeats"])
        for by_size in measurements(results).values()
        for measured in by_size.values()
        for m in measured.values()
    )


def spreads(results: dict[str, Any]) -> tuple[float, float]:
    """The median and the worst spread (slowest/fastest repeat of one measurement)."""
    found = sorted(
        float(m["spread"])
        for by_size in measurements(results).values()
        for measured in by_size.values()
        for m in measured.values()
    )
    return statistics.median(found), found[-1]


def machine(results: dict[str, Any]) -> str:
    """What the run measured on, how, and how noisy it was."""
    info = results["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in info["versions"].items())
    note = (
        f"All the figures on this page come from one run of `python -m benchmarks` on "
        f"{info.get('date', 'a date not recorded')}: {info['cpu']}, {info['cores']} cores, "
        f"Python {info['python']} on {info['platform']}, JAX backend {info['jax_backend']}; "
        f"{versions}."
    )
    if repeats(results) > 1:
        median_spread, worst_spread = spreads(results)
        note += (
            f" Each figure is a median of {repeats(results)} repeats; the spread between the "
            f"slowest and the fastest repeat of one measurement was {median_spread:.2f}x "
            f"(median) and {worst_spread:.2f}x (worst)."
        )
    if results.get("missing"):
        missing = "; ".join(f"{style}: {why}" for style, why in results["missing"].items())
        note += f" Not measured: {missing}."
    if repeats(results) < MEASURED_REPEATS:
        note += (
            '\n\n!!! warning "A smoke run, not a measurement"\n\n'
            "    These figures come from `python -m benchmarks --quick` (one repeat, tiny time "
            "budgets), which checks that the benchmarks and this page work. They are not "
            "measurements: the text around them describes what a full run shows."
        )
    return note


SECTIONS = {
    "summary": summary,
    "operations": operation_tabs,
    "construction": construction,
    "decoration": decoration,
    "derivatives": derivatives,
    "artifacts": artifacts,
    "codemod": codemod,
    "import": import_time,
    "machine": machine,
}
