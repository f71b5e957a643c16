"""mypy --strict must accept this file."""

from typing import Any

import jax
import jax.numpy as jnp

from pytreekit import CustomJVPMethod, custom_jvp_method, custom_vjp_method, pytree_class


@pytree_class
class Scaled:
    w: jax.Array
    scale: float = 2.0

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x / self.scale

    @custom_vjp_method(nondiff_self=True)
    def apply(self, x: jax.Array, n: int) -> jax.Array:
        return self.w * x**n


@Scaled.__call__.defjvp
def _scaled_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    return primals[0](primals[1]), tangents[1]


s = Scaled(jnp.ones(2))
out: jax.Array = s(jnp.ones(2))
applied: jax.Array = s.apply(jnp.ones(2), 3)
unbound: jax.Array = Scaled.__call__(s, jnp.ones(2))
wrapper: CustomJVPMethod[Scaled, [jax.Array], jax.Array] = Scaled.__call__
