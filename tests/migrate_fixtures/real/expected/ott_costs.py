# ruff: noqa
# fmt: off
# Source: https://github.com/ott-jax/ott, src/ott/geometry/costs.py (commit 6aace50),
# Apache-2.0. Reduced to three classes of the cost hierarchy and their registrations.
import abc

import jax.numpy as jnp
import jax.tree_util as jtu


# TODO[pytreekit-migrate] PTK113: its hand-registered subclass SqPNorm is left (PTK108),
#   and a base is rewritten with those or not at all
@jtu.register_pytree_node_class
class CostFn(abc.ABC):
  """Base class for all costs."""

  @abc.abstractmethod
  def __call__(self, x: jnp.ndarray, y: jnp.ndarray) -> float:
    """Compute cost between :math:`x` and :math:`y`."""

  def tree_flatten(self):  # noqa: D102
    return (), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):  # noqa: D102
    del aux_data
    return cls(*children)


# TODO[pytreekit-migrate] PTK113: its hand-registered subclass SqPNorm is left (PTK108),
#   and a base is rewritten with those or not at all
@jtu.register_pytree_node_class
class TICost(CostFn):
  """Base class for translation invariant (TI) costs."""

  @abc.abstractmethod
  def h(self, z: jnp.ndarray) -> float:
    """TI function acting on difference of :math:`x-y` to output cost."""

  def __call__(self, x: jnp.ndarray, y: jnp.ndarray) -> float:
    """Compute cost as evaluation of :func:`h` on :math:`x-y`."""
    return self.h(x - y)


# TODO[pytreekit-migrate] PTK108: pytreekit would take SqPNorm's fields from annotations
#   (TICost has no __init__ of its own or inherited, and TICost's rewrite decides for
#   its subclasses), and there are none: the rewrite would carry no leaves (flatten
#   carries p)
@jtu.register_pytree_node_class
class SqPNorm(TICost):
  r"""Squared p-norm of the difference of two vectors.

  Args:
    p: Power of the p-norm, :math:`\ge 1`.
  """

  def __init__(self, p: float):
    super().__init__()
    self.p = p
    self.q = 1.0 / (1.0 - (1.0 / p)) if p > 1.0 else jnp.inf

  def h(self, z: jnp.ndarray) -> float:  # noqa: D102
    return 0.5 * jnp.linalg.norm(z, self.p) ** 2

  def tree_flatten(self):  # noqa: D102
    return (), (self.p,)

  @classmethod
  def tree_unflatten(cls, aux_data, children):  # noqa: D102
    del children
    return cls(*aux_data)
