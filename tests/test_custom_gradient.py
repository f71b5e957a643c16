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


# Closures jax.closure_convert could not carry (F5): integer, boolean and key arrays, each as a
# pytree class's custom_gradient_method and as jax.custom_gradient on the same body.
def _argmax_pool(x):
    i = jnp.argmax(x)
    return x[i], lambda g: (jnp.zeros_like(x).at[i].set(g),)


def _relu(x):
    mask = x > 0
    return jnp.where(mask, x, 0.0), lambda g: (jnp.where(mask, g, 0.0),)


def _dropout(x):
    key = jax.random.key(0)  # the key itself is closed over, as a dropout's backward does
    keep = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, x.shape)
    return jnp.where(keep, x, 0.0), lambda g: (
        jnp.where(jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, x.shape), g, 0.0),
    )


BODIES = {"int argmax": _argmax_pool, "bool mask": _relu, "prng key": _dropout}


def _as_method(body):
    @pytree_class
    class Layer:
        @custom_gradient_method
        def __call__(self, x):
            out, vjp = body(x)
            return out, lambda g: (None, *vjp(g))

    return Layer()


CLOSURE_TRANSFORMS = {
    "grad": lambda f: jax.grad(lambda x: jnp.sum(f(x))),
    "jit(grad)": lambda f: jax.jit(jax.grad(lambda x: jnp.sum(f(x)))),
    "grad(jit)": lambda f: jax.grad(lambda x: jnp.sum(jax.jit(lambda y: f(y))(x))),
    "vmap(grad)": lambda f: (
        lambda x: jax.vmap(jax.grad(lambda y: jnp.sum(f(y))))(jnp.stack([x, x[::-1]]))
    ),
    "grad(scan)": lambda f: jax.grad(
        lambda x: lax.scan(lambda c, _: (c + jnp.sum(f(x)), None), 0.0, None, 2)[0]
    ),
    "jit(grad(scan))": lambda f: jax.jit(
        jax.grad(lambda x: lax.scan(lambda c, _: (c + jnp.sum(f(x)), None), 0.0, None, 2)[0])
    ),
    "grad(cond)": lambda f: jax.grad(
        lambda x: lax.cond(x[0] < 10.0, lambda y: jnp.sum(f(y)), jnp.sum, x)
    ),
    "grad(checkpoint)": lambda f: jax.grad(jax.checkpoint(lambda x: jnp.sum(f(x)))),
}


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("transform", CLOSURE_TRANSFORMS)
def test_integer_bool_and_key_closures_agree_with_jax_custom_gradient(body, transform):
    x = jnp.asarray([0.5, 3.0, -1.0, 2.0])
    reference = jax.custom_gradient(lambda x: BODIES[body](x))
    try:
        theirs = CLOSURE_TRANSFORMS[transform](reference)(x)
    except Exception as error:  # JAX 0.4.35's cond cannot take a key residual in one branch
        with pytest.raises(type(error)):
            CLOSURE_TRANSFORMS[transform](_as_method(BODIES[body]))(x)
        return
    mine = CLOSURE_TRANSFORMS[transform](_as_method(BODIES[body]))(x)
    np.testing.assert_allclose(mine, theirs)


def test_eager_calls_keep_no_vjp_fn_alive():
    import gc
    import weakref

    alive = []

    @pytree_class
    class Tanh:
        @custom_gradient_method
        def __call__(self, x):
            act = jnp.tanh(x)

            def vjp_fn(g):
                return None, g * (1 - act**2)

            alive.extend([weakref.ref(act), weakref.ref(vjp_fn)])
            return jnp.sum(act), vjp_fn

    for i in range(3):
        jax.grad(Tanh())(jnp.full((4,), float(i)))
    gc.collect()
    assert [ref() for ref in alive] == [None] * len(alive)


@pytree_class
class _Backward:
    """A callable pytree as vjp_fn: unhashable (a pytree class with an array field)."""

    def __init__(self, c):
        self.c = c

    def __call__(self, g):
        return None, g * self.c


def test_an_unhashable_callable_pytree_is_a_vjp_fn():
    @pytree_class
    class Sin:
        @custom_gradient_method
        def __call__(self, x):
            return jnp.sin(x), _Backward(jnp.cos(x))

    with pytest.raises(TypeError):
        hash(_Backward(jnp.asarray(1.0)))
    jitted = lambda f: jax.grad(jax.jit(f.__call__))  # noqa: E731
    for transform in (jax.grad, lambda f: jax.jit(jax.grad(f)), jitted):
        assert float(transform(Sin())(1.0)) == pytest.approx(float(jnp.cos(1.0)))


def test_equal_vjp_fn_objects_do_not_share_a_backward():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Backward:  # equal and alike in hash whatever c holds
        c: jax.Array = dataclasses.field(compare=False)

        def __call__(self, g):
            return None, g * self.c

    @pytree_class
    class Sin:
        @custom_gradient_method
        def __call__(self, x):
            return jnp.sin(x), Backward(jnp.cos(x))

    for x in (0.0, 1.0, 2.0):
        assert float(jax.grad(Sin())(x)) == pytest.approx(float(jnp.cos(x)))


def test_jax_without_typeof_traces_on_shape_dtype_structs(monkeypatch):
    # JAX 0.4.35 has no jax.typeof: the tangent types are made from shapes and dtypes.
    from pytreekit import _compat

    monkeypatch.setattr(_compat, "_typeof", None)
    x = jnp.asarray([0.5, 3.0, -1.0, 2.0])
    for body in BODIES.values():
        for transform in ("grad", "grad(jit)"):
            mine = CLOSURE_TRANSFORMS[transform](_as_method(body))(x)
            theirs = CLOSURE_TRANSFORMS[transform](jax.custom_gradient(body))(x)
            np.testing.assert_allclose(mine, theirs)
    assert _compat.tangent_type(1.5) == jax.ShapeDtypeStruct((), jnp.float32)
