"""Run every benchmark side by side in one process and print Markdown tables of medians and ratios.

    python -m benchmarks                 # the full run (a few minutes)
    python -m benchmarks --quick         # tiny sizes, one repeat: checks that nothing has rotted

Timings are medians over repeats; within each repeat every style is measured once, in turn, so
drift in machine speed affects all styles alike, and each measurement is the best of three short
timings, which drops interruptions by other processes. Ratios compare medians of the same run.

Models are measured as a training loop sees them from its second step on: rebuilt by unflatten.
"tree_flatten (as constructed)" measures the instances ``__init__`` made, which can differ on
CPython: reading an instance's ``__dict__`` (pytreekit does once per constructed instance of an
unannotated class, to check its fields) makes later attribute reads slightly slower.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

import pytreekit
from benchmarks import ad_cases, construction, decoration, migrate, tables
from benchmarks.styles import available_styles

HAND = "hand-written (object.__new__)"
BUILTIN = "builtin dict/list"


def _time_per_call(fn: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6  # microseconds


def _calibrate(fn: Callable[[], Any], budget_s: float) -> int:
    """Loops per repeat so that one repeat takes about ``budget_s``."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(budget_s / once))


def compare(
    cases: dict[str, Callable[[], Any]], repeats: int, budget_s: float
) -> dict[str, dict[str, float]]:
    """Median and spread (max/min of the repeats) in µs for each case, interleaved."""
    numbers = {name: _calibrate(fn, budget_s) for name, fn in cases.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            samples[name].append(_time_per_call(fn, numbers[name]))
    return {
        name: {
            "median_us": statistics.median(values),
            "spread": max(values) / min(values),
            "repeats": len(values),
        }
        for name, values in samples.items()
    }


# --- the operations, for one model -----------------------------------------------------------


def tree_operations(constructed: Any) -> dict[str, Callable[[], Any]]:
    tu = jax.tree_util
    model = tu.tree_map(lambda x: x, constructed)
    leaves, treedef = tu.tree_flatten(model)
    first_leaf = jax.jit(lambda m: tu.tree_leaves(m)[0])
    first_leaf(model).block_until_ready()
    return {
        "tree_flatten": lambda: tu.tree_flatten(model),
        "tree_flatten (as constructed)": lambda: tu.tree_flatten(constructed),
        "tree_unflatten": lambda: tu.tree_unflatten(treedef, leaves),
        "round trip": lambda: tu.tree_unflatten(*reversed(tu.tree_flatten(model))),
        "tree_map": lambda: tu.tree_map(lambda x: x, model),
        "tree_flatten_with_path": lambda: tu.tree_flatten_with_path(model),
        "jax.jit dispatch": lambda: first_leaf(model).block_until_ready(),
    }


def optax_step(model: Any, style: str) -> Callable[[], Any] | None:
    try:
        import optax
    except ImportError:
        return None
    # The step works on {style: model}, so no two styles' trees are equal. JAX's treedef equality
    # does not compare the classes of two register_dataclass-style nodes with the same fields
    # (DataclassMLP and flax.struct's FlaxMLP compare equal, with different hashes), and optax's
    # inner jitted functions are shared between styles: a lookup in their caches could then return
    # one style's output structure for another's input ("pytree structure error ... FlaxMLP ...
    # DataclassMLP", depending on the hashes of the run).
    tree = {style: model}
    optimizer = optax.adam(1e-3)
    state = optimizer.init(tree)

    def _loss(tree: Any) -> jax.Array:
        return sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(tree))  # type: ignore[return-value]

    @jax.jit
    def step(tree: Any, state: Any) -> Any:
        updates, state = optimizer.update(jax.grad(_loss)(tree), state, tree)
        return optax.apply_updates(tree, updates), state

    jax.block_until_ready(step(tree, state))
    return lambda: jax.block_until_ready(step(tree, state))


# --- the report ------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # pytreekit's own version from the code measured: an editable install's metadata keeps the
    # version it was installed at.
    versions = {}
    for package in ("jax", "jaxlib", "pytreekit", "equinox", "flax", "optax", "numpy"):
        try:
            versions[package] = (
                pytreekit.__version__ if package == "pytreekit" else metadata.version(package)
            )
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return {
        "date": datetime.date.today().isoformat(),
        "commit": _commit(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "jax_backend": jax.default_backend(),
        "versions": versions,
    }


def _commit() -> str:
    """The source tree's commit (``git describe``), ``-dirty`` with changes not committed."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return described.stdout.strip()


def import_times(runs: int) -> dict[str, Any]:
    """What ``import pytreekit`` adds after ``import jax``, from ``python -X importtime`` in fresh
    interpreters (its own cumulative import time: the modules jax had not already loaded).

    pip byte-compiles an installed package, so bytecode writing is allowed here and a first,
    unmeasured run writes it; otherwise pytreekit would be compiled from source every time while
    jax is not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["JAX_PLATFORMS"] = "cpu"

    def run() -> tuple[float, float]:
        code = "import jax; import pytreekit"
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            env=env,
        )
        cumulative = {}
        for line in out.stderr.splitlines():
            parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
            if len(parts) == 3 and parts[1].isdigit():
                cumulative[parts[2]] = int(parts[1]) / 1e3
        return cumulative["jax"], cumulative["pytreekit"]

    run()
    samples = [run() for _ in range(runs)]
    return {
        "import jax (ms)": statistics.median(s[0] for s in samples),
        "import pytreekit after jax (ms)": statistics.median(s[1] for s in samples),
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (smoke test)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args(argv)
    sizes = args.sizes or ([2] if args.quick else [4, 64, 512])
    repeats = args.repeats or (1 if args.quick else 11)
    budget = 0.001 if args.quick else 0.03

    styles, missing = available_styles()
    results: dict[str, Any] = {"machine": machine(), "missing": missing, "tree": {}, "optax": {}}
    report = ["## pytree operations: median µs (ratio to hand-written; jit/optax: to builtin)\n"]

    for size in sizes:
        models = {name: build(size) for name, build in styles.items()}
        per_style = {name: tree_operations(model) for name, model in models.items()}
        operations = next(iter(per_style.values()))
        for operation in operations:
            cases = {name: per_style[name][operation] for name in styles}
            results["tree"].setdefault(operation, {})[size] = compare(cases, repeats, budget)
        steps = {name: optax_step(model, name) for name, model in models.items()}
        step_cases = {name: fn for name, fn in steps.items() if fn is not None}
        if step_cases:
            results["optax"][size] = compare(step_cases, repeats, budget * 3)

    def cells(measured: dict[str, dict[str, float]], base_name: str) -> list[str]:
        base = measured[base_name]["median_us"]
        return [
            f"{measured[s]['median_us']:.1f} ({measured[s]['median_us'] / base:.2f}x)"
            if s in measured
            else "-"
            for s in styles
        ]

    rows = []
    for operation, by_size in results["tree"].items():
        base_name = BUILTIN if operation == "jax.jit dispatch" else HAND
        rows += [[operation, str(size), *cells(m, base_name)] for size, m in by_size.items()]
    rows += [
        ["jitted optax adam step", str(size), *cells(m, BUILTIN)]
        for size, m in results["optax"].items()
    ]
    report.append(tables.table(["operation", "layers", *styles], rows))
    if missing:
        report.append("\nNot measured: " + "; ".join(f"{k}: {v}" for k, v in missing.items()))

    results["construction"] = construction.run(repeats, 200 if args.quick else 20000)
    report.append("\n## Building and replacing an instance: median ns\n")
    report.append(tables.construction(results))

    results["decoration"] = decoration.run(repeats, 20 if args.quick else 300)
    report.append("\n## Decorating a class: median µs per class\n")
    report.append(tables.decoration(results))

    results["ad"] = ad_cases.run(repeats, budget, n_tangents=4 if args.quick else 32)
    report.append("\n## Custom derivatives and linearize: median µs\n")
    report.append(tables.derivatives(results))

    results["migrate"] = migrate.run(1, *((1_000, 5) if args.quick else (10_000, 50)))
    results["migrate_small"] = migrate.run_small(1, 300 if args.quick else 3_000)
    report.append("\n## The codemod\n")
    report.append(tables.codemod(results))

    layers = 2 if args.quick else 64
    # Imported here, after the other measurements: it imports torch, and once torch is imported
    # every __init__ pytreekit wraps also asks torch.compile whether it is tracing (most JAX
    # programs never import torch).
    from benchmarks import codec

    results["artifacts"] = {
        row: compare(cases, repeats, budget * 3)
        for row, cases in codec.artifact_cases(layers).items()
    }
    report.append(
        f"\n## Artifacts of a {layers}-layer model: median µs (pickle: the format before, "
        f"data: static data)\n"
    )
    report.append(tables.artifacts(results))
    results["import"] = import_times(1 if args.quick else 7)
    report.append("\n## Import time\n")
    report.append(
        tables.table(["measure", "ms"], [[k, f"{v:.1f}"] for k, v in results["import"].items()])
    )

    spreads = [
        m["spread"]
        for by_size in results["tree"].values()
        for measured in by_size.values()
        for m in measured.values()
    ]
    info = results["machine"]
    report.append(
        f"\nMachine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, "
        f"JAX {info['versions']['jax']} on {info['jax_backend']}; medians of {repeats} repeats; "
        f"worst max/min spread between repeats {max(spreads):.2f}x, median "
        f"{statistics.median(spreads):.2f}x."
    )
    text = "\n".join(report)
    print(text)
    args.json.write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
