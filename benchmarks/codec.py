"""Static data against pickle, for the statics of a model of ``layers`` layers.

    python -m benchmarks.codec [layers]

``measure``: each layer's aux data is what an exported treedef stores per node (issue #29): field
names, static flags, and the static values (two ints, a string, a function). ``pickle`` is how
pytreekit wrote it before (``_artifacts.legacy._Pickler``, which stores ``jnp.tanh``-like
functions by name, and still writes a class opted in with ``pickle_static_fields``); ``codec`` is
``pytreekit._artifacts.static_data``. Times are per model (every layer dumped, or loaded), in
microseconds.

``artifact_cases``: writing and reading whole artifacts of the model, ``jax.export``
(``serialize()``, ``jax.export.deserialize``) and torch treespecs (``treespec_dumps``,
``treespec_loads``), for a class opted in to pickle (the format before, read inside
``allow_pickled_artifacts``) and for the same class storing static data. ``python -m benchmarks``
reports them side by side.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import timeit
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

from pytreekit import allow_pickled_artifacts, pickle_static_fields, pytree_class
from pytreekit._artifacts import static_data as _codec

try:
    import torch
    import torch.utils._pytree as torch_pytree

    BACKENDS: tuple[str, ...] = ("jax", "torch")
except ImportError:
    torch = None
    BACKENDS = ("jax",)

STATIC = ("features_in", "features_out", "name", "activation")


class _Layer:
    def __init__(self, features_in: int, features_out: int, name: str, activation: Any) -> None:
        self.features_in, self.features_out = features_in, features_out
        self.name, self.activation = name, activation
        self.weights = jnp.ones((features_in, features_out))
        self.biases = jnp.zeros(features_out)

    def __call__(self, x: jax.Array) -> jax.Array:
        y: jax.Array = self.activation(x @ self.weights + self.biases)
        return y


@pytree_class(static=STATIC, backends=BACKENDS)
class Dense(_Layer):
    """Its artifacts store static data."""


@pickle_static_fields
@pytree_class(static=STATIC, backends=BACKENDS)
class PickledDense(_Layer):
    """Its artifacts store pickle, as every class's did before."""


def _apply(model: list[_Layer], x: jax.Array) -> jax.Array:
    for layer in model:
        x = layer(x)
    return x


def _pickle_dumps(value: Any) -> bytes:
    from pytreekit._artifacts.legacy import _Pickler

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=4).dump(value)
    return buffer.getvalue()


def model_statics(layers: int) -> list[Any]:
    """One aux value per layer: names, static flags, static values."""
    names = ("features_in", "features_out", "name", "activation", "weights", "biases")
    flags = (True, True, True, True, False, False)
    return [(names, flags, (64, 128, f"dense_{i}", jax.nn.relu)) for i in range(layers)]


def _time(fn: Any, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def measure(layers: int = 64, number: int = 200) -> dict[str, dict[str, float]]:
    """Microseconds per model to dump and to load its statics, each way, and their ratio."""
    statics = model_statics(layers)
    pickled = [_pickle_dumps(aux) for aux in statics]
    encoded = [_codec.dumps(aux) for aux in statics]
    assert [_codec.loads(data) for data in encoded] == statics
    rows = {
        "dump": (
            lambda: [_pickle_dumps(aux) for aux in statics],
            lambda: [_codec.dumps(aux) for aux in statics],
        ),
        "load": (
            lambda: [pickle.loads(data) for data in pickled],
            lambda: [_codec.loads(data) for data in encoded],
        ),
    }
    results = {}
    for row, (old, new) in rows.items():
        old_us, new_us = _time(old, number), _time(new, number)
        results[row] = {"pickle_us": old_us, "codec_us": new_us, "ratio": new_us / old_us}
    results["dump"]["pickle_bytes"] = sum(map(len, pickled))
    results["dump"]["codec_bytes"] = sum(map(len, encoded))
    return results


def _model(cls: type[_Layer], layers: int, leaf: Callable[[], Any] | None = None) -> list[Any]:
    model = [cls(4, 4, f"dense_{i}", jax.nn.relu) for i in range(layers)]
    if leaf is not None:
        for layer in model:
            layer.weights, layer.biases = leaf(), leaf()
    return model


def _allowed(function: Callable[[Any], Any], argument: Any) -> Any:
    with allow_pickled_artifacts():  # for both formats alike: data does not need it
        return function(argument)


def artifact_cases(layers: int = 64) -> dict[str, dict[str, Callable[[], Any]]]:
    """Per row (``"jax.export serialize"``, ...), the ``"pickle"`` and ``"data"`` cases: what
    writing or reading an artifact of a ``layers``-layer model costs in each format."""
    rows: dict[str, dict[str, Callable[[], Any]]] = {}
    for case, cls in (("pickle", PickledDense), ("data", Dense)):
        exported = jax.export.export(jax.jit(_apply))(_model(cls, layers), jnp.ones((2, 4)))
        blob = exported.serialize()
        assert _allowed(jax.export.deserialize, blob).in_tree == exported.in_tree
        rows.setdefault("jax.export serialize", {})[case] = exported.serialize
        rows.setdefault("jax.export deserialize", {})[case] = lambda blob=blob: _allowed(
            jax.export.deserialize, blob
        )
        if torch is not None:
            spec = torch_pytree.tree_flatten(_model(cls, layers, lambda: torch.ones(4)))[1]
            text = torch_pytree.treespec_dumps(spec)
            loads = torch_pytree.treespec_loads.__wrapped__  # not its cache
            assert _allowed(loads, text) == spec
            rows.setdefault("torch treespec_dumps", {})[case] = lambda spec=spec: (
                torch_pytree.treespec_dumps(spec)
            )
            rows.setdefault("torch treespec_loads", {})[case] = lambda text=text, loads=loads: (
                _allowed(loads, text)
            )
    return rows


if __name__ == "__main__":
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    print(f"statics of a {layers}-layer model, microseconds per model")
    print("| | pickle | codec | codec / pickle |")
    print("|---|---|---|---|")
    for row, result in measure(layers).items():
        print(
            f"| {row} | {result['pickle_us']:.1f} | {result['codec_us']:.1f} | "
            f"{result['ratio']:.2f} |"
        )
    print(f"\nartifacts of a {layers}-layer model, microseconds")
    print("| | pickle | data | data / pickle |")
    print("|---|---|---|---|")
    for row, cases in artifact_cases(layers).items():
        old_us, new_us = _time(cases["pickle"], 20), _time(cases["data"], 20)
        print(f"| {row} | {old_us:.0f} | {new_us:.0f} | {new_us / old_us:.2f} |")
