"""Static fields must be hashable: errors name the class and the field, before jit sees them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from quickstart import Linear

from pytreekit import field, pytree_class


@pytree_class
class Annotated:
    sizes: object = field(static=True)


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
    with pytest.raises(TypeError, match=rf"Linear.in_features is a static field.*holds {what}"):
        Linear(jax.random.PRNGKey(0), value, 3)


def test_assignment_of_unhashable_static_is_refused():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    with pytest.raises(TypeError, match=r"Linear.out_features is a static field.*make the field"):
        linear.out_features = [3]
    linear.weights = [1, 2]  # not static: anything goes


def test_hashable_static_values_work_under_jit():
    a = Annotated((1, 2))
    assert jax.jit(lambda a: a)(a).sizes == (1, 2)


def test_a_base_classes_own_setattr_is_respected():
    seen = []

    class Tracking:
        def __setattr__(self, name, value):
            seen.append(name)
            object.__setattr__(self, name, value)

    @pytree_class(static=("n",))
    class Tracked(Tracking):
        def __init__(self):
            self.n = 1

    Tracked()
    assert seen == ["n"]
