"""custom_vjp_method: clipping, self cotangents built by replace, None as zero, errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from clipped_gradient_vjp import ClippedLinear
from jax import lax

import pytreekit
from pytreekit import CustomVJPMethod, custom_vjp_method, pytree_class, replace


@pytest.fixture
def layer():
    return ClippedLinear(jax.random.PRNGKey(0), in_features=3, out_features=2, clip=0.5)


X = jnp.array([1.0, -2.0, 3.0])


@pytest.mark.parametrize("upstream", [10.0, 0.2])
def test_clipping_against_hand_values(layer, upstream):
    grad_layer, grad_x = jax.jit(
        jax.grad(lambda lin, x: jnp.sum(upstream * lin(x)), argnums=(0, 1))
    )(layer, X)
    g = np.full(2, min(upstream, 0.5))
    np.testing.assert_allclose(grad_layer.weights, np.outer(g, X), rtol=1e-6)
    np.testing.assert_allclose(grad_layer.biases, g, rtol=1e-6)
    np.testing.assert_allclose(grad_x, np.asarray(layer.weights).T @ g, rtol=1e-6)
    assert grad_layer.clip == 0.5


def test_primal_and_descriptor(layer):
    np.testing.assert_allclose(layer(X), layer.weights @ X + layer.biases)
    np.testing.assert_allclose(ClippedLinear.__call__(layer, X), layer(X))
    assert isinstance(ClippedLinear.__call__, CustomVJPMethod)


def test_under_vmap_scan_and_checkpoint(layer):
    xs = jnp.stack([X, 2 * X])
    per_example = jax.vmap(jax.grad(lambda x: jnp.sum(10.0 * layer(x))))(xs)
    np.testing.assert_allclose(per_example[1], np.asarray(layer.weights).T @ np.full(2, 0.5))

    def scanned(layer):
        return jax.lax.scan(lambda c, x: (c + jnp.sum(10.0 * layer(x)), None), 0.0, xs)[0]

    grads = jax.grad(jax.checkpoint(scanned))(layer)
    np.testing.assert_allclose(grads.biases, np.full(2, 1.0), rtol=1e-6)  # 0.5 per example


@pytree_class
class Affine:
    w: jax.Array
    b: jax.Array

    @custom_vjp_method
    def __call__(self, x, n, label):
        return self.w * x**n + self.b


def _affine_fwd(self, x, n, label):
    return self(x, n, label), (self, x, n)


def _affine_bwd(res, g):
    self, x, n = res
    # Only w gets a cotangent; b's is None, so zero. n and label need none.
    return replace(self, w=g * x**n, b=None), None, None, None


Affine.__call__.defvjp(_affine_fwd, _affine_bwd)


def test_none_cotangents_act_as_zeros():
    affine = Affine(jnp.array(2.0), jnp.array(1.0))
    grads = jax.grad(lambda a, x: a(x, 3, "cube"), argnums=(0, 1))(affine, jnp.array(2.0))
    assert float(grads[0].w) == 8.0
    assert float(grads[0].b) == 0.0
    assert float(grads[1]) == 0.0


def test_non_array_residuals_are_kept_aside():
    @pytree_class
    class WithFn:
        w: jax.Array
        fn: object = jnp.sin

        @custom_vjp_method
        def f(self, x):
            return self.fn(self.w * x)

    WithFn.f.defvjp(
        lambda self, x: (self.f(x), (self, x)),  # self holds a function: not an array
        lambda res, g: (None, g * jnp.cos(res[0].w * res[1]) * res[0].w),
    )
    obj = WithFn(jnp.array(2.0))
    assert float(jax.grad(obj.f)(0.5)) == pytest.approx(2 * np.cos(1.0), rel=1e-6)


def test_errors_name_the_method():
    @pytree_class
    class Bad:
        w: jax.Array

        @custom_vjp_method
        def f(self, x):
            return self.w * x

        @custom_vjp_method
        def g(self, x):
            return self.w * x

        @custom_vjp_method
        def h(self, x):
            return self.w * x

    Bad.f.defvjp(lambda self, x: (self.f(x), None), lambda res, g: (g,))
    Bad.g.defvjp(lambda self, x: (self.g(x), None), lambda res, g: ({"w": g}, g))
    bad = Bad(jnp.array(1.0))
    with pytest.raises(
        TypeError, match=r"Bad.f: the bwd rule .*<lambda> must return a tuple of 2 .*\(self, x\)"
    ):
        jax.grad(lambda x: bad.f(x))(1.0)
    with pytest.raises(
        TypeError,
        match=r"Bad.g: the bwd rule .*<lambda> .*cotangent for 'self' that does not have the "
        r"structure",
    ):
        jax.grad(lambda x: bad.g(x))(1.0)
    with pytest.raises(TypeError, match=r"Bad.h is a custom_vjp_method without rules.*defvjp"):
        jax.grad(lambda x: bad.h(x))(1.0)
    assert float(bad.h(2.0)) == 2.0  # evaluating needs no rules


@pytest.mark.parametrize("decorator", [custom_vjp_method, pytreekit.custom_jvp_method])
@pytest.mark.parametrize("wrapper", [staticmethod, classmethod, property])
def test_descriptors_are_refused_at_decoration(decorator, wrapper):
    kind = decorator.__name__
    with pytest.raises(TypeError, match=rf"{kind} cannot wrap a {wrapper.__name__}: .*self"):
        decorator(wrapper(lambda self, x: x))


@pytest.mark.parametrize("decorator", [custom_vjp_method, pytreekit.custom_jvp_method])
def test_functions_without_parameters_and_bad_options_are_refused(decorator):
    kind = decorator.__name__
    with pytest.raises(TypeError, match=rf"{kind} .*takes no parameters.*instance \(self\)"):
        decorator(lambda: 1.0)
    with pytest.raises(TypeError, match=rf"{kind} decorates a function .*got 3"):
        decorator(3)
    with pytest.raises(TypeError, match=rf"{kind}\(nondiff_self=...\) takes True or False"):
        decorator(nondiff_self="yes")(lambda self: 1.0)
    method = decorator(lambda self, x: x)
    with pytest.raises(TypeError, match="is already a"):
        decorator(method)


def test_defvjp_and_defjvp_check_their_arguments():
    method = custom_vjp_method(lambda self, x: x)
    with pytest.raises(TypeError, match=r"defvjp\(fwd, bwd\): bwd must be a function .* got None"):
        method.defvjp(lambda self, x: (x, None), None)
    assert method.fwd is None  # a failed call changes nothing
    jvp_method = pytreekit.custom_jvp_method(lambda self, x: x)
    with pytest.raises(TypeError, match=r"defjvp\(\) takes the JVP rule, a function .* got 3"):
        jvp_method.defjvp(3)
    assert jvp_method.rule is None


def test_fwd_that_does_not_return_a_pair_is_named():
    @pytreekit.pytree_class
    class Scale:
        def __init__(self, w):
            self.w = w

        @custom_vjp_method
        def __call__(self, x):
            return self.w * x

    def fwd_without_residuals(self, x):
        return self(x)

    Scale.__call__.defvjp(fwd_without_residuals, lambda residuals, g: (None, g))
    message = r"Scale.__call__: the fwd rule .*fwd_without_residuals must return a pair"
    with pytest.raises(TypeError, match=message + r" \(out, residuals\), but it returned a single"):
        jax.grad(lambda x: Scale(jnp.asarray(2.0))(x))(1.0)


def test_nondiff_self_ignores_the_cotangent_the_rule_gives_for_self():
    @pytree_class
    class Scale:
        w: jax.Array

        @custom_vjp_method(nondiff_self=True)
        def f(self, x):
            return self.w * x

    # The rule returns a cotangent for self anyway, not even shaped like self: with
    # nondiff_self it is dropped before any check.
    Scale.f.defvjp(
        lambda self, x: (self.f(x), (self.w, x)),
        lambda res, g: ({"w": res[1] * g}, res[0] * g),
    )
    scale = Scale(jnp.array(3.0))
    grad_scale, grad_x = jax.grad(lambda s, x: s.f(x), argnums=(0, 1))(scale, jnp.array(2.0))
    assert float(grad_x) == 3.0
    assert float(grad_scale.w) == 0.0


def test_cotangent_of_the_wrong_shape_names_the_rule_the_argument_and_the_field():
    @pytree_class
    class Scale:
        w: jax.Array

        @custom_vjp_method
        def f(self, x):
            return (self.w * (x["scale"] if isinstance(x, dict) else x)).sum()

    def forward(self, x):
        return self.f(x), (self, x)

    def wrong_x(residuals, g):
        return None, jnp.ones(3)

    def wrong_w(residuals, g):
        self, _ = residuals
        return replace(self, w=jnp.ones(3)), g * self.w

    def wrong_in_a_dict(residuals, g):
        return None, {"scale": jnp.ones(3)}

    scale = Scale(jnp.array([2.0, 3.0]))
    for bwd, x, culprit in [
        (wrong_x, jnp.array(1.0), r"x, whose shape is \(\)"),
        (wrong_w, jnp.ones(2), r"self\.w, whose shape is \(2,\)"),
        (wrong_in_a_dict, {"scale": jnp.ones(2)}, r"x\['scale'\], whose shape is \(2,\)"),
    ]:
        Scale.f.defvjp(forward, bwd)
        message = (
            rf"<locals>\.Scale\.f: the bwd rule .*{bwd.__name__} returned a cotangent of shape "
            rf"\(3,\) for {culprit}.*Return one of shape"
        )
        with pytest.raises(ValueError, match=message):
            jax.grad(lambda s, x: s.f(x))(scale, x)


def test_a_cotangent_of_the_wrong_shape_raises_what_jax_custom_vjp_raises():
    @jax.custom_vjp
    def reference(x):
        return 2.0 * x

    reference.defvjp(lambda x: (2.0 * x, None), lambda _, g: (jnp.ones(3),))
    with pytest.raises(Exception) as expected:
        jax.grad(lambda x: reference(x).sum())(jnp.ones(2))

    @pytree_class
    class Doubler:
        w: jax.Array

        @custom_vjp_method
        def f(self, x):
            return self.w * x

    Doubler.f.defvjp(lambda self, x: (self.w * x, None), lambda _, g: (None, jnp.ones(3)))
    with pytest.raises(Exception) as raised:
        jax.grad(lambda x: Doubler(jnp.ones(2)).f(x).sum())(jnp.ones(2))
    assert type(raised.value) is type(expected.value) is ValueError


def test_a_cotangent_of_an_argument_whose_unflatten_refuses_ints_names_the_argument():
    @jax.tree_util.register_pytree_node_class
    class Checked:  # registered by hand, and checks what it is rebuilt from
        def __init__(self, w):
            if not hasattr(w, "shape"):
                raise TypeError("Checked holds arrays")
            self.w = w

        def tree_flatten(self):
            return (self.w,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    @pytree_class
    class Scale:
        s: jax.Array

        @custom_vjp_method
        def f(self, checked):
            return self.s * checked.w

    Scale.f.defvjp(
        lambda self, checked: (self.f(checked), None),
        lambda residuals, g: (None, Checked(jnp.ones(3))),
    )
    with pytest.raises(ValueError, match=r"Scale\.f: .* of shape \(3,\) for checked, whose shape"):
        jax.grad(lambda c: Scale(jnp.array(2.0)).f(c).sum())(Checked(jnp.ones(2)))


def test_a_bwd_rule_returning_the_wrong_count_is_told_what_it_returned():
    @pytree_class
    class Scale:
        w: jax.Array

        @custom_vjp_method
        def f(self, x):
            return self.w * x

    scale = Scale(jnp.array(2.0))
    for result, described in [((None,), "1 values"), (1.0, "a float")]:
        Scale.f.defvjp(lambda self, x: (self.f(x), None), lambda res, g, result=result: result)
        message = (
            r"<locals>\.Scale\.f: the bwd rule .*<lambda> must return a tuple of 2 cotangents, one "
            rf"for each of \(self, x\), with None for zero; it returned {described}\."
        )
        with pytest.raises(TypeError, match=message):
            jax.grad(scale.f)(1.0)


def test_zero_cotangents_for_array_arguments_and_none_for_integer_ones():
    @pytree_class
    class Gather:
        w: jax.Array

        @custom_vjp_method
        def f(self, x, index):
            return self.w * x[index]

    def bwd_int_cotangent(res, g):
        _, x, index = res
        # An integer index has no cotangent: whatever is given for it is dropped, whatever its
        # shape, as jax.custom_vjp drops it.
        return None, jnp.zeros_like(x).at[index].set(g), jnp.ones(2)

    scale_x = Gather(jnp.array(2.0))
    x, index = jnp.array([1.0, 2.0, 3.0]), jnp.array(1)
    Gather.f.defvjp(lambda self, x, index: (self.f(x, index), (self, x, index)), bwd_int_cotangent)
    np.testing.assert_array_equal(jax.grad(scale_x.f)(x, index), [0.0, 1.0, 0.0])
    grads = jax.grad(scale_x.f, argnums=(0, 1), allow_int=True)(x, index)
    np.testing.assert_array_equal(grads[0], [0.0, 1.0, 0.0])
    assert grads[1].dtype == jax.dtypes.float0

    # None for a vector argument is its zero cotangent, whatever its shape.
    Gather.f.defvjp(
        lambda self, x, index: (self.f(x, index), None), lambda res, g: (None, None, None)
    )
    np.testing.assert_array_equal(jax.grad(scale_x.f)(x, index), [0.0, 0.0, 0.0])


@pytree_class
class _Inner:
    u: jax.Array


@pytree_class
class _Outer:
    inner: _Inner
    b: jax.Array


SUBTREE_COTANGENTS = {
    "dict sub-tree": lambda self, x, g: (None, {"p": None, "q": g * self.b}),
    "whole argument": lambda self, x, g: (None, None),
    "nested field of self": lambda self, x, g: (
        replace(self, inner=None, b=g * x["q"]),
        {"p": {"u": None}, "q": None},
    ),
    "nested field and sub-tree": lambda self, x, g: (
        replace(self, inner=None, b=g * x["q"]),
        {"p": None, "q": g * self.b},
    ),
}


@pytest.mark.parametrize("kind", ["custom_vjp_method", "custom_gradient_method"])
@pytest.mark.parametrize("cotangents", SUBTREE_COTANGENTS)
def test_none_for_a_sub_tree_is_zero_as_in_jax_custom_vjp(cotangents, kind):
    bwd = SUBTREE_COTANGENTS[cotangents]

    def body(self, x):
        return self.b * x["q"] + self.inner.u * x["p"]["u"]

    @jax.custom_vjp
    def reference(self, x):
        return body(self, x)

    reference.defvjp(lambda self, x: (body(self, x), (self, x)), lambda r, g: bwd(*r, g))
    if kind == "custom_vjp_method":
        method = custom_vjp_method(body)
        method.defvjp(lambda self, x: (body(self, x), (self, x)), lambda r, g: bwd(*r, g))
    else:
        method = pytreekit.custom_gradient_method(
            lambda self, x: (body(self, x), lambda g: bwd(self, x, g))
        )
    model = _Outer(_Inner(jnp.asarray(3.0)), jnp.asarray(2.0))
    x = {"p": {"u": jnp.asarray(1.0)}, "q": jnp.asarray(5.0)}
    for transform in (jax.grad, lambda f, **k: jax.jit(jax.grad(f, **k))):
        mine = transform(lambda m, x: method(m, x), argnums=(0, 1))(model, x)
        theirs = transform(reference, argnums=(0, 1))(model, x)
        assert jax.tree_util.tree_structure(mine) == jax.tree_util.tree_structure(theirs)
        for a, b in zip(
            jax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(theirs), strict=True
        ):
            np.testing.assert_allclose(a, b)


def test_a_leaf_given_for_a_sub_tree_is_still_refused():
    @pytree_class
    class N:
        b: jax.Array

        @custom_vjp_method
        def f(self, x):
            return self.b * x["q"]

    N.f.defvjp(lambda self, x: (self.f(x), None), lambda r, g: (None, {"p": g, "q": None}))
    x = {"p": {"u": jnp.asarray(1.0)}, "q": jnp.asarray(5.0)}
    with pytest.raises(TypeError, match=r"N\.f: the bwd rule .* for 'x' that does not have"):
        jax.grad(lambda x: N(jnp.asarray(2.0)).f(x))(x)


class _Holder:
    """Not a pytree: JAX cannot see the arrays it holds."""

    def __init__(self, w, c):
        self.w, self.c = w, c

    def backward(self, g):
        return g * self.w * self.c


RESIDUAL_KINDS = {
    "closure": lambda w, c: lambda g: g * w * c,
    "partial": lambda w, c: functools.partial(lambda w, c, g: g * w * c, w, c),
    "bound method": lambda w, c: _Holder(w, c).backward,
    "object in a list": lambda w, c: [_Holder(w, c)],
}


def _closure_residual_model(kind):
    @pytree_class
    class M:
        w: jax.Array

        @custom_vjp_method
        def f(self, x):
            return jnp.sum(self.w * jnp.sin(x))

    def fwd(self, x):
        return self.f(x), ("label", RESIDUAL_KINDS[kind](self.w, jnp.cos(x)))

    def bwd(residuals, g):
        label, backward = residuals
        assert label == "label"
        backward = backward[0].backward if isinstance(backward, list) else backward
        return None, backward(g)

    M.f.defvjp(fwd, bwd)
    return M(jnp.asarray(2.0))


RESIDUAL_TRANSFORMS = {
    "grad": lambda f: jax.grad(f),
    "jit(grad)": lambda f: jax.jit(jax.grad(f)),
    "grad(jit)": lambda f: jax.grad(jax.jit(f)),
    "grad(scan)": lambda f: jax.grad(
        lambda x: lax.scan(lambda c, _: (c + f(x), None), 0.0, None, 3)[0] / 3
    ),
    "grad(cond)": lambda f: jax.grad(lambda x: lax.cond(x[0] < 10.0, f, jnp.sum, x)),
    "grad(checkpoint)": lambda f: jax.grad(jax.checkpoint(f)),
    "vmap(grad)": lambda f: lambda x: jax.vmap(jax.grad(f))(jnp.stack([x, x]))[0],
}


@pytest.mark.parametrize("kind", RESIDUAL_KINDS)
@pytest.mark.parametrize("transform", RESIDUAL_TRANSFORMS)
def test_arrays_inside_non_pytree_residuals_survive_transformations(kind, transform):
    model = _closure_residual_model(kind)
    x = jnp.asarray([0.1, 0.5])
    got = RESIDUAL_TRANSFORMS[transform](lambda x: model.f(x))(x)
    np.testing.assert_allclose(got, 2.0 * jnp.cos(x), rtol=1e-6)


def test_arrays_inside_non_pytree_residuals_do_not_leak():
    model = _closure_residual_model("closure")
    with jax.checking_leaks():
        jax.grad(jax.jit(lambda x: model.f(x)))(jnp.asarray([0.1, 0.5]))


def test_holds_tracer_looks_into_what_jax_does_not_flatten():
    from pytreekit._derivatives.custom_vjp import holds_tracer

    def late():
        return later

    found = []

    @jax.jit
    def traced(x):
        nested = x
        for _ in range(20):  # deeper than holds_tracer looks
            nested = [nested]
        found.extend(
            [
                holds_tracer(lambda: x),
                holds_tracer(_Holder(x, 1.0)),
                holds_tracer({"a": (x,)}),
                holds_tracer(nested),
                holds_tracer(late),
                holds_tracer(np.ones(2)),
                holds_tracer(functools.partial(print, _Inner(x))),  # a pytree in a partial
                holds_tracer(object()),  # no attributes
            ]
        )
        return x

    traced(1.0)
    assert found == [True, True, True, False, False, False, True, False]
    later = None
    assert later is None
