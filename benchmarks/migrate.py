"""The codemod on a generated package: scan, analyze, rewrite and report, timed end to end.

    python -m benchmarks.migrate        # 10,000 lines, 50 registrations; 3,000 small files

The package has one registration per module, in the forms real code uses (the decorator and the
call of each API, object.__new__, dataclasses, left ones with a dict aux or a cache), amid
ordinary numerical code so that parsing, which dominates, sees realistic lines. The run is
``python -m pytreekit.migrate --check --report json PACKAGE`` in this process (nothing written).

The tree of small files (``run_small``) has a repository's shape: 3,000 modules of about 25
lines, a class and functions each, 1 in 100 holding a registration. It measures the text
pre-filter, with 1 and 2 worker processes (``-j``).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_REGISTRATIONS = [
    '''
@jax.tree_util.register_pytree_node_class
class Layer{n}:
    """A dense layer."""

    def __init__(self, weights, biases, features):
        self.weights = weights
        self.biases = biases
        self.features = features

    def __call__(self, x):
        return x @ self.weights + self.biases

    def tree_flatten(self):
        return (self.weights, self.biases), (self.features,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)
''',
    """
class State{n}:
    def __init__(self, position, velocity, name="state"):
        self.position = jnp.asarray(position)
        self.velocity = jnp.asarray(velocity)
        self.name = name


def _flatten_state{n}(state):
    return (state.position, state.velocity), state.name


def _unflatten_state{n}(name, children):
    state = object.__new__(State{n})
    state.position, state.velocity = children
    state.name = name
    return state


jax.tree_util.register_pytree_node(State{n}, _flatten_state{n}, _unflatten_state{n})
""",
    """
@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass
class Grid{n}:
    data: jax.Array
    offset: tuple
    step: float = 1.0

    def tree_flatten(self):
        return (self.data,), (self.offset, self.step)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)
""",
    """
@jax.tree_util.register_pytree_node_class
class Cosmology{n}:
    def __init__(self, omega, h, gamma=None):
        self._omega = omega
        self._h = h
        self._flags = {{"gamma": gamma is not None}}
        self._workspace = {{}}

    def tree_flatten(self):
        return (self._omega, self._h), self._flags

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
""",
]

_FILLER = '''

def step_{n}_{k}(params, x, learning_rate=0.1):
    """One gradient step of a small least-squares problem ({k})."""
    def loss(p):
        residual = x @ p["w"] + p["b"] - jnp.sin(x[:, 0])
        return jnp.mean(residual**2) + 1e-3 * jnp.sum(p["w"] ** 2)

    grads = jax.grad(loss)(params)
    return {{key: params[key] - learning_rate * grads[key] for key in params}}


def schedule_{n}_{k}(step, warmup=100, decay=0.999):
    if step < warmup:
        return step / warmup
    return decay ** (step - warmup)
'''

_HEADER = '''"""Module {n} of a generated package."""

import dataclasses

import jax
import jax.numpy as jnp
'''


def generate(directory: Path, lines: int, registrations: int) -> Path:
    """A package of ``registrations`` modules of about ``lines / registrations`` lines each."""
    package = directory / "generated"
    package.mkdir()
    (package / "__init__.py").write_text("")
    per_module = lines // registrations
    for n in range(registrations):
        text = _HEADER.format(n=n) + _REGISTRATIONS[n % len(_REGISTRATIONS)].format(n=n)
        k = 0
        while text.count("\n") < per_module:
            text += _FILLER.format(n=n, k=k)
            k += 1
        (package / f"module_{n}.py").write_text(text)
    return package


def run(repeats: int, lines: int = 10_000, registrations: int = 50) -> dict[str, Any]:
    """Median seconds of a whole run over the generated package, and what it found."""
    try:
        from pytreekit.migrate import main
    except ModuleNotFoundError as error:  # LibCST, the migrate extra
        return {"skipped": str(error)}
    with tempfile.TemporaryDirectory() as directory:
        package = generate(Path(directory), lines, registrations)
        counted = sum(path.read_text().count("\n") for path in package.glob("*.py"))
        seconds = []
        for _ in range(repeats):
            out = io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stdout(out):
                main(["--check", "--report", "json", str(package)])
            seconds.append(time.perf_counter() - start)
    summary = json.loads(out.getvalue())["summary"]
    return {
        "lines": counted,
        "registrations": summary["registrations"],
        "rewritten": summary["rewritten"],
        "left": sum(summary["left"].values()),
        "seconds": statistics.median(seconds),
        "repeats": repeats,
    }


_SMALL = '''"""Module {n} of a generated repository."""

import math


class Point{n}:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return math.hypot(self.x, self.y)


def scale_{n}(point, factor=2.0):
    """Scaled copy of a point."""
    return Point{n}(point.x * factor, point.y * factor)


def total_{n}(points):
    result = 0.0
    for point in points:
        result += point.norm()
    return result
'''


def generate_small(directory: Path, files: int, every: int) -> Path:
    """``files`` small modules in packages of 100; one in ``every`` holds a registration."""
    root = directory / "repository"
    for n in range(files):
        package = root / f"package_{n // 100}"
        if not package.exists():
            package.mkdir(parents=True)
            (package / "__init__.py").write_text("")
        text = _SMALL.format(n=n)
        if n % every == 0:
            text = "import jax\n" + _REGISTRATIONS[0].format(n=n) + text
        (package / f"module_{n}.py").write_text(text)
    return root


def run_small(repeats: int, files: int = 3_000, every: int = 100) -> dict[str, Any]:
    """Median seconds of a whole run over ``files`` small files, with 1 and 2 workers."""
    try:
        from pytreekit.migrate import main
    except ModuleNotFoundError as error:
        return {"skipped": str(error)}
    result: dict[str, Any] = {"files": files}
    with tempfile.TemporaryDirectory() as directory:
        root = generate_small(Path(directory), files, every)
        out = io.StringIO()
        for jobs in (1, 2):
            seconds = []
            for _ in range(repeats):
                out = io.StringIO()
                start = time.perf_counter()
                with contextlib.redirect_stdout(out):
                    main(["--check", "--report", "json", "-j", str(jobs), str(root)])
                seconds.append(time.perf_counter() - start)
            result[f"seconds_j{jobs}"] = statistics.median(seconds)
    result["registrations"] = json.loads(out.getvalue())["summary"]["registrations"]
    result["repeats"] = repeats
    return result


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(run(count))
    print(run_small(count))
