# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/indexing.py (commit cec06d1), Apache-2.0.
# Reduced to the class and its registration.
from __future__ import annotations

import dataclasses

from jax._src import core
from jax._src import tree_util
from jax._src.typing import Array


# TODO[pytreekit-migrate] PTK104: flatten runs xs += (self.start,) if
#   self.is_dynamic_start else (None,)
@tree_util.register_pytree_node_class
@dataclasses.dataclass(slots=True)
class Slice:
  """A slice with a start index and a size.

  Both start index and size can either be static, i.e. known at tracing
  and compilation time, or dynamic.
  """

  start: int | Array
  size: int | Array
  stride: int = 1

  def __post_init__(self):
    if self.stride < 0:
      raise ValueError("`stride` must be >= 0.")

  @property
  def is_dynamic_start(self):
    return not core.is_dim(self.start)

  @property
  def is_dynamic_size(self):
    return not core.is_dim(self.size)

  def tree_flatten(self):
    # If `start` is statically known, we treat it as static information
    xs = ()
    data = ()
    xs += (self.start,) if self.is_dynamic_start else (None,)
    data += (None,) if self.is_dynamic_start else (self.start,)
    xs += (self.size,) if self.is_dynamic_size else (None,)
    data += (None,) if self.is_dynamic_size else (self.size,)
    data += (self.stride,)
    return xs, data

  @classmethod
  def tree_unflatten(cls, aux_data, children) -> Slice:
    start, size = (
        a if a is not None else b for a, b in zip(children, aux_data[:2])
    )
    return cls(start, size, aux_data[2])
