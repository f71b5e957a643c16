"""Linearize a model call once, then push many tangent directions through it.

The model holds non-array leaves (an activation function, an int), which jax.linearize refuses;
pytreekit.linearize holds them fixed. The function runs once; each direction only evaluates the
linear map.

Run: python examples/repeated_jvps.py
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np

import pytreekit


@pytreekit.pytree_class
class MLP:
    hidden: jax.Array
    readout: jax.Array
    activation: object = jnp.tanh  # a function leaf, not an array
    depth: int = 2  # an int leaf

    def __call__(self, x):
        for _ in range(self.depth):
            x = self.activation(self.hidden @ x)
        return self.readout @ x


def main():
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    model = MLP(jax.random.normal(keys[0], (4, 4)), jax.random.normal(keys[1], (2, 4)))
    x = jax.random.normal(keys[2], (4,))

    out, jvp_fn = pytreekit.linearize(lambda m, x: m(x), model, x)
    directions = jax.random.normal(jax.random.PRNGKey(1), (16, 4))
    for direction in directions:
        tangent = jvp_fn(None, direction)  # model held fixed: a JVP in x only
        expected = jax.jvp(lambda x: model(x), (x,), (direction,))[1]
        np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)

    model_direction = pytreekit.replace(model, hidden=jnp.eye(4), readout=jnp.zeros((2, 4)))
    tangent = jvp_fn(model_direction, None)
    expected = jax.jvp(
        lambda h: pytreekit.replace(model, hidden=h)(x), (model.hidden,), (jnp.eye(4),)
    )[1]
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)
    print("output:", out)
    print(f"{len(directions) + 1} Jacobian-vector products from one linearization")


if __name__ == "__main__":
    main()
