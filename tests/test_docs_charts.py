"""benchmarks/charts.py draws the Speed page's charts from a run's results (here a small made-up
run: the benchmarks themselves are exercised by tests/test_benchmarks.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import charts

pytest.importorskip("matplotlib", reason="matplotlib (the bench extra) draws the charts")

STYLES = ("hand-written (object.__new__)", "equinox.Module", "pytreekit annotated")


def made_up_results(decoration: bool) -> dict:
    tree = {
        operation: {
            str(size): {
                style: {"median_us": size * (1 + i) * 0.5, "spread": 1.0, "repeats": 1}
                for i, style in enumerate(STYLES)
            }
            for size in (4, 64, 512)
        }
        for operation in ("tree_flatten", "tree_unflatten", "round trip", "tree_map")
    }
    results = {
        "machine": {
            "cpu": "Test CPU",
            "cores": 2,
            "python": "3.11.7",
            "platform": "Linux",
            "jax_backend": "cpu",
            "versions": {"jax": "0.10.2", "pytreekit": "0.2.0"},
            "date": "2026-11-26",
        },
        "tree": tree,
        "construction": {
            "annotated vs @dataclass": {"pytreekit": 450.0, "reference": 390.0, "ratio": 1.15},
        },
    }
    if decoration:
        results["decoration"] = {
            "annotated class": {"pytreekit": 90.0, "dataclass": 60.0, "ratio": 1.5},
        }
    return results


@pytest.mark.parametrize("decoration", [False, True])
def test_charts_are_svg_files_with_the_machine_note(tmp_path: Path, decoration: bool) -> None:
    written = charts.write(made_up_results(decoration), tmp_path)
    names = {path.name for path in written}
    expected = {"tree-operations.svg", "construction.svg", "machine.md"}
    assert names == expected | ({"decoration.svg"} if decoration else set())
    svg = (tmp_path / "tree-operations.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ("tree_flatten", "tree_unflatten", "round trip", "pytreekit annotated"):
        assert text in svg  # svg.fonttype none: the labels are text
    note = (tmp_path / "machine.md").read_text(encoding="utf-8")
    assert "2026-11-26" in note and "Test CPU" in note and "jax 0.10.2" in note


def test_the_same_results_draw_the_same_files(tmp_path: Path) -> None:
    first = charts.write(made_up_results(True), tmp_path / "a")
    second = charts.write(made_up_results(True), tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_charts_command_line_reads_a_saved_run(tmp_path: Path) -> None:
    import json

    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(made_up_results(False)), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.charts", str(saved), str(tmp_path / "out")],
        cwd=Path(charts.__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "tree-operations.svg").exists()


def test_the_speed_page_shows_the_charts() -> None:
    page = (Path(charts.__file__).resolve().parent.parent / "docs" / "speed.md").read_text()
    names = ("tree-operations.svg", "construction.svg", "decoration.svg", "docs/speed/machine.md")
    for name in names:
        assert name in page
