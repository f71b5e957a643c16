"""The same model, an MLP of N small Linear nodes, in every way a JAX user could write it.

Each style is a function ``build(n_layers) -> model``; a style whose library is not installed is
missing from ``available_styles()`` with the reason, so the table can say why a row is absent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit

WIDTH = 4


def _arrays(index: int) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(index)
    return (
        jnp.asarray(rng.normal(size=(WIDTH, WIDTH)), jnp.float32),
        jnp.asarray(rng.normal(size=(WIDTH,)), jnp.float32),
    )


# --- builtin containers ------------------------------------------------------------------------


def build_builtin(n: int) -> Any:
    layers = []
    for i in range(n):
        w, b = _arrays(i)
        layers.append({"weights": w, "biases": b})
    return {"layers": layers}


# --- hand-written register_pytree_node, rebuilt with object.__new__ -----------------------------


class HandLinear:
    def __init__(self, key: int, in_features: int, out_features: int) -> None:
        self.in_features = in_features
        self.out_features = out_features
        self.weights, self.biases = _arrays(key)


class HandMLP:
    def __init__(self, layers: list[HandLinear]) -> None:
        self.layers = layers


def _hand_linear_flatten(node: HandLinear) -> Any:
    return (node.weights, node.biases), (node.in_features, node.out_features)


def _hand_linear_flatten_with_keys(node: HandLinear) -> Any:
    return (
        (jax.tree_util.GetAttrKey("weights"), node.weights),
        (jax.tree_util.GetAttrKey("biases"), node.biases),
    ), (node.in_features, node.out_features)


def _hand_linear_unflatten(aux: Any, children: Any) -> HandLinear:
    node = object.__new__(HandLinear)
    node.in_features, node.out_features = aux
    node.weights, node.biases = children
    return node


def _hand_mlp_unflatten(aux: Any, children: Any) -> HandMLP:
    node = object.__new__(HandMLP)
    (node.layers,) = children
    return node


jax.tree_util.register_pytree_with_keys(
    HandLinear, _hand_linear_flatten_with_keys, _hand_linear_unflatten, _hand_linear_flatten
)
jax.tree_util.register_pytree_with_keys(
    HandMLP,
    lambda node: (((jax.tree_util.GetAttrKey("layers"), node.layers),), None),
    _hand_mlp_unflatten,
    lambda node: ((node.layers,), None),
)


def build_handwritten(n: int) -> Any:
    return HandMLP([HandLinear(i, WIDTH, WIDTH) for i in range(n)])


# --- jax.tree_util.register_dataclass -----------------------------------------------------------


@dataclasses.dataclass
class DataclassLinear:
    weights: jax.Array
    biases: jax.Array
    in_features: int = dataclasses.field(metadata={"static": True})
    out_features: int = dataclasses.field(metadata={"static": True})


@dataclasses.dataclass
class DataclassMLP:
    layers: list[DataclassLinear]


# Field lists given: JAX before 0.4.36 has no register_dataclass(cls) that reads the metadata.
jax.tree_util.register_dataclass(
    DataclassLinear, ["weights", "biases"], ["in_features", "out_features"]
)
jax.tree_util.register_dataclass(DataclassMLP, ["layers"], [])


def build_register_dataclass(n: int) -> Any:
    return DataclassMLP([DataclassLinear(*_arrays(i), WIDTH, WIDTH) for i in range(n)])


# --- pytreekit, annotated and on an unannotated existing class -----------------------------------


@pytreekit.pytree_class
class KitLinear:
    weights: jax.Array
    biases: jax.Array
    in_features: int = pytreekit.field(static=True)
    out_features: int = pytreekit.field(static=True)


@pytreekit.pytree_class
class KitMLP:
    layers: list[KitLinear]


def build_pytreekit(n: int) -> Any:
    return KitMLP([KitLinear(*_arrays(i), WIDTH, WIDTH) for i in range(n)])


@pytreekit.pytree_class(static=("in_features", "out_features"))
class KitExistingLinear:
    def __init__(self, key: int, in_features: int, out_features: int) -> None:
        self.in_features = in_features
        self.out_features = out_features
        self.weights, self.biases = _arrays(key)


@pytreekit.pytree_class
class KitExistingMLP:
    def __init__(self, layers: list[KitExistingLinear]) -> None:
        self.layers = layers


def build_pytreekit_existing(n: int) -> Any:
    return KitExistingMLP([KitExistingLinear(i, WIDTH, WIDTH) for i in range(n)])


# --- peers that may be absent ----------------------------------------------------------------


def _equinox_builder() -> Callable[[int], Any]:
    import equinox as eqx

    class EqxLinear(eqx.Module):
        weights: jax.Array
        biases: jax.Array
        in_features: int = eqx.field(static=True)
        out_features: int = eqx.field(static=True)

    class EqxMLP(eqx.Module):
        layers: list[EqxLinear]

    return lambda n: EqxMLP([EqxLinear(*_arrays(i), WIDTH, WIDTH) for i in range(n)])


def _flax_builder() -> Callable[[int], Any]:
    from flax import struct

    @struct.dataclass
    class FlaxLinear:
        weights: jax.Array
        biases: jax.Array
        in_features: int = struct.field(pytree_node=False)
        out_features: int = struct.field(pytree_node=False)

    @struct.dataclass
    class FlaxMLP:
        layers: list[FlaxLinear]

    return lambda n: FlaxMLP([FlaxLinear(*_arrays(i), WIDTH, WIDTH) for i in range(n)])


def available_styles() -> tuple[dict[str, Callable[[int], Any]], dict[str, str]]:
    """``(builders by style name, reasons by style name for the absent ones)``."""
    styles: dict[str, Callable[[int], Any]] = {
        "builtin dict/list": build_builtin,
        "hand-written (object.__new__)": build_handwritten,
        "register_dataclass": build_register_dataclass,
    }
    missing: dict[str, str] = {}
    for name, make in (("equinox.Module", _equinox_builder), ("flax.struct", _flax_builder)):
        try:
            styles[name] = make()
        except ImportError as error:
            missing[name] = f"not installed ({error.name}); pip install '.[bench]'"
    styles["pytreekit annotated"] = build_pytreekit
    styles["pytreekit existing class"] = build_pytreekit_existing
    return styles, missing
