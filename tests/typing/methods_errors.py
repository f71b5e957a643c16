"""mypy --strict must report exactly the errors marked `# E: <code>` on their lines."""

import jax
import jax.numpy as jnp

from pytreekit import custom_jvp_method, custom_vjp_method, pytree_class


@pytree_class
class Scaled:
    w: jax.Array

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x

    @custom_vjp_method
    def apply(self, x: jax.Array, n: int) -> jax.Array:
        return self.w * x**n


s = Scaled(jnp.ones(2))
s("not an array")  # E: arg-type
s.apply(jnp.ones(2), "three")  # E: arg-type
wrong: str = s(jnp.ones(2))  # E: assignment
s.apply(jnp.ones(2))  # E: call-arg
