"""replace(): updated copies without __init__."""

import jax
import jax.numpy as jnp
import pytest
from quickstart import Linear

from pytreekit import pytree_class, replace


def test_replace_unannotated_class_with_own_init():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    zeroed = replace(linear, weights=jnp.zeros((3, 2)))
    assert float(zeroed.weights.sum()) == 0.0
    assert zeroed.biases is linear.biases and linear.weights.sum() != 0
    assert type(zeroed) is Linear


def test_replace_unknown_name_is_a_type_error_naming_it():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    with pytest.raises(TypeError, match=r"replace\(\): Linear has no field 'weight'.*'weights'"):
        replace(linear, weight=1)


def test_replace_validates_static_values():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    with pytest.raises(TypeError, match=r"Linear.in_features is a static field.*list"):
        replace(linear, in_features=[2])


def test_replace_inside_jit_with_tracers():
    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    out = jax.jit(lambda m: replace(m, biases=m.biases * 0))(linear)
    assert float(abs(out.biases).sum()) == 0.0


def test_replace_on_non_pytree_class():
    with pytest.raises(TypeError, match=r"replace\(\) expects a @pytree_class.*int"):
        replace(3)


def test_replace_keeps_non_field_attributes_of_annotated_classes():
    @pytree_class
    class Cached:
        x: int

    c = Cached(1)
    c._memo = "kept"
    assert replace(c, x=2)._memo == "kept"
