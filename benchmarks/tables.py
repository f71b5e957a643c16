"""The Speed page's tables and run notes, in Markdown, from one run's results.

``python -m benchmarks`` writes its results to docs/speed/results.json; when the site is built,
docs/_hooks/speed.py puts these tables into docs/speed.md and draws the charts
(benchmarks/charts.py) from that same file, so the page's figures all come from one run.

Each function takes the results as ``json.load`` reads them (sizes are then strings) or as
``benchmarks.run.main`` returns them (sizes are ints).
"""

from __future__ import annotations

import re
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


def label(name: str) -> str:
    """A benchmark's name as a table shows it: dunders, decorators and ``==`` as code (bare,
    Markdown would make ``__post_init__`` a bold "post_init"), and "1 leaf", not "1 leaves"."""
    name = re.sub(r"\b1 leaves\b", "1 leaf", name)
    return re.sub(r"(@\w+|\b__\w+__\b|==|dataclasses\.replace|jax\.jvp)", r"`\1`", name)


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
        f"At {size} layers{_jax(results)}, each style's median time against hand-written "
        f"code's (lower is better; hand-written is 1.00x):\n\n"
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
        [label(name), f"{r['pytreekit']:.0f}", f"{r['reference']:.0f}", f"{r['ratio']:.2f}x"]
        for name, r in results["construction"].items()
    ]
    return table(["classes", "pytreekit (ns)", "reference (ns)", "ratio"], rows, align="r")


def decoration(results: dict[str, Any]) -> str:
    rows = [
        [
            label(name),
            f"{r['pytreekit'] / 1e3:.0f}",
            f"{r['reference'] / 1e3:.1f}",
            f"{r['ratio']:.2f}x",
        ]
        for name, r in results["decoration"].items()
    ]
    return table(["classes", "pytreekit (µs)", "reference (µs)", "ratio"], rows, align="r")


def derivatives(results: dict[str, Any]) -> str:
    rows = [
        [label(name), f"{r['pytreekit']:.1f}", f"{r['jax']:.1f}", f"{r['ratio']:.2f}x"]
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


def spreads(results: dict[str, Any]) -> tuple[float, float, str]:
    """The median and the worst spread (slowest/fastest repeat of one measurement), and the
    measurement the worst was in."""
    found = sorted(
        (float(m["spread"]), f"{operation} at {size} layers")
        for operation, by_size in measurements(results).items()
        for size, measured in by_size.items()
        for m in measured.values()
    )
    return statistics.median(spread for spread, _ in found), found[-1][0], found[-1][1]


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
    if info.get("commit"):
        note += f" The code measured is commit `{info['commit']}`."
    if repeats(results) > 1:
        median_spread, worst_spread, worst_where = spreads(results)
        note += (
            f" Each figure is a median of {repeats(results)} repeats; the spread between the "
            f"slowest and the fastest repeat of one measurement was {median_spread:.2f}x "
            f"(median) and {worst_spread:.2f}x (worst: {worst_where}, where ratios that differ "
            f"by less than that spread are noise)."
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


# --- the sentences around the tables --------------------------------------------------------
# Every ratio a page states in prose is made here from the results, with the sizes and the JAX
# version it holds for, so the text cannot contradict the tables a later run draws. A claim in
# words ("cost what hand-written code costs") is made only when the figures bear it out.

# Within this of hand-written code's time, a style "costs what hand-written code costs".
SAME = 0.10
PYTREEKIT = ("pytreekit annotated", "pytreekit existing class")
PEERS = ("register_dataclass", "flax.struct", "equinox.Module")
# How a sentence names each style.
PROSE_NAMES = {
    "builtin dict/list": "builtin dicts and lists",
    HAND: "hand-written code",
    "register_dataclass": "`register_dataclass`",
    "equinox.Module": "Equinox",
    "flax.struct": "flax.struct",
    "pytreekit annotated": "pytreekit (annotated)",
    "pytreekit existing class": "pytreekit (existing class)",
}


def _prose_name(style: str) -> str:
    return PROSE_NAMES.get(style, f"`{style}`")


def _jax(results: dict[str, Any]) -> str:
    version = results["machine"].get("versions", {}).get("jax")
    return f", JAX {version}" if version else ""


def _ratios(results: dict[str, Any], operation: str, style: str) -> list[float]:
    """``style``'s ratios to hand-written code for ``operation`` at every size measured."""
    by_size = measurements(results).get(operation, {})
    found = (ratio(at(by_size, size), style) for size in sizes(results))
    return [value for value in found if value is not None]


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.2f}x", f"{max(values):.2f}x"
    return low if low == high else f"{low} to {high}"


def _sizes_text(results: dict[str, Any]) -> str:
    measured = sizes(results)
    return f"{measured[0]} to {measured[-1]} layers{_jax(results)}"


def _styles_text(results: dict[str, Any], operation: str, names: tuple[str, ...]) -> str:
    parts = [
        f"{_span(found)} with {_prose_name(style)}"
        for style in names
        if (found := _ratios(results, operation, style))
    ]
    return ", ".join(parts)


def findings(results: dict[str, Any]) -> str:
    """What the tree tables say, as bullets whose every figure is the tables'."""
    where = _sizes_text(results)
    bullets = []
    core = ("tree_flatten", "tree_unflatten", "round trip", "tree_map")
    ours = [value for op in core for style in PYTREEKIT for value in _ratios(results, op, style)]
    if ours:
        verb = "cost what hand-written code costs" if max(ours) <= 1 + SAME else "take"
        text = (
            f"Flatten, unflatten, round trip and `tree_map` with pytreekit {verb}: "
            f"{_span(ours)} of its time at {where}."
        )
        peers = _styles_text(results, "round trip", PEERS)
        if peers:
            text += f" A round trip takes {peers}."
        flatten = _ratios(results, "tree_flatten", "register_dataclass")
        unflatten = _ratios(results, "tree_unflatten", "register_dataclass")
        if flatten and unflatten and max(flatten) < 1 < min(unflatten):
            text += (
                f" `register_dataclass` flattens in C++, faster than any Python flatten "
                f"({_span(flatten)}), but its unflatten calls `__init__` ({_span(unflatten)})."
            )
        bullets.append(text)
    constructed = "tree_flatten (as constructed)"
    existing = [
        (size, ratio(at(results["tree"].get(constructed, {}), size), PYTREEKIT[1]))
        for size in sizes(results)
    ]
    if all(value is not None for _, value in existing) and existing:
        figures = ", ".join(f"{value:.2f}x at {size} layers" for size, value in existing)
        text = (
            f"Instances of an existing class *as built by its `__init__`* flatten at {figures}"
            f"{_jax(results)}: pytreekit recognises the class's primary layout without reading the "
            f"instance's `__dict__` (on CPython, reading it makes later attribute reads of that "
            f"instance slower), so only the first instance of each layout is read that way."
        )
        first, last = existing[0][1], existing[-1][1]
        assert first is not None and last is not None
        if first > last + SAME / 2:
            text += " That first read is what shows in the smallest model."
        bullets.append(text)
    others = (*PYTREEKIT, *PEERS, "builtin dict/list")
    for operation, title in (
        ("jax.jit dispatch", "A jitted call's dispatch"),
        (OPTAX, "The optax step"),
    ):
        found = _styles_text(results, operation, others)
        if found:
            bullets.append(f"{title}, against hand-written code's time at {where}: {found}.")
    return "\n".join(f"- {bullet}" for bullet in bullets)


def _ad(results: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    return next((r for name, r in results.get("ad", {}).items() if name.startswith(prefix)), None)


def derivative_notes(results: dict[str, Any]) -> str:
    """The derivatives table in words: each figure is the table's."""
    sentences = []
    dispatch = _ad(results, "custom_jvp_method: jit(grad) dispatch")
    trace = _ad(results, "custom_jvp_method: trace of grad")
    if dispatch:
        sentences.append(
            f"A `custom_jvp_method` compiles to the same function as `jax.custom_jvp`: with "
            f"JAX {results['machine']['versions'].get('jax', '(version not recorded)')}, a "
            f"jitted `grad` call dispatches at {dispatch['ratio']:.2f}x the time of the same rule "
            f"written with `jax.custom_jvp`"
            + (f", and tracing `grad` takes {trace['ratio']:.2f}x." if trace else ".")
        )
    linearize = _ad(results, "linearize")
    if linearize:
        sentences.append(
            f"`linearize` applied to the tangents took {linearize['ratio']:.2f}x the time of as "
            f"many `jax.jvp` calls here; how much it saves depends on how much of each "
            f"`jax.jvp` call is tracing rather than computing: measure your own case before "
            f"relying on it."
        )
    return " ".join(sentences)


def init_check(results: dict[str, Any]) -> str:
    """What checking an instance after its own ``__init__`` costs, on each path, from the
    construction table."""
    proven = results["construction"].get("existing class vs undecorated")
    general = results["construction"].get("existing class, __init__ not proven vs undecorated")
    counted = results["construction"].get("annotated, its own __init__ not proven vs undecorated")
    if not proven:
        return ""
    text = (
        f"Decoration reads your `__init__`: where it only stores attributes of `self` (branches "
        f"may choose a value, not what is stored), the fields it sets are known, and only the "
        f"static values are checked when it returns, in its own frame (your `__init__` compiled "
        f"again with the check appended): here "
        f"{proven['pytreekit'] - proven['reference']:.0f} ns, {proven['ratio']:.2f}x an "
        f"`__init__` that only stores three attributes, and little beside one that draws its "
        f"weights from a PRNG key (microseconds)."
    )
    if general:
        text += (
            f" Where it does more with `self` (calls a method of it, passes it on, loops), "
            f"pytreekit checks what the instance holds when `__init__` returns, reading its "
            f"`__dict__` for the order it assigned them in: {general['ratio']:.2f}x."
        )
    if general and counted:
        text += (
            f" An annotated class declares that order, so its instance's attributes are only "
            f"counted: {counted['ratio']:.2f}x."
        )
    return text


def front_page(results: dict[str, Any]) -> str:
    """The front page's claim: a round trip against hand-written code and the other styles."""
    size = middle_size(results)
    measured = at(results["tree"].get("round trip", {}), size)
    ours = ratio(measured, PYTREEKIT[1])
    if ours is None:
        return ""
    peers = [
        (_prose_name(style), value)
        for style in PEERS
        if (value := ratio(measured, style)) is not None
    ]
    text = ("It costs what the pair you wrote costs: " if abs(ours - 1) <= SAME else "") + (
        f"on a {size}-layer model{_jax(results)}, a round trip (flatten, then unflatten) takes "
        f"{ours:.2f}x the time of a careful hand-written pair"
    )
    text = text[0].upper() + text[1:]
    if peers:
        text += "; " + ", ".join(f"{value:.2f}x with {name}" for name, value in peers)
    return text + "."


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
    "findings": findings,
    "derivative-notes": derivative_notes,
    "init-check": init_check,
    "front-page": front_page,
}
