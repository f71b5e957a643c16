"""Quickstart: the classes you already have, made pytrees by one decorator, trained with jax.grad.

Run: python examples/quickstart.py
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

from pytreekit import pytree_class


class Module:
    """Your own base class; pytreekit needs nothing from it."""


@pytree_class(static=("in_features", "out_features"))
class Linear(Module):
    def __init__(self, key, in_features, out_features):
        self.in_features = in_features
        self.out_features = out_features
        key_w, key_b = jax.random.split(key)
        self.weights = jax.random.normal(key_w, (out_features, in_features))
        self.biases = jax.random.normal(key_b, (out_features,))

    def __call__(self, x):
        return x @ self.weights.T + self.biases


@pytree_class(static=("fn",))
class Activation(Module):
    def __init__(self, fn=jnp.tanh):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


@pytree_class
class Model(Module):
    def __init__(self, key, in_features, out_features):
        self.linear = Linear(key, in_features, out_features)
        self.activation = Activation(jnp.tanh)

    def __call__(self, x):
        return self.activation(self.linear(x))


def compute_loss(model, data, target):
    return jnp.mean((model(data) - target) ** 2)


@jax.jit
def sgd_step(model, data, target, learning_rate=0.1):
    loss, grads = jax.value_and_grad(compute_loss)(model, data, target)
    model = jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, model, grads)
    return model, loss


def main():
    """Train for 300 steps; the loss at each step."""
    key_model, key_data = jax.random.split(jax.random.PRNGKey(0))
    model = Model(key_model, in_features=3, out_features=2)
    data = jax.random.normal(key_data, (64, 3))
    target = jnp.tanh(data @ jnp.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.0]]).T)

    first = compute_loss(model, data, target)
    losses = []
    for _ in range(300):
        model, loss = sgd_step(model, data, target)
        losses.append(float(loss))
    print(model)
    print(f"loss {float(first):.4f} -> {float(loss):.4f}")
    assert loss < first / 10, "training did not reduce the loss"
    return losses


if __name__ == "__main__":
    main()
