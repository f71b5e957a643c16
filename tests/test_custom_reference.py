"""custom_jvp_method / custom_vjp_method against jax.custom_jvp / custom_vjp on a free function.

The same rule is written once for the method and once for the free function; every input kind
JAX accepts goes through every transform on both, and the results must agree in value, dtype and
type. The rules scale the true derivative by 2, so a rule that is silently skipped shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from pytreekit import custom_jvp_method, custom_vjp_method, pytree_class


@pytree_class
class JVPModel:
    def __init__(self, s):
        self.s = s

    @custom_jvp_method
    def f(self, x):
        return jnp.sin(self.s * x)


@JVPModel.f.defjvp
def _model_jvp(primals, tangents):
    (self, x), (d_self, dx) = primals, tangents
    return self.f(x), _doubled_tangent(self.s, x, None if d_self is None else d_self.s, dx)


def _doubled_tangent(s, x, ds, dx):
    tangent = 0.0
    if ds is not None:
        tangent = tangent + ds * x
    if dx is not None:
        tangent = tangent + s * dx
    return 2 * jnp.cos(s * x) * tangent


@jax.custom_jvp
def reference_jvp(s, x):
    return jnp.sin(s * x)


@reference_jvp.defjvp
def _reference_jvp(primals, tangents):
    (s, x), (ds, dx) = primals, map(_none_if_float0, tangents)
    return reference_jvp(s, x), _doubled_tangent(s, x, ds, dx)


def _none_if_float0(tangent):
    # pytreekit's one deliberate difference: a method's rule gets None where JAX hands a free
    # function's rule a float0 tangent (integer primals: nothing to differentiate).
    return None if getattr(tangent, "dtype", None) == jax.dtypes.float0 else tangent


@pytree_class
class VJPModel:
    def __init__(self, s):
        self.s = s

    @custom_vjp_method
    def f(self, x):
        return jnp.sin(self.s * x)


def _model_fwd(self, x):
    return self.f(x), (self.s, x)


def _model_bwd(residuals, g):
    s, x = residuals
    common = 2 * jnp.cos(s * x) * g
    return VJPModel(_sum_to(common * x, s)), _sum_to(common * s, x)


VJPModel.f.defvjp(_model_fwd, _model_bwd)


def _sum_to(value, like):
    return jnp.sum(value) if jnp.ndim(like) == 0 and jnp.ndim(value) else value


@jax.custom_vjp
def reference_vjp(s, x):
    return jnp.sin(s * x)


def _reference_fwd(s, x):
    return reference_vjp(s, x), (s, x)


def _reference_bwd(residuals, g):
    s, x = residuals
    common = 2 * jnp.cos(s * x) * g
    return _sum_to(common * x, s), _sum_to(common * s, x)


reference_vjp.defvjp(_reference_fwd, _reference_bwd)


def ours_jvp(s, x):
    return JVPModel(s).f(x)


def ours_vjp(s, x):
    return VJPModel(s).f(x)


INPUTS = {
    "python float": (1.5, 0.7),
    "python int s": (2, 0.7),
    "numpy scalar": (np.float32(1.5), np.float32(0.7)),
    "numpy array": (np.float32(1.5), np.array([0.5, -1.0, 2.0], np.float32)),
    "jax array": (jnp.asarray(1.5), jnp.asarray([0.5, -1.0, 2.0])),
    "both arrays": (jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.5, -1.0, 2.0])),
}


def _scalar(fn):
    return lambda s, x: jnp.sum(fn(s, x))


def _scan(fn):
    def run(s, x):
        def body(carry, _):
            return carry + jnp.sum(fn(s, x)), None

        return lax.scan(body, 0.0, None, length=3)[0]

    return run


def _fori(fn):
    return lambda s, x: lax.fori_loop(0, 3, lambda i, c: c + jnp.sum(fn(s, x)), 0.0)


def _cond(fn):
    return lambda s, x: lax.cond(True, lambda: jnp.sum(fn(s, x)), lambda: 0.0)


def _grad_x(fn):
    return jax.grad(_scalar(fn), argnums=1)


TRANSFORMS = {
    "call": lambda fn: fn,
    "jit": jax.jit,
    "jvp in x": lambda fn: lambda s, x: jax.jvp(lambda x: fn(s, x), (x,), (jnp.ones_like(x),)),
    "jvp in s": lambda fn: lambda s, x: jax.jvp(lambda s: fn(s, x), (s,), (jnp.ones_like(s),)),
    "jvp python tangent": lambda fn: lambda s, x: jax.jvp(lambda x: fn(1.5, x), (0.7,), (1.0,)),
    "grad x": _grad_x,
    "grad s": lambda fn: jax.grad(_scalar(fn), argnums=0),
    "jit grad": lambda fn: jax.jit(_grad_x(fn)),
    "jacfwd": lambda fn: jax.jacfwd(fn, argnums=1),
    "jacrev": lambda fn: jax.jacrev(fn, argnums=1),
    "vmap grad": lambda fn: (
        lambda s, x: jax.vmap(_grad_x(fn), in_axes=(None, 0))(
            s, jnp.stack([jnp.asarray(x), jnp.asarray(x) * 2])
        )
    ),
    "linearize": lambda fn: lambda s, x: jax.linearize(lambda x: fn(s, x), x)[1](jnp.ones_like(x)),
    "scan grad": lambda fn: jax.grad(_scan(fn), argnums=1),
    "fori grad": lambda fn: jax.grad(_fori(fn), argnums=1),
    "cond grad": lambda fn: jax.grad(_cond(fn), argnums=1),
    "checkpoint grad": lambda fn: jax.grad(jax.checkpoint(_scalar(fn)), argnums=1),
    "grad of grad": lambda fn: jax.grad(lambda s, x: jnp.sum(_grad_x(fn)(s, x)), argnums=1),
}

# Forward-mode transforms need a JVP rule: custom_vjp refuses them, as jax.custom_vjp does.
FORWARD = {"jvp in x", "jvp in s", "jvp python tangent", "jacfwd", "linearize"}


def _assert_same(ours, reference):
    ours_leaves = jax.tree_util.tree_leaves(ours)
    reference_leaves = jax.tree_util.tree_leaves(reference)
    assert len(ours_leaves) == len(reference_leaves)
    for a, b in zip(ours_leaves, reference_leaves, strict=True):
        assert type(a) is type(b), (type(a), type(b))
        assert jnp.result_type(a) == jnp.result_type(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _int_s_unsupported(transform, inputs):
    # Differentiating with respect to a Python int is an error in JAX too.
    return inputs == "python int s" and transform in {"grad s", "jvp in s"}


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_custom_jvp_method_agrees_with_jax_custom_jvp(transform, inputs):
    s, x = INPUTS[inputs]
    wrap = TRANSFORMS[transform]
    if _int_s_unsupported(transform, inputs):
        with pytest.raises(TypeError) as reference_error:
            wrap(reference_jvp)(s, x)
        with pytest.raises(type(reference_error.value)):
            wrap(ours_jvp)(s, x)
        return
    _assert_same(wrap(ours_jvp)(s, x), wrap(reference_jvp)(s, x))


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("transform", sorted(set(TRANSFORMS) - FORWARD))
def test_custom_vjp_method_agrees_with_jax_custom_vjp(transform, inputs):
    s, x = INPUTS[inputs]
    wrap = TRANSFORMS[transform]
    if _int_s_unsupported(transform, inputs):
        with pytest.raises(TypeError) as reference_error:
            wrap(reference_vjp)(s, x)
        with pytest.raises(type(reference_error.value)):
            wrap(ours_vjp)(s, x)
        return
    _assert_same(wrap(ours_vjp)(s, x), wrap(reference_vjp)(s, x))


@pytest.mark.parametrize("transform", sorted(FORWARD))
def test_custom_vjp_method_refuses_forward_mode_like_jax(transform):
    s, x = INPUTS["jax array"]
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        TRANSFORMS[transform](reference_vjp)(s, x)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        TRANSFORMS[transform](ours_vjp)(s, x)


@pytest.mark.parametrize("fn", [ours_jvp, ours_vjp], ids=["jvp", "vjp"])
def test_nothing_leaks_under_checking_leaks(fn):
    with jax.checking_leaks():
        jax.jit(lambda y: fn(1.5, y))(3.0)
        jax.jit(jax.grad(lambda y: fn(1.5, y)))(3.0)


def test_integer_and_boolean_arguments_and_prng_keys_pass_through():
    @pytree_class
    class Indexed:
        def __init__(self, table):
            self.table = table

        @custom_jvp_method
        def pick(self, index, mask, key, x):
            noise = jax.random.normal(key, ())
            return jnp.where(mask, self.table[index] * x, 0.0) + 0 * noise

    @Indexed.pick.defjvp
    def _pick_jvp(primals, tangents):
        (self, index, mask, key, x), (d_self, d_index, d_mask, d_key, dx) = primals, tangents
        assert d_index is None and d_mask is None and d_key is None
        out = self.pick(index, mask, key, x)
        return out, 2 * jnp.where(mask, self.table[index] * dx + d_self.table[index] * x, 0.0)

    model = Indexed(jnp.asarray([1.0, 2.0, 3.0]))
    index, mask, key = jnp.asarray(2), jnp.asarray(True), jax.random.PRNGKey(0)
    grad = jax.grad(lambda m, x: m.pick(index, mask, key, x), argnums=(0, 1))(model, 0.5)
    np.testing.assert_allclose(grad[0].table, [0.0, 0.0, 1.0])
    np.testing.assert_allclose(grad[1], 6.0)


def test_zero_tangent_outputs_are_jax_arrays_as_in_jax():
    @pytree_class
    class Pair:
        def __init__(self, s):
            self.s = s

        @custom_jvp_method
        def both(self, x):
            return self.s * x, 3

    @Pair.both.defjvp
    def _both_jvp(primals, tangents):
        (self, x), _ = primals, tangents
        return self.both(x), (None, None)

    _, tangent = jax.jvp(lambda x: Pair(jnp.asarray(2.0)).both(x), (1.0,), (1.0,))
    assert isinstance(tangent[0], jax.Array) and float(tangent[0]) == 0.0
    assert tangent[1].dtype == jax.dtypes.float0


@pytest.mark.parametrize("x", [1.0, np.float32(1.0), jnp.float32(1.0)], ids=type)
def test_a_python_number_cotangent_is_accepted_as_jax_accepts_it(x):
    @pytree_class
    class Scaled:
        def __init__(self, s):
            self.s = s

        @custom_vjp_method
        def f(self, x):
            return self.s * x

    Scaled.f.defvjp(lambda self, x: (self.f(x), None), lambda residuals, g: (None, 3.0))

    @jax.custom_vjp
    def reference(s, x):
        return s * x

    reference.defvjp(lambda s, x: (s * x, None), lambda residuals, g: (None, 3.0))

    def kind(result):
        return type(result), float(result), getattr(result, "dtype", None)

    for transform in (jax.grad, lambda f: jax.jit(jax.grad(f))):
        ours = transform(lambda x: Scaled(2.0).f(x))(x)
        theirs = transform(lambda x: reference(2.0, x))(x)
        assert kind(ours) == kind(theirs)
