"""A bounded mutation-testing run over pytreekit's core modules (mutmut's operators, run cheaply).

Each mutant is one small change to one module: an operator swapped (``+``/``-``, ``==``/``!=``,
``<``/``<=``, ``is``/``is not``, ``in``/``not in``, ``and``/``or``), a ``not`` dropped, ``True``
and ``False`` swapped, an integer incremented, ``break``/``continue`` swapped, a returned or
assigned value replaced by ``None``, a call argument replaced by ``None``. Docstrings, annotations,
f-strings, string constants and ``raise`` statements (error messages) are not mutated. A mutant is
killed when the module's test selection fails (or exceeds the timeout) with it in place.

The run uses a snapshot of the committed tree (``git archive HEAD``), so uncommitted edits in the
checkout neither leak in nor get touched. The parent process imports JAX, NumPy, pytest and
hypothesis once; each mutant runs in a forked child that loads the mutated module from memory
and calls ``pytest.main`` on the selection, stopping at the first failure.

    python tools/mutation.py                       # every mutant of the default modules
    python tools/mutation.py --sample 40 --seed 0  # at most 40 mutants per module
    python tools/mutation.py --module _derivatives.filters -v  # one module, with context
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import importlib.abc
import importlib.util
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# The tests that exercise each module, its own test file first (it kills most mutants fastest).
SELECTIONS = {
    "_classes.init": [
        "tests/test_codegen.py",
        "tests/test_init.py",
        "tests/test_checks.py",
    ],
    "_compat": [
        "tests/test_dataclasses.py",
        "tests/test_decoration_safety.py",
        "tests/test_user_traps.py",
        "tests/test_interop.py",
        "tests/test_annotations.py",
        "tests/test_eq_by_field.py",
        "tests/test_checks.py",
        "tests/test_custom_jvp.py",
        "tests/test_sharded_tangents.py",
    ],
    "_derivatives.custom_jvp": [
        "tests/test_custom_jvp.py",
        "tests/test_custom_overrides.py",
        "tests/test_custom_reference.py",
    ],
    "_derivatives.custom_vjp": [
        "tests/test_custom_vjp.py",
        "tests/test_custom_overrides.py",
        "tests/test_custom_gradient.py",
        "tests/test_custom_reference.py",
    ],
    "_classes.dataclass": [
        "tests/test_dataclasses.py",
        "tests/test_checks.py",
        "tests/test_init.py",
        "tests/test_dataclasses_reference.py",
        "tests/test_decorator.py",
    ],
    "_decorator": [
        "tests/test_decorator.py",
        "tests/test_misuse.py",
        "tests/test_decoration_safety.py",
        "tests/test_user_traps.py",
        "tests/test_user_traps_classes.py",
        "tests/test_dataclasses.py",
        "tests/test_spec.py",
    ],
    "_classes.methods": [
        "tests/test_dunders.py",
        "tests/test_user_traps_classes.py",
        "tests/test_frozen.py",
        "tests/test_catalogue.py",
        "tests/test_dataclasses.py",
    ],
    "_artifacts.static_data": ["tests/test_codec.py"],
    "_artifacts.export": [
        "tests/test_artifacts.py",
        "tests/test_interop.py",
        "tests/test_user_traps.py",
        "tests/test_catalogue.py",
    ],
    "_artifacts.legacy": ["tests/test_artifacts_allowlist.py", "tests/test_codec.py"],
    "_classes.fields": [
        "tests/test_fields.py",
        "tests/test_misuse.py",
        "tests/test_user_traps.py",
        "tests/test_user_traps_classes.py",
        "tests/test_catalogue.py",
        "tests/test_dataclasses.py",
    ],
    "_derivatives.custom_gradient": ["tests/test_custom_gradient.py", "tests/test_misuse.py"],
    "_derivatives.filters": [
        "tests/test_filters.py",
        "tests/test_misuse.py",
        "tests/test_linearize.py",
    ],
    "_classes.frozen": ["tests/test_frozen.py", "tests/test_dataclasses.py"],
    "_classes.layouts": [
        "tests/test_layouts.py",
        "tests/test_checks.py",
        "tests/test_nodes.py",
        "tests/test_static.py",
        "tests/test_spec.py",
    ],
    "_derivatives.linearize": ["tests/test_linearize.py", "tests/test_misuse.py"],
    "_derivatives.method": [
        "tests/test_custom_jvp.py",
        "tests/test_custom_vjp.py",
        "tests/test_custom_overrides.py",
        "tests/test_custom_gradient.py",
        "tests/test_misuse.py",
    ],
    "_classes.nodes": [
        "tests/test_nodes.py",
        "tests/test_codegen.py",
        "tests/test_layouts.py",
        "tests/test_checks.py",
        "tests/test_replace.py",
        "tests/test_user_traps.py",  # torch.compile tracing __init__
        "tests/test_backends.py",  # the torch guard
    ],
    "_classes.torch_seen": ["tests/test_backends.py"],
    "_classes.pickling": [
        "tests/test_pickling.py",
        "tests/test_codec.py",
        "tests/test_catalogue.py",
    ],
    "_names": [
        "tests/test_pickling.py",
        "tests/test_codec.py",
        "tests/test_artifacts_allowlist.py",
    ],
    "_classes.replace": ["tests/test_replace.py", "tests/test_frozen.py"],
    "_classes.spec": ["tests/test_spec.py", "tests/test_fields.py", "tests/test_decorator.py"],
    "_derivatives.split": [
        "tests/test_linearize.py",
        "tests/test_custom_jvp.py",
        "tests/test_custom_vjp.py",
        "tests/test_custom_gradient.py",
    ],
    "_static": ["tests/test_wrappers.py"],
}

_BINOPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
}
_COMPARES: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_NONE = ast.Constant(value=None)


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes whose subtrees are not mutated."""
    skip: set[int] = set()

    def whole(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                whole(body[0])  # docstring
        if isinstance(node, (ast.Raise, ast.JoinedStr, ast.Import, ast.ImportFrom)):
            whole(node)
        elif isinstance(node, ast.arg):
            whole(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            "overload" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            whole(node)  # an @overload stub: its defaults and body never run
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            whole(node.returns)
            for decorator in node.decorator_list:
                whole(decorator)
        elif isinstance(node, ast.AnnAssign):
            whole(node.annotation)
            if "TypeAlias" in ast.unparse(node.annotation):
                whole(node)  # a type alias: only checkers read it
        elif (isinstance(node, ast.Assign) and _declares_a_type_variable(node.value)) or (
            isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            whole(node)  # type variables and TYPE_CHECKING blocks: only checkers read them
    return skip


def _declares_a_type_variable(value: ast.expr) -> bool:
    """``T = TypeVar("T")`` and kin: with postponed annotations only type checkers read them."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("TypeVar", "ParamSpec", "TypeVarTuple")
    )


def mutants(source: str) -> Iterator[tuple[str, int, ast.Module]]:
    """(description, line, mutated tree) for every mutant of ``source``."""
    for description, line, make in candidates(source):
        yield description, line, make()


def candidates(source: str) -> Iterator[tuple[str, int, Callable[[], ast.Module]]]:
    """(description, line, a function making the mutated tree) for every mutant of ``source``,
    in ``mutants``' order: a module's whole tree is copied per mutant, so a sample copies only
    the mutants it draws (copying them all takes minutes for the largest modules)."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        for description, change in _changes(node):
            make = functools.partial(_mutated, tree, index, change)
            yield description, getattr(node, "lineno", 0), make


def _mutated(tree: ast.Module, index: int, change: Callable[[Any], None]) -> ast.Module:
    mutated = copy.deepcopy(tree)
    # A copy walks in the same order: the node at the same position is the copy's.
    target = next(n for i, n in enumerate(ast.walk(mutated)) if i == index)
    change(target)
    ast.fix_missing_locations(mutated)
    return mutated


def _changes(node: ast.AST) -> Iterator[tuple[str, Any]]:
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOPS:
        new = _BINOPS[type(node.op)]
        yield f"{type(node.op).__name__} -> {new.__name__}", lambda n: setattr(n, "op", new())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARES:
                new_op = _COMPARES[type(op)]

                def swap(n: ast.Compare, i: int = i, new_op: type[ast.cmpop] = new_op) -> None:
                    n.ops[i] = new_op()

                yield f"{type(op).__name__} -> {new_op.__name__}", swap
    elif isinstance(node, ast.BoolOp):
        new_bool = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield (
            f"{type(node.op).__name__} -> {new_bool.__name__}",
            lambda n: setattr(n, "op", new_bool()),
        )
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not x -> bool(x)", _drop_not
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            yield f"{node.value} -> {not node.value}", lambda n: setattr(n, "value", not n.value)
        elif isinstance(node.value, int):
            yield f"{node.value} -> {node.value + 1}", lambda n: setattr(n, "value", n.value + 1)
    elif isinstance(node, ast.Break):
        yield "break -> continue", lambda n: setattr(n, "__class__", ast.Continue)
    elif isinstance(node, ast.Continue):
        yield "continue -> break", lambda n: setattr(n, "__class__", ast.Break)
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return x -> return None", lambda n: setattr(n, "value", copy.copy(_NONE))
    elif isinstance(node, ast.Assign):
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "x = ... -> x = None", lambda n: setattr(n, "value", copy.copy(_NONE))
    elif isinstance(node, ast.Call):
        for i, argument in enumerate(node.args):
            if not isinstance(argument, (ast.Starred, ast.Constant)):

                def arg_none(n: ast.Call, i: int = i) -> None:
                    n.args[i] = copy.copy(_NONE)

                yield f"argument {i} -> None", arg_none
        for i, keyword in enumerate(node.keywords):
            if keyword.arg is not None and not isinstance(keyword.value, ast.Constant):

                def kw_none(n: ast.Call, i: int = i) -> None:
                    n.keywords[i].value = copy.copy(_NONE)

                yield f"{keyword.arg}= -> None", kw_none


def _drop_not(node: ast.UnaryOp) -> None:
    operand = node.operand
    node.__class__ = ast.Call  # type: ignore[assignment]  # the node becomes bool(operand)
    call: Any = node
    call.func, call.args, call.keywords = ast.Name(id="bool", ctx=ast.Load()), [operand], []


class _MutatedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module from a mutated tree instead of its file."""

    def __init__(self, fullname: str, path: Path, tree: ast.Module) -> None:
        self.fullname, self.path, self.tree = fullname, path, tree

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.fullname:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        exec(compile(self.tree, str(self.path), "exec"), module.__dict__)


def _run(root: Path, tests: list[str], finder: _MutatedModule | None, timeout: float) -> str:
    """'passed', 'failed' or 'timeout': the selection's outcome in a forked child."""
    pid = os.fork()
    if pid == 0:  # the child: quiet, the mutated module first on the import path, then pytest
        try:
            import pytest

            if finder is not None:
                sys.meta_path.insert(0, finder)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            args = ["-x", "-q", "-p", "no:cacheprovider", *tests]
            code = pytest.main(args)
        except BaseException:
            code = 1
        os._exit(int(code))
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "passed" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.05)


def _snapshot(revision: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix="pytreekit-mutation-"))
    archive = subprocess.run(
        ["git", "archive", revision], cwd=REPO, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(SELECTIONS))
    parser.add_argument("--sample", type=int, default=0, help="at most N mutants per module")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant")
    parser.add_argument("--revision", default="HEAD", help="the committed tree to mutate")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each survivor's line")
    options = parser.parse_args()

    root = _snapshot(options.revision)
    try:
        return _mutate(root, options)
    finally:
        os.chdir(REPO)
        shutil.rmtree(root, ignore_errors=True)  # snapshots are large: never leave one behind


def missing(root: Path, names: list[str]) -> list[str]:
    """The modules and test files of ``names``' selections that ``root`` does not have: a
    selection that names a moved module would otherwise fail only when its turn comes."""
    absent = []
    for name in names:
        module = f"pytreekit/{name.replace('.', '/')}.py"
        absent += [path for path in (module, *SELECTIONS[name]) if not (root / path).is_file()]
    return absent


def _mutate(root: Path, options: argparse.Namespace) -> int:
    names = options.module or sorted(SELECTIONS)
    absent = missing(root, names)
    if absent:
        print(
            f"not in the tree of {options.revision}: {', '.join(absent)}; "
            "update SELECTIONS in tools/mutation.py to the package's layout",
            file=sys.stderr,
        )
        return 2
    os.chdir(root)
    sys.path[:0] = [str(root), str(root / "tests"), str(root / "examples")]
    sys.dont_write_bytecode = True
    os.environ["JAX_PLATFORMS"] = "cpu"
    import hypothesis  # noqa: F401  (imported once here, not once per mutant)
    import jax
    import jax.numpy  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401

    totals = {"killed": 0, "survived": 0}
    for name in names:
        tests = SELECTIONS[name]
        path = root / "pytreekit" / f"{name.replace('.', '/')}.py"
        baseline = _run(root, tests, None, options.timeout)
        if baseline == "timeout":
            print(
                f"{name}: the unmutated selection takes over {options.timeout:g} s, so every "
                "mutant would count as killed: raise --timeout",
                file=sys.stderr,
            )
            return 2
        if baseline != "passed":
            print(f"{name}: the unmutated selection fails; fix that first", file=sys.stderr)
            return 2
        source = path.read_text()
        drawn = list(candidates(source))
        if options.sample and len(drawn) > options.sample:
            drawn = random.Random(options.seed).sample(drawn, options.sample)
        killed, survivors = 0, []
        for description, line, make in drawn:
            tree = make()
            finder = _MutatedModule(f"pytreekit.{name}", path, tree)
            if _run(root, tests, finder, options.timeout) == "passed":
                survivors.append((line, description))
            else:
                killed += 1
        totals["killed"] += killed
        totals["survived"] += len(survivors)
        print(f"{name}: {killed}/{len(drawn)} killed ({100 * killed / len(drawn):.1f}%)")
        lines = source.splitlines()
        for line, description in sorted(survivors):
            context = f"    {lines[line - 1].strip()}" if options.verbose else ""
            print(f"  survived: {path.relative_to(root)}:{line}: {description}{context}")
    total = totals["killed"] + totals["survived"]
    print(f"total: {totals['killed']}/{total} killed ({100 * totals['killed'] / total:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
