"""The benchmarks run (tiny sizes, one repeat) so they cannot rot; no timing is asserted."""

import json

import pytest

from benchmarks import run


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "results.json"
    results = run.main(["--quick", "--json", str(path)])
    return results, json.loads(path.read_text())


def test_every_operation_is_measured_for_every_available_style(quick_results):
    results, _ = quick_results
    styles = {"builtin dict/list", "hand-written (object.__new__)", "register_dataclass"}
    styles |= {"pytreekit annotated", "pytreekit existing class"}
    for operation in (
        "tree_flatten",
        "tree_flatten (as constructed)",
        "tree_unflatten",
        "round trip",
        "tree_map",
        "tree_flatten_with_path",
        "jax.jit dispatch",
    ):
        measured = results["tree"][operation][2]
        assert styles <= set(measured)
        assert all(m["median_us"] > 0 for m in measured.values())
    assert styles <= set(results["optax"][2])


def test_ad_linearize_and_import_benchmarks_report_ratios(quick_results):
    results, from_json = quick_results
    assert len(results["ad"]) == 5
    assert {
        "annotated with its own __init__ vs undecorated",
        "annotated with __post_init__ vs @dataclass",
        "replace, existing class vs dataclasses.replace",
        "==, existing class vs annotated",
        "hash, frozen existing class vs frozen annotated",
    } <= set(results["construction"])
    assert all(r["ratio"] > 0 for r in results["construction"].values())
    assert set(results["decoration"]) == {
        "annotated: @pytree_class vs @dataclass",
        "unannotated: defined and decorated vs defined",
    }
    assert all(r["ratio"] > 0 for r in results["decoration"].values())
    assert all(r["ratio"] > 0 for r in results["ad"].values())
    assert {"jax.export serialize", "jax.export deserialize"} <= set(results["artifacts"])
    for measured in results["artifacts"].values():
        assert measured["pickle"]["median_us"] > 0 and measured["data"]["median_us"] > 0
    assert results["import"]["import pytreekit after jax (ms)"] > 0
    assert from_json["machine"]["versions"]["jax"] != "absent"


def test_the_table_is_printed(quick_results, capsys):
    run.main(["--quick", "--sizes", "1", "--json", "/dev/null"])
    out = capsys.readouterr().out
    assert "| tree_unflatten | 1 |" in out and "Machine:" in out
