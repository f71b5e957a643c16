"""custom_jvp_method against a hand-written jax.custom_jvp free function doing the same math, and
pytreekit.linearize applied to many tangents against as many separate jax.jvp calls."""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit
from pytreekit import custom_jvp_method, field, pytree_class


@pytree_class
class Layer:
    """The model both versions differentiate: tanh(W (x / scale) + b)."""

    weights: jax.Array
    biases: jax.Array
    scale: float = field(static=True, default=2.0)

    def forward(self, x: jax.Array) -> jax.Array:
        return jnp.tanh(self.weights @ (x / self.scale) + self.biases)

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.forward(x)


def _straight_through(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (layer, x), (d_layer, dx) = primals, tangents
    y = layer.forward(x)
    dz = d_layer.weights @ (x / layer.scale) + layer.weights @ dx + d_layer.biases
    return y, (1 - y**2) * dz


Layer.__call__.defjvp(_straight_through)


@jax.custom_jvp
def layer_by_hand(layer: Layer, x: jax.Array) -> jax.Array:
    return layer.forward(x)


layer_by_hand.defjvp(_straight_through)


def _median_us(fn: Callable[[], Any], repeats: int, budget_s: float) -> float:
    fn()
    number = max(1, int(budget_s / max(timeit.timeit(fn, number=1), 1e-7)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


def _interleaved(
    ours: Callable[[], Any], theirs: Callable[[], Any], repeats: int, budget_s: float
) -> dict[str, float]:
    a, b = [], []
    for _ in range(repeats):
        a.append(_median_us(ours, 1, budget_s))
        b.append(_median_us(theirs, 1, budget_s))
    ours_us, theirs_us = statistics.median(a), statistics.median(b)
    return {"pytreekit": ours_us, "jax": theirs_us, "ratio": ours_us / theirs_us}


@pytree_class
class Stack:
    """A model of many small arrays: what an eager call costs per leaf."""

    arrays: list[jax.Array]

    @custom_jvp_method
    def total(self, x: jax.Array) -> jax.Array:
        return sum(self.arrays, x)


@Stack.total.defjvp
def _total_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (stack, x), (d_stack, dx) = primals, tangents
    return stack.total(x), sum(d_stack.arrays, dx)


@jax.custom_jvp
def total_by_hand(stack: Stack, x: jax.Array) -> jax.Array:
    return sum(stack.arrays, x)


total_by_hand.defjvp(_total_jvp)


def _eager_calls(n_leaves: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """An un-jitted call of the method and of the free jax.custom_jvp, on ``n_leaves`` arrays."""
    stack = Stack([jnp.ones(()) for _ in range(n_leaves - 1)])
    x = jnp.ones(())
    return (
        lambda: jax.block_until_ready(stack.total(x)),
        lambda: jax.block_until_ready(total_by_hand(stack, x)),
    )


def run(repeats: int, budget_s: float, n_tangents: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    layer = Layer(jnp.asarray(rng.normal(size=(8, 8)), jnp.float32), jnp.zeros(8))
    x = jnp.asarray(rng.normal(size=(8,)), jnp.float32)

    def loss_ours(layer: Layer, x: jax.Array) -> jax.Array:
        return jnp.sum(layer(x))

    def loss_hand(layer: Layer, x: jax.Array) -> jax.Array:
        return jnp.sum(layer_by_hand(layer, x))

    grad_ours = jax.jit(jax.grad(loss_ours, argnums=(0, 1)))
    grad_hand = jax.jit(jax.grad(loss_hand, argnums=(0, 1)))
    results = {
        "custom_jvp_method: jit(grad) dispatch": _interleaved(
            lambda: jax.block_until_ready(grad_ours(layer, x)),
            lambda: jax.block_until_ready(grad_hand(layer, x)),
            repeats,
            budget_s,
        ),
        "custom_jvp_method: trace of grad": _interleaved(
            lambda: jax.make_jaxpr(jax.grad(loss_ours, argnums=(0, 1)))(layer, x),
            lambda: jax.make_jaxpr(jax.grad(loss_hand, argnums=(0, 1)))(layer, x),
            repeats,
            budget_s,
        ),
    }

    for n_leaves in (1, 512):
        ours, theirs = _eager_calls(n_leaves)
        results[f"custom_jvp_method: eager call, {n_leaves} leaves"] = _interleaved(
            ours, theirs, repeats, budget_s
        )

    @pytree_class
    class MLP:
        layers: list[jax.Array]
        activation: Any = jnp.tanh  # a function leaf: jax.linearize alone would refuse it

        def __call__(self, x: jax.Array) -> jax.Array:
            for w in self.layers:
                x = self.activation(w @ x)
            return x

    mlp = MLP([jnp.asarray(rng.normal(size=(16, 16)), jnp.float32) for _ in range(4)])
    x16 = jnp.asarray(rng.normal(size=(16,)), jnp.float32)
    # Each direction moves both the weights and the input; both sides compute the same JVPs.
    directions = [
        (
            [jnp.asarray(rng.normal(size=(16, 16)), jnp.float32) for _ in range(4)],
            jnp.asarray(rng.normal(size=(16,)), jnp.float32),
        )
        for _ in range(n_tangents)
    ]

    def linearize_once() -> list[Any]:
        _, jvp_fn = pytreekit.linearize(lambda m, x: m(x), mlp, x16)
        return [
            jax.block_until_ready(jvp_fn(pytreekit.replace(mlp, layers=dw, activation=None), dx))
            for dw, dx in directions
        ]

    def with_layers(layers: list[jax.Array], x: jax.Array) -> jax.Array:
        return pytreekit.replace(mlp, layers=layers)(x)  # jax.jvp needs the function leaf closed

    def separate_jvps() -> list[Any]:
        return [
            jax.block_until_ready(jax.jvp(with_layers, (mlp.layers, x16), (dw, dx))[1])
            for dw, dx in directions
        ]

    results[f"linearize + {n_tangents} applications vs {n_tangents} jax.jvp"] = _interleaved(
        linearize_once, separate_jvps, repeats, budget_s * 5
    )
    return results
