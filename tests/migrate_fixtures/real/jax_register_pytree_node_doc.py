# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/tree_util.py (commit cec06d1), Apache-2.0:
# the example of register_pytree_node's docstring, as a module.
import jax
import jax.numpy as jnp


class MyContainer:
  def __init__(self, size):
    self.x = jnp.zeros(size)
    self.y = jnp.ones(size)
    self.size = size

def flatten_func(obj):
  children = (obj.x, obj.y)  # children must contain arrays & pytrees
  aux_data = (obj.size,)  # aux_data must contain static, hashable data.
  return (children, aux_data)

def unflatten_func(aux_data, children):
  # Here we avoid `__init__` because it has extra logic we don't require:
  obj = object.__new__(MyContainer)
  obj.x, obj.y = children
  obj.size, = aux_data
  return obj

jax.tree_util.register_pytree_node(MyContainer, flatten_func, unflatten_func)


# Test data (not from the source): instances the tests build with both versions.
def examples():
  return [MyContainer(5), MyContainer(2)]
