# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, docs/custom_pytrees.md (commit cec06d1), Apache-2.0.
# Reduced to the classes and their registrations; the code cells are kept as written.
import jax
import jax.numpy as jnp
from jax.tree_util import register_pytree_node
from pytreekit import pytree_class


class Special(object):
  def __init__(self, x, y):
    self.x = x
    self.y = y


@pytree_class(eq=False)
class RegisteredSpecial(Special):
  def __repr__(self):
    return "RegisteredSpecial(x={}, y={})".format(self.x, self.y)


@pytree_class(eq=False)
class RegisteredSpecial2(Special):
  def __repr__(self):
    return "RegisteredSpecial2(x={}, y={})".format(self.x, self.y)

  def tree_flatten(self):
    children = (self.x, self.y)
    aux_data = None
    return (children, aux_data)

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    return cls(*children)


def show_example(structured):
  flat, tree = structured.tree_flatten()
  unflattened = RegisteredSpecial2.tree_unflatten(tree, flat)
  print(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")


class MyTree:
  def __init__(self, a):
    self.a = jnp.asarray(a)

# TODO[pytreekit-migrate] PTK205 (unsafe: --unsafe applies it): unflatten converted
#   through __init__ (jnp.asarray(a)); pytreekit rebuilds without converting, so a leaf
#   JAX hands back (a NumPy array, a Python number) stays as it is
register_pytree_node(MyTree, lambda tree: ((tree.a,), None),
    lambda _, args: MyTree(*args))


# Test data (not from the source): instances the tests build with both versions.
def examples():
  return [
      RegisteredSpecial(jnp.float32(1.0), jnp.arange(3.0)),
      RegisteredSpecial2(1.0, jnp.ones((2, 2))),
      MyTree(jnp.arange(5.0)),
  ]
