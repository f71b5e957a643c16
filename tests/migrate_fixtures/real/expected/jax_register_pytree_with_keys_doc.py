# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/tree_util.py (commit cec06d1), Apache-2.0:
# the example of register_pytree_with_keys's docstring, as a module. It passes the keyed
# flatten to register_pytree_node, so the children JAX sees are (key, array) pairs.
import jax
import jax.numpy as jnp


class MyContainer:
  def __init__(self, size):
    self.x = jnp.zeros(size)
    self.y = jnp.ones(size)
    self.size = size

from jax.tree_util import register_pytree_with_keys_class, GetAttrKey
def flatten_with_keys(obj):
  children = [(GetAttrKey('x'), obj.x),
              (GetAttrKey('y'), obj.y)]  # children must contain arrays & pytrees
  aux_data = (obj.size,)  # aux_data must contain static, hashable data.
  return children, aux_data

def unflatten(aux_data, children):
  # Here we avoid `__init__` because it has extra logic we don't require:
  obj = object.__new__(MyContainer)
  obj.x, obj.y = children
  obj.size, = aux_data
  return obj

# TODO[pytreekit-migrate] PTK104: flatten returns (GetAttrKey('x'), obj.x) as a child
jax.tree_util.register_pytree_node(MyContainer, flatten_with_keys, unflatten)
