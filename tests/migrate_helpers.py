"""Helpers of the codemod's tests: run it on files in a directory, load the modules before and
after side by side, and check that the rewritten classes make the same pytrees as the
hand-registered ones (the reference)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import json
import os
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit
from pytreekit.migrate import main

FIXTURES = Path(__file__).resolve().parent / "migrate_fixtures"
ROOT = str(Path(__file__).resolve().parents[1])

# A class registered by hand with register_pytree_node, the base of the hierarchy tests.
HAND_REGISTERED_BASE = """
import jax


class Base:
    def __init__(self, w):
        self.w = w


jax.tree_util.register_pytree_node(Base, lambda b: ((b.w,), None), lambda _, c: Base(*c))
"""


_DECORATORS = {
    "jax": ("import jax", "@jax.tree_util.register_pytree_node_class"),
    "from": ("from jax.tree_util import register_pytree_node_class", "@register_pytree_node_class"),
}


def hand_registered(
    name: str = "Base", *, style: str = "jax", bases: str = "", imports: str = ""
) -> str:
    """A module holding one class registered by hand the common way: one child ``x``, no aux
    data, ``tree_unflatten`` calling ``cls``. ``style``: ``jax.tree_util.`` spelled at the
    decorator (``"jax"``) or the decorator imported by name (``"from"``)."""
    header, decorator = _DECORATORS[style]
    if imports:
        header = f"{header}\n\n{imports}"
    body = (
        "    def tree_flatten(self):\n        return (self.x,), None\n\n"
        "    @classmethod\n    def tree_unflatten(cls, aux, children):\n"
        "        return cls(*children)\n"
    )
    if not bases:
        body = "    def __init__(self, x):\n        self.x = x\n\n" + body
    return f"\n{header}\n\n\n{decorator}\nclass {name}{f'({bases})' if bases else ''}:\n{body}"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.out if self.out.lstrip().startswith("{") else self.err)


def codemod(directory: Path, *args: str) -> Result:
    """``python -m pytreekit.migrate ARGS``, in-process, from ``directory``."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(directory),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = int(exit.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


def by_class(result: Result) -> dict[str, dict[str, Any]]:
    """The report's registrations, by class."""
    return {entry["class"]: entry for entry in result.report["registrations"]}


def python_in(directory: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter, from ``directory`` (on its path, with pytreekit):
    the rewritten tree as its own users import it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(directory), ROOT])}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write(directory: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


_loaded = itertools.count()


def left_alone(directory: Path, files: dict[str, str], *args: str) -> dict[str, dict[str, Any]]:
    """The report, by class, of a run over ``files`` that must change none of them (no TODO
    comments written)."""
    write(directory, files)
    before = {name: (directory / name).read_bytes() for name in files}
    result = codemod(directory, "--comments", "never", "--report", "json", *args, ".")
    assert {name: (directory / name).read_bytes() for name in files} == before
    return by_class(result)


def load(path: Path) -> types.ModuleType:
    """A module file imported under a name of its own (two versions of one module coexist)."""
    name = f"_migrate_case_{next(_loaded)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look classes up there
    sys.path.insert(0, str(path.parent))  # its sibling modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def _same_leaf(one: Any, two: Any) -> None:
    assert type(one) is type(two) or (isinstance(one, jax.Array) and isinstance(two, jax.Array)), (
        type(one),
        type(two),
    )
    first, second = np.asarray(one), np.asarray(two)
    assert first.dtype == second.dtype and first.shape == second.shape
    np.testing.assert_array_equal(first, second)


def _same_static(one: Any, two: Any) -> None:
    """Equal, or instances of the two versions of one class that show the same values."""
    if type(one).__module__ != type(two).__module__:  # a class of each loaded version
        assert type(one).__qualname__ == type(two).__qualname__
        assert repr(one) == repr(two)
    else:
        assert one == two


def _same_leaves(one: Any, two: Any) -> None:
    first, second = jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        _same_leaf(a, b)


def _loss(tree: Any) -> jax.Array:
    total = jnp.zeros(())
    for leaf in jax.tree_util.tree_leaves(tree):
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
            total = total + jnp.sum(jnp.asarray(leaf) ** 2)
    return total


def assert_same_pytrees(before: types.ModuleType, after: types.ModuleType) -> int:
    """The instances ``examples()`` builds in each version flatten to equal leaves in equal
    order, with equal statics and treedefs that compare alike; ``jit`` and ``grad`` agree.
    Returns how many rewritten (pytreekit) instances were compared."""
    compared = 0
    pairs = zip(before.examples(), after.examples(), strict=True)
    twins = zip(before.examples(), after.examples(), strict=True)
    for (one, two), (one_twin, two_twin) in zip(pairs, twins, strict=True):
        assert type(one).__qualname__ == type(two).__qualname__
        _same_leaves(one, two)
        if pytreekit.is_pytree_class(type(two)):
            compared += 1
            for field in pytreekit.fields(two):
                if field.static:
                    _same_static(getattr(one, field.name), getattr(two, field.name))
        treedef = jax.tree_util.tree_structure
        assert (treedef(one) == treedef(one_twin)) == (treedef(two) == treedef(two_twin))
        flat, structure = jax.tree_util.tree_flatten(two)
        _same_leaves(jax.tree_util.tree_unflatten(structure, flat), one)
        # one compilation per version: the tree through jit, a loss, and its gradient
        _same_leaves(_jitted(one), _jitted(two))
    return compared


@jax.jit
def _jitted(tree: Any) -> Any:
    return tree, _loss(tree), jax.grad(_loss, allow_int=True)(tree)
