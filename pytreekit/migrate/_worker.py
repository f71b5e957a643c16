"""Rebuilding recorded instances and measuring them, in a process of its own.

``--verify`` runs this twice, once with the original modules importable and once with the
rewritten ones: ``python -m pytreekit.migrate._worker SPEC RECORDS OUT``. For every recorded
constructor call of every class it builds the instance, then fingerprints its leaves (order,
dtype, shape, values), its static attributes, whether two instances built alike have equal
treedefs, the round trip through flatten and unflatten, ``jax.jit`` of the identity and
``jax.grad`` of a sum of squares. An exception is a fingerprint too (its type and message), so
that the two runs compare outcome for outcome.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import pickle
import sys
import types
from collections.abc import Callable
from typing import Any

_MAX_DEPTH = 12


def fingerprint(value: Any, depth: int = 0) -> Any:
    """A JSON-able description of a value that is equal for equal values across processes."""
    if depth > _MAX_DEPTH:
        return ["deep"]
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ["py", type(value).__name__, repr(value)]
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "__array__"):
        import numpy as np

        array = np.asarray(value)
        digest = hashlib.sha256(array.tobytes()).hexdigest()[:16]
        return ["array", str(array.dtype), list(array.shape), digest]
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [fingerprint(item, depth + 1) for item in value]]
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: repr(item[0]))
        return ["dict", [[repr(k), fingerprint(v, depth + 1)] for k, v in items]]
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)) or (
        callable(value) and hasattr(value, "__qualname__")
    ):
        return ["ref", getattr(value, "__module__", ""), getattr(value, "__qualname__", "")]
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        fields = {k: v for k, v in state.items() if not k.startswith("__pytreekit")}
        return ["object", type(value).__qualname__, fingerprint(fields, depth + 1)]
    return ["object", type(value).__qualname__, repr(value)]


def _outcome(step: Callable[[], Any]) -> Any:
    try:
        return step()
    except Exception as error:  # compared as an outcome: the same error on both sides is equal
        return ["error", type(error).__name__, str(error).splitlines()[0] if str(error) else ""]


def measure_one(cls: type, data: bytes, static: list[str]) -> dict[str, Any]:
    """Every fingerprint of the instance built from one recorded call."""
    import jax
    import jax.numpy as jnp

    def build() -> Any:
        args, kwargs = pickle.loads(data)
        return cls(*args, **kwargs)

    built: dict[str, Any] = {}

    def construct() -> Any:
        built["instance"] = build()
        built["twin"] = build()
        return ["ok"]

    result: dict[str, Any] = {"construct": _outcome(construct)}
    if "instance" not in built:
        return result
    instance, twin = built["instance"], built["twin"]
    leaves = jax.tree_util.tree_leaves

    def round_trip() -> Any:
        flat, treedef = jax.tree_util.tree_flatten(instance)
        back = jax.tree_util.tree_unflatten(treedef, flat)
        return [type(back).__qualname__, fingerprint(leaves(back)), _statics(back, static)]

    def loss(tree: Any) -> Any:
        total = jnp.zeros(())
        for leaf in leaves(tree):
            if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
                total = total + jnp.sum(jnp.real(jnp.asarray(leaf)) ** 2)
        return total

    result["leaves"] = _outcome(lambda: fingerprint(leaves(instance)))
    result["statics"] = _outcome(lambda: _statics(instance, static))
    structure: Callable[[Any], Any] = jax.tree_util.tree_structure
    result["treedef_equal"] = _outcome(lambda: bool(structure(instance) == structure(twin)))
    result["round_trip"] = _outcome(round_trip)
    result["jit"] = _outcome(lambda: fingerprint(leaves(jax.jit(lambda tree: tree)(instance))))
    result["grad"] = _outcome(lambda: fingerprint(leaves(jax.grad(loss, allow_int=True)(instance))))
    return result


def _statics(instance: Any, static: list[str]) -> Any:
    return {name: fingerprint(getattr(instance, name, "<unset>")) for name in static}


def measure(spec: dict[str, Any], records: dict[str, list[bytes]]) -> dict[str, Any]:
    """Fingerprints for every recorded call of every class the spec names."""
    results: dict[str, Any] = {}
    for entry in spec["classes"]:
        key = f"{entry['module']}.{entry['name']}"
        calls = records.get(key, [])
        if not calls:
            continue
        try:
            for name in entry.get("imports", []):
                importlib.import_module(name)
            module = importlib.import_module(entry["module"])
            cls = getattr(module, entry["name"])
        except Exception as error:
            results[key] = {"import": ["error", type(error).__name__, str(error)]}
            continue
        results[key] = {"calls": [measure_one(cls, data, entry["static"]) for data in calls]}
    return results


def main(argv: list[str]) -> None:
    spec_path, records_path, out_path = argv
    with open(spec_path, encoding="utf-8") as file:
        spec = json.load(file)
    with open(records_path, "rb") as file:
        records = pickle.load(file)
    results = measure(spec, records)
    with open(out_path, "w", encoding="utf-8") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main(sys.argv[1:])
