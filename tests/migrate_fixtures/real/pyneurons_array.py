# ruff: noqa
# fmt: off
# Source: https://github.com/ivandustin/pyneurons, pyneurons/classes/array.py (commit e6f289f),
# MIT. The whole file.
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class Array:
    def __init__(self, array):
        self.array = array

    def __str__(self):
        return f"Array({self.array})"

    def __repr__(self):
        return str(self)

    def tree_flatten(self):
        return (self.array,), None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)


# Test data (not from the source): instances the tests build with both versions.
def examples():
    import jax.numpy as jnp

    return [Array(jnp.arange(4.0)), Array((jnp.ones(2), jnp.zeros(3)))]
