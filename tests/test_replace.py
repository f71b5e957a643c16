"""replace(): updated copies without __init__."""

import functools

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
    with pytest.raises(TypeError, match=r"replace\(\) expects an instance of a @pytree_class.*int"):
        replace(3)


@pytest.mark.parametrize("annotated", [True, False])
def test_replace_copies_fields_only_never_derived_caches(annotated):
    if annotated:

        @pytree_class
        class Scaled:
            w: float

            @functools.cached_property
            def double(self):
                return self.w * 2

    else:

        @pytree_class
        class Scaled:
            def __init__(self, w):
                self.w = w

            @functools.cached_property
            def double(self):
                return self.w * 2

    m = Scaled(1.0)
    assert m.double == 2.0  # cached in the instance __dict__
    m.note = "not a field"
    updated = replace(m, w=5.0)
    assert updated.double == 10.0
    assert not hasattr(updated, "note")
    assert m.double == 2.0 and m.w == 1.0


def test_replace_runs_no_init_and_no_setattr():
    calls = []

    @pytree_class(frozen=True)
    class Frozen:
        def __init__(self, w):
            calls.append("init")
            self.w = w

    f = Frozen(1.0)
    assert replace(f, w=2.0).w == 2.0 and calls == ["init"]


def test_replace_of_an_instance_with_its_own_layout_keeps_it():
    @pytree_class(static=("size",))
    class Optional:
        def __init__(self, size, bias):
            self.size = size
            self.w = jnp.ones(size)
            if bias:
                self.b = jnp.zeros(size)

    Optional(2, False)  # the class's first layout has no bias
    with_bias = Optional(2, True)
    updated = replace(with_bias, b=jnp.ones(2))
    assert float(updated.b.sum()) == 2.0
    assert jax.tree_util.tree_structure(updated) == jax.tree_util.tree_structure(with_bias)
    assert len(jax.tree_util.tree_leaves(updated)) == 2
    with pytest.raises(
        TypeError, match=r"Optional has no field 'b'; its fields are \('size', 'w'\)"
    ):
        replace(Optional(2, False), b=jnp.ones(2))


def test_a_subclass_left_unregistered_is_refused_not_replaced_as_its_base():
    @pytree_class
    class Base:
        w: float

    class SkipsRegistration(Base):
        def __init_subclass__(cls, **kwargs):
            pass  # does not call super(): subclasses are not made pytree classes

    class Unregistered(SkipsRegistration):
        def __init__(self, w, extra):
            self.w = w
            self.extra = extra

    # It inherits its base's spec attribute, but is not a pytree class of its own.
    message = (
        r"^replace\(\) expects an instance of a @pytree_class class, got an instance of "
        r"test_\w+\.<locals>\.Unregistered; decorate it with @pytreekit.pytree_class first\.$"
    )
    with pytest.raises(TypeError, match=message):
        replace(Unregistered(1.0, 7), w=2.0)
