"""A custom VJP method for a stable, memory-light backward pass.

ClippedLinear clips the incoming gradient to [-clip, clip] before back-propagating it, and its
forward pass saves only its inputs: the backward pass recomputes what it needs.

Run: python examples/clipped_gradient_vjp.py
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np

from pytreekit import custom_vjp_method, pytree_class, replace


@pytree_class(static=("clip",))
class ClippedLinear:
    def __init__(self, key, in_features, out_features, clip=1.0):
        self.weights = jax.random.normal(key, (out_features, in_features))
        self.biases = jnp.zeros(out_features)
        self.clip = clip

    @custom_vjp_method
    def __call__(self, x):
        return self.weights @ x + self.biases


def _forward(self, x):
    return self(x), (self, x)  # residuals: the inputs only


def _backward(residuals, g):
    self, x = residuals
    g = jnp.clip(g, -self.clip, self.clip)
    self_cotangent = replace(self, weights=jnp.outer(g, x), biases=g)
    return self_cotangent, self.weights.T @ g


ClippedLinear.__call__.defvjp(_forward, _backward)


def main():
    layer = ClippedLinear(jax.random.PRNGKey(0), in_features=3, out_features=2, clip=0.5)
    x = jnp.array([1.0, -2.0, 3.0])

    def loss(layer, x):
        return jnp.sum(10.0 * layer(x))  # upstream gradient 10 per output: clipped to 0.5

    grad_layer, grad_x = jax.grad(loss, argnums=(0, 1))(layer, x)
    np.testing.assert_allclose(grad_layer.weights, 0.5 * jnp.outer(jnp.ones(2), x))
    np.testing.assert_allclose(grad_layer.biases, 0.5 * jnp.ones(2))
    np.testing.assert_allclose(grad_x, layer.weights.T @ (0.5 * jnp.ones(2)), rtol=1e-6)
    print("clipped weight gradient:\n", grad_layer.weights)


if __name__ == "__main__":
    main()
