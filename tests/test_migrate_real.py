"""The codemod on real registrations: excerpts of public code (tests/migrate_fixtures/real/, each
naming its repository, path and license), each rewritten and shown equal to the original, or left
with the code a person would give it. The expected output of each file is kept next to it
(expected/), as LibCST's codemod tests keep theirs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import FIXTURES, assert_same_pytrees, codemod, load  # noqa: E402

REAL = FIXTURES / "real"

# file -> (class, code) per registration, in file order; None: rewritten
EXPECTED: dict[str, list[tuple[str, str | None]]] = {
    "jax_custom_pytrees.py": [
        ("RegisteredSpecial", None),
        ("RegisteredSpecial2", None),
        ("MyTree", "PTK205"),  # jnp.asarray on unflatten no longer runs: --unsafe applies it
    ],
    "jax_register_pytree_node_doc.py": [("MyContainer", None)],
    "jax_register_pytree_node_class_doc.py": [("MyContainer", None)],
    "jax_register_pytree_with_keys_class_doc.py": [("Special", None)],
    "jax_register_pytree_with_keys_doc.py": [("MyContainer", "PTK104")],
    "jax_indexing_slice.py": [("Slice", "PTK104")],
    "jax_debugger_core.py": [("_DictWrapper", "PTK104")],
    "jax_custom_derivatives.py": [("Residuals", "PTK104")],
    "jax_checkify.py": [("cls", "PTK101")],
    "jax_random_benchmark.py": [("A", "PTK101")],
    "jax_training_cookbook.py": [("dot_dict", "PTK111")],
    "jax_cfd_grids.py": [
        ("GridArray", None),
        ("GridArrayTensor", "PTK111"),
        ("GridVariable", None),
    ],
    "jax_cosmo_core.py": [("Cosmology", "PTK104")],
    "jax_cosmo_bias.py": [("constant_linear_bias", "PTK104")],
    "ott_costs.py": [("CostFn", "PTK113"), ("TICost", "PTK113"), ("SqPNorm", "PTK108")],
    "ssm_initial.py": [("StandardInitialCondition", "PTK106")],
    "jaxopt_base.py": [("LinearOperator", "PTK205")],  # jnp.array on unflatten, as MyTree
    "jaxopt_scipy_wrappers.py": [("LbfgsInvHessProductPyTree", "PTK115")],
    "pyneurons_array.py": [("Array", None)],
}
REWRITTEN = sorted(name for name, rows in EXPECTED.items() if any(c is None for _, c in rows))


def test_the_fixtures_are_real_registrations_from_several_projects() -> None:
    assert sorted(EXPECTED) == sorted(path.name for path in REAL.glob("*.py"))
    registrations = [row for rows in EXPECTED.values() for row in rows]
    assert len(registrations) >= 15
    projects = set()
    for path in REAL.glob("*.py"):
        header = " ".join(line for line in path.read_text().splitlines()[:6] if line[:1] == "#")
        source = header[header.index("Source: https") :]
        assert "(commit " in source
        assert any(word in source for word in ("MIT", "Apache-2.0", "BSD")), source
        projects.add(source.split("https://github.com/")[1].split(",")[0])
    assert len(projects) >= 5
    rewritten = sum(code is None for _, code in registrations)
    assert rewritten >= 8 and len(registrations) - rewritten >= 8


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_registration(name: str, tmp_path: Path) -> None:
    shutil.copy(REAL / name, tmp_path / name)
    result = codemod(tmp_path, name, "--report", "json")
    assert result.code == 0, result.out + result.err
    entries = result.report["registrations"]
    assert [(e["class"], e["code"]) for e in entries] == EXPECTED[name]
    after = (tmp_path / name).read_text(encoding="utf-8")
    assert after == (REAL / "expected" / name).read_text(encoding="utf-8")
    assert codemod(tmp_path, name, "--check").code == 0  # a second run changes nothing


@pytest.mark.parametrize("name", REWRITTEN)
def test_real_rewrite_makes_the_same_pytrees(name: str, tmp_path: Path) -> None:
    assert assert_same_pytrees(load(REAL / name), load(REAL / "expected" / name)) >= 1
