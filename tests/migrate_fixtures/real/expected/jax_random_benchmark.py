# ruff: noqa
# fmt: off
# Source: https://github.com/jax-ml/jax, benchmarks/random_benchmark.py (commit cec06d1),
# Apache-2.0. Reduced to the function holding the registration.
import jax


def _bench_custom_container(state, key):
  # TODO[pytreekit-migrate] PTK101: the registration is inside function
  #   '_bench_custom_container'
  @jax.tree_util.register_pytree_node_class
  class A:
    def __init__(self, x):
      self.x = x

    def tree_flatten(self):
      return (self.x,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      x, = children
      return cls(x)

  f = jax.jit(
      lambda key, a: jax.random.normal(key) + a.x)
  a = A(5.)
  _ = f(key, a)
  while state:
    f(key, a)
  f(key, a).block_until_ready()
