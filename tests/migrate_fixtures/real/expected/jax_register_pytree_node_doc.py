# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/tree_util.py (commit cec06d1), Apache-2.0:
# the example of register_pytree_node's docstring, as a module.
import jax.numpy as jnp
from pytreekit import pytree_class


@pytree_class(static=("size",), eq=False, repr=False)
class MyContainer:
  def __init__(self, size):
    self.x = jnp.zeros(size)
    self.y = jnp.ones(size)
    self.size = size


# Test data (not from the source): instances the tests build with both versions.
def examples():
  return [MyContainer(5), MyContainer(2)]
