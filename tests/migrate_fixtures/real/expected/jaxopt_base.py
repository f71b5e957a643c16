# ruff: noqa
# fmt: off
# Source: https://github.com/google/jaxopt, jaxopt/_src/base.py (commit 2de13bf), Apache-2.0.
# Reduced to the class (three of its methods) and its registration.
import jax
import jax.numpy as jnp


# TODO[pytreekit-migrate] PTK205 (unsafe: --unsafe applies it): unflatten converted
#   through __init__ (jnp.array(A)); pytreekit rebuilds without converting, so a leaf
#   JAX hands back (a NumPy array, a Python number) stays as it is
@jax.tree_util.register_pytree_node_class
class LinearOperator(object):

  def __init__(self, A):
    self.A = jnp.array(A)

  def shape(self):
    return self.A.shape

  def matvec(self, x):
    """Computes dot(A, x)."""
    return jnp.dot(self.A, x)

  def rmatvec(self, x):
    """Computes dot(A.T, x)."""
    return jnp.dot(self.A.T, x)

  def tree_flatten(self):
    return (self.A,), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    del aux_data
    return cls(*children)


# Test data (not from the source): instances the tests build with both versions.
def examples():
  return [LinearOperator(jnp.arange(6.0).reshape(2, 3)), LinearOperator([[1.0, 2.0]])]
