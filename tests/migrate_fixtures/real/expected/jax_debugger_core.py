# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/debugger/core.py (commit cec06d1), Apache-2.0.
# Reduced to the class and its registration.
from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from jax._src import tree_util


# TODO[pytreekit-migrate] PTK104: flatten returns self._values as children, not a tuple
#   of attributes
@tree_util.register_pytree_node_class
class _DictWrapper:
  keys: list[Hashable]
  values: list[Any]

  def __init__(self, keys, values):
    self._keys = keys
    self._values = values

  def to_dict(self):
    return dict(zip(self._keys, self._values))

  def tree_flatten(self):
    return self._values, self._keys

  @classmethod
  def tree_unflatten(cls, keys, values):
    return _DictWrapper(keys, values)
