"""linearize: primals checked against the function's parameters, out typed as its result."""

from collections.abc import Callable
from typing import Any, assert_type

import jax

from pytreekit import linearize, pytree_class

x = jax.random.normal(jax.random.key(0), (3,))


@pytree_class(static=("activation",))
class Layer:
    w: jax.Array
    activation: Callable[[jax.Array], jax.Array]

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.activation(self.w * x)


def apply(layer: Layer, x: jax.Array) -> jax.Array:
    return layer(x)


layer = Layer(x, jax.nn.relu)
out, jvp_fn = linearize(apply, layer, x)
assert_type(out, jax.Array)
assert_type(jvp_fn, Callable[..., Any])
out2, _ = linearize(lambda m, z: m(z), layer, x)  # a lambda's parameters come from the primals
assert_type(out2, jax.Array)
assert out.shape == out2.shape == (3,)
