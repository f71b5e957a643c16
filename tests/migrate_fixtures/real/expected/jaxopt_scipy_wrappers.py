# ruff: noqa
# fmt: off
# Source: https://github.com/google/jaxopt, jaxopt/_src/scipy_wrappers.py (commit 2de13bf),
# Apache-2.0. Reduced to the class and its registration.
import jax.numpy as jnp
from jax import config
from jax.tree_util import register_pytree_node_class
from scipy.optimize import LbfgsInvHessProduct


# TODO[pytreekit-migrate] PTK115: base LbfgsInvHessProduct of LbfgsInvHessProductPyTree
#   is not in the scanned files (its __init__ cannot be followed)
@register_pytree_node_class
class LbfgsInvHessProductPyTree(LbfgsInvHessProduct):
  """
  Registers the LbfgsInvHessProduct object as a PyTree.
  This object is typically returned by the L-BFSG-B optimizer to efficiently
  store the inverse of the Hessian matrix evaluated at the best-fit parameters.
  """

  def __init__(self, sk, yk):
    """
    Construct the operator.
    This is the same constructor as the original LbfgsInvHessProduct class,
    except that numpy has been replaced by jax.numpy and no call to the
    numpy.ndarray constuctor is performed.
    """
    if sk.shape != yk.shape or sk.ndim != 2:
      raise ValueError('sk and yk must have matching shape, (n_corrs, n)')
    n_corrs, n = sk.shape
    self.dtype = jnp.float64 if config.jax_enable_x64 is True else jnp.float32
    self.shape = (n, n)
    self.sk = sk
    self.yk = yk
    self.n_corrs = n_corrs
    self.rho = 1 / jnp.einsum('ij,ij->i', sk, yk)


  def __repr__(self):
      return "LbfgsInvHessProduct(sk={}, yk={})".format(self.sk, self.yk)

  def tree_flatten(self):
      children = (self.sk, self.yk)
      aux_data = None
      return (children, aux_data)

  @classmethod
  def tree_unflatten(cls, aux_data, children):
      return cls(*children)
