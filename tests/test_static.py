"""Static fields must be hashable: errors name the class and the field, before jit sees them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pytreekit import field, pytree_class


@pytree_class
class Annotated:
    sizes: object = field(static=True)


@pytree_class(static=("sizes",))
class OwnInit:
    def __init__(self, sizes):
        self.sizes = sizes
        self.w = jnp.ones(1)


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ([1, 2], "a list \\(\\[1, 2\\]\\)"),
        ({"a": 1}, "a dict"),
        (np.ones(2), "an array .*numpy.ndarray"),
        (jnp.ones(2), "an array .*dtype float32 and shape \\(2,\\)"),
    ],
)
def test_unhashable_static_values_are_refused_at_construction(value, what):
    with pytest.raises(TypeError, match=rf"Annotated.sizes is a static field.*holds {what}"):
        Annotated(value)
    with pytest.raises(TypeError, match=rf"OwnInit.sizes is a static field.*holds {what}"):
        OwnInit(value)


def test_hashable_static_values_work_under_jit():
    a = Annotated((1, 2))
    assert jax.jit(lambda a: a)(a).sizes == (1, 2)


def test_a_base_classes_own_setattr_is_respected_and_not_used_on_rebuild():
    seen = []

    class Tracking:
        def __setattr__(self, name, value):
            seen.append(name)
            object.__setattr__(self, name, value)

    @pytree_class(static=("n",))
    class Tracked(Tracking):
        def __init__(self):
            self.n = 1
            self.w = jnp.ones(1)

    tracked = Tracked()
    assert seen == ["n", "w"]
    assert jax.tree_util.tree_map(lambda x: x * 2, tracked).n == 1
    assert seen == ["n", "w"]  # unflatten wrote storage directly
