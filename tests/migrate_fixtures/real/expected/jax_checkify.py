# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, jax/_src/checkify.py (commit cec06d1), Apache-2.0.
# Reduced to the class and its registration.
from jax._src import tree_util as jtu


class JaxException(Exception):
  """Python exception which can contain an error message with JAX run-time info."""

  def __init__(self, traceback_info):
    self.traceback_info = traceback_info
    # TODO(lenamartens): re-enable tracebacks when they don't leak tracers.
    # self.with_traceback(self.traceback_info)

  def __init_subclass__(cls):
    # TODO[pytreekit-migrate] PTK101: the registration is inside function
    #   '__init_subclass__'
    jtu.register_pytree_node_class(cls)

  def tree_flatten(self, /):
    return ([], self.traceback_info)

  @classmethod
  def tree_unflatten(cls, metadata, payload, /):
    del payload  # Unused.
    return cls(metadata)
