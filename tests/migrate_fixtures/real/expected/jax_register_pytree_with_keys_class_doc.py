# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/tree_util.py (commit cec06d1), Apache-2.0:
# the example of register_pytree_with_keys_class's docstring, as a module.
import jax.numpy as jnp
from pytreekit import pytree_class

@pytree_class(eq=False, repr=False)
class Special:
  def __init__(self, x, y):
    self.x = x
    self.y = y


# Test data (not from the source): instances the tests build with both versions.
def examples():
  return [Special(jnp.arange(3.0), jnp.float32(2.0))]
