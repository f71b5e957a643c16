"""A custom JVP written on the method itself.

ScaledModel divides its input by a static `scale` before a sub-model. The custom rule makes the
scaling straight-through in the derivative: the tangent flows as if the division were not there,
so the gradient with respect to x is exactly `scale` times the true one, while the gradient with
respect to the sub-model's parameters is unchanged.

Run: python examples/scaled_model_jvp.py
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
from quickstart import Model

from pytreekit import custom_jvp_method, pytree_class


@pytree_class(static=("scale",))
class ScaledModel:
    def __init__(self, model, scale):
        self.model = model
        self.scale = scale

    @custom_jvp_method
    def __call__(self, x):
        return self.model(x / self.scale)

    @__call__.defjvp
    def _straight_through(primals, tangents):
        (self, x), (d_self, dx) = primals, tangents
        # Differentiate the sub-model at the scaled input, but pass dx through unscaled.
        return jax.jvp(lambda model, z: model(z), (self.model, x / self.scale), (d_self.model, dx))


def loss(scaled, x):
    return jnp.sum(scaled(x) ** 2)


def undecorated_loss(scaled, x):
    return jnp.sum(scaled.model(x / scaled.scale) ** 2)


def main():
    """Check the rule against autodiff; the gradients w.r.t. x, straight-through and true."""
    scaled = ScaledModel(Model(jax.random.PRNGKey(0), in_features=3, out_features=2), scale=4.0)
    x = jnp.array([0.5, -1.0, 2.0])

    np.testing.assert_allclose(scaled(x), scaled.model(x / 4.0))
    grad_x = jax.grad(loss, argnums=1)(scaled, x)
    true_grad_x = jax.grad(undecorated_loss, argnums=1)(scaled, x)
    np.testing.assert_allclose(grad_x, 4.0 * true_grad_x, rtol=1e-5)

    grad_model = jax.grad(loss)(scaled, x)
    true_grad_model = jax.grad(undecorated_loss)(scaled, x)
    np.testing.assert_allclose(
        grad_model.model.linear.weights, true_grad_model.model.linear.weights, rtol=1e-5
    )
    print("gradient w.r.t. x, straight-through:", grad_x)
    print("gradient w.r.t. x, true:            ", true_grad_x)
    return grad_x, true_grad_x


if __name__ == "__main__":
    main()
