"""custom_gradient_method against jax.custom_gradient on the same function, and its errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from pytreekit import CustomGradientMethod, custom_gradient_method, pytree_class, replace


@pytree_class(static=("label",))
class Softplus:
    def __init__(self, w, label="softplus"):
        self.w = w
        self.label = label

    @custom_gradient_method
    def __call__(self, x):
        out = jnp.logaddexp(0.0, self.w * x)

        def vjp(g):
            s = jax.nn.sigmoid(self.w * x)
            return replace(self, w=jnp.sum(3 * g * s * x)), 3 * g * s * self.w

        return out, vjp


@jax.custom_gradient
def reference(w, x):
    out = jnp.logaddexp(0.0, w * x)

    def vjp(g):
        s = jax.nn.sigmoid(w * x)
        return jnp.sum(3 * g * s * x), 3 * g * s * w

    return out, vjp


def ours(w, x):
    return Softplus(w)(x)


TRANSFORMS = {
    "call": lambda fn: fn,
    "grad": lambda fn: jax.grad(lambda w, x: jnp.sum(fn(w, x)), argnums=(0, 1)),
    "jit grad": lambda fn: jax.jit(jax.grad(lambda w, x: jnp.sum(fn(w, x)), argnums=(0, 1))),
    "vmap grad": lambda fn: jax.vmap(jax.grad(lambda w, x: jnp.sum(fn(w, x)), 1), (None, 0)),
    "jacrev": lambda fn: jax.jacrev(fn, argnums=1),
    "scan grad": lambda fn: jax.grad(
        lambda w, x: lax.scan(lambda c, _: (c + jnp.sum(fn(w, x)), None), 0.0, None, 2)[0], 1
    ),
    "checkpoint grad": lambda fn: jax.grad(jax.checkpoint(lambda w, x: jnp.sum(fn(w, x))), 1),
}
INPUTS = {
    "python floats": (1.5, 0.7),
    "arrays": (jnp.asarray(1.5), jnp.asarray([[0.5, -1.0], [2.0, 0.1]])),
}


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_agrees_with_jax_custom_gradient(transform, inputs):
    w, x = INPUTS[inputs]
    if transform == "vmap grad":
        x = jnp.stack([jnp.asarray(x), 2 * jnp.asarray(x)])
    mine, theirs = TRANSFORMS[transform](ours)(w, x), TRANSFORMS[transform](reference)(w, x)
    for a, b in zip(
        jax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(theirs), strict=True
    ):
        assert type(a) is type(b)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_static_parts_need_no_cotangent_and_none_is_zero():
    @pytree_class(static=("name",))
    class Shift:
        def __init__(self, b, name):
            self.b = b
            self.name = name

        @custom_gradient_method
        def __call__(self, x, times):
            return self.b + x * times, lambda g: (None, 2 * g * times, None)

    grads = jax.grad(lambda s, x: s(x, 3), argnums=(0, 1))(Shift(jnp.asarray(1.0), "s"), 2.0)
    assert float(grads[0].b) == 0.0 and grads[0].name == "s" and float(grads[1]) == 6.0


def test_errors_name_the_method():
    @pytree_class
    class Bad:
        def __init__(self, w):
            self.w = w

        @custom_gradient_method
        def value_only(self, x):
            return self.w * x

        @custom_gradient_method
        def not_callable(self, x):
            return self.w * x, 3

    with pytest.raises(TypeError, match=r"Bad.value_only: a custom_gradient_method returns a pair"):
        Bad(jnp.asarray(1.0)).value_only(2.0)
    with pytest.raises(TypeError, match=r"Bad.not_callable: .*second item is not callable"):
        jax.grad(Bad(jnp.asarray(1.0)).not_callable)(2.0)
    with pytest.raises(TypeError, match=r"Bad.value_only is a custom_gradient_method.*no defvjp"):
        Bad.value_only.defvjp(lambda *a: a, lambda *a: a)
    assert isinstance(Bad.value_only, CustomGradientMethod)
    with pytest.raises(TypeError, match=r"custom_gradient_method cannot wrap a staticmethod"):
        custom_gradient_method(staticmethod(lambda x: (x, lambda g: g)))


def test_no_leak_under_checking_leaks():
    with jax.checking_leaks():
        jax.jit(jax.grad(lambda x: ours(1.5, x)))(3.0)


def test_a_cotangent_of_the_wrong_shape_names_the_vjp_fn_and_the_field():
    @pytree_class
    class Scaled:
        def __init__(self, w):
            self.w = w

        @custom_gradient_method
        def __call__(self, x):
            def vjp_fn(g):
                return replace(self, w=jnp.ones(3)), g * self.w

            return self.w * x, vjp_fn

    message = (
        r"Scaled\.__call__: its vjp_fn returned a cotangent of shape "
        r"\(3,\) for self\.w, whose shape is \(\)"
    )
    with pytest.raises(ValueError, match=message):
        jax.grad(lambda s: s(2.0))(Scaled(jnp.asarray(1.0)))
