"""custom_jvp_method: descriptor behaviour, argument handling, transforms, errors."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _versions import JAXPR_NAMES_CUSTOM_JVP_FUNCTIONS
from quickstart import Model
from scaled_model_jvp import ScaledModel, loss, undecorated_loss

import pytreekit
from pytreekit import CustomJVPMethod, CustomVJPMethod, custom_jvp_method, pytree_class


@pytest.fixture
def scaled():
    return ScaledModel(Model(jax.random.PRNGKey(0), 3, 2), scale=4.0)


@pytest.fixture
def x():
    return jnp.array([0.5, -1.0, 2.0])


def _assert_tree_close(a, b, rtol=1e-5):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(u, v, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("transform", ["plain", "jit"])
def test_straight_through_rule_is_used(scaled, x, transform):
    grad = jax.grad(loss, argnums=(0, 1))
    if transform == "jit":
        grad = jax.jit(grad)
    grad_model, grad_x = grad(scaled, x)
    true_model, true_x = jax.grad(undecorated_loss, argnums=(0, 1))(scaled, x)
    np.testing.assert_allclose(grad_x, 4.0 * true_x, rtol=1e-5)
    _assert_tree_close(grad_model, true_model)
    np.testing.assert_allclose(scaled(x), scaled.model(x / 4.0))


def test_under_vmap(scaled):
    xs = jax.random.normal(jax.random.PRNGKey(1), (5, 3))
    grads = jax.vmap(jax.grad(loss, argnums=1), in_axes=(None, 0))(scaled, xs)
    true = jax.vmap(jax.grad(undecorated_loss, argnums=1), in_axes=(None, 0))(scaled, xs)
    np.testing.assert_allclose(grads, 4.0 * true, rtol=1e-5)


def test_under_jvp_and_linearize(scaled, x):
    dx = jnp.array([1.0, 0.0, -1.0])
    _, tangent = jax.jvp(lambda x: scaled(x), (x,), (dx,))
    _, true = jax.jvp(lambda x: scaled.model(x / 4.0), (x,), (dx,))
    np.testing.assert_allclose(tangent, 4.0 * true, rtol=1e-5)
    _, f_jvp = jax.linearize(lambda x: scaled(x), x)
    np.testing.assert_allclose(f_jvp(dx), tangent, rtol=1e-5)


def test_self_closed_over_or_passed_in_checkpoint_and_scan(scaled, x):
    closed = jax.grad(lambda x: jnp.sum(scaled(x)))(x)
    passed = jax.grad(lambda s, x: jnp.sum(s(x)), argnums=1)(scaled, x)
    checkpointed = jax.grad(jax.checkpoint(lambda s, x: jnp.sum(s(x))), argnums=1)(scaled, x)
    np.testing.assert_allclose(closed, passed)
    # Rematerialisation may reorder float32 sums (JAX 0.5 does): equal up to rounding.
    np.testing.assert_allclose(checkpointed, passed, rtol=1e-6)

    def body(carry, _):
        return carry + jnp.sum(scaled(x)), None

    def scanned(x):
        return jax.lax.scan(lambda c, _: (c + jnp.sum(scaled(x)), None), 0.0, None, length=3)[0]

    np.testing.assert_allclose(jax.grad(scanned)(x), 3 * passed, rtol=1e-5)


@pytree_class
class Cube:
    """f(x) = c * x**3 with a hand-written rule, so grad-of-grad can be checked by hand."""

    c: jax.Array

    @custom_jvp_method
    def __call__(self, x):
        return self.c * x**3


@Cube.__call__.defjvp  # defined after the class body
def _cube_jvp(primals, tangents):
    (self, x), (d_self, dx) = primals, tangents
    return self(x), d_self.c * x**3 + 3 * self.c * x**2 * dx


def test_rule_after_class_and_grad_of_grad():
    cube = Cube(jnp.array(2.0))
    assert float(jax.grad(cube)(1.5)) == pytest.approx(3 * 2.0 * 1.5**2)
    assert float(jax.grad(jax.grad(cube))(1.5)) == pytest.approx(6 * 2.0 * 1.5)
    assert float(jax.grad(lambda c, x: c(x))(cube, jnp.array(1.5)).c) == pytest.approx(1.5**3)


def test_descriptor_binding(scaled, x):
    assert isinstance(ScaledModel.__call__, CustomJVPMethod)
    np.testing.assert_allclose(ScaledModel.__call__(scaled, x), scaled(x))
    np.testing.assert_allclose(scaled.__call__(x), scaled(x))
    assert Cube.__call__.__name__ == "__call__"


@pytree_class
class WithExtras:
    w: jax.Array
    seen: list = None  # type: ignore[assignment]

    @custom_jvp_method
    def apply(self, x, power, label, fn, index):
        return fn(self.w * x) ** power + index

    @apply.defjvp
    def _apply_jvp(primals, tangents):
        (self, x, power, label, fn, index) = primals
        WithExtras.calls.append((power, label, fn, index, tangents[2:]))
        (d_self, dx) = tangents[:2]
        inner = self.w * x
        d_inner = d_self.w * x + self.w * dx
        out = fn(inner) ** power + index
        return out, power * fn(inner) ** (power - 1) * d_inner  # fn is identity here


WithExtras.calls = []


def test_non_array_arguments_pass_through_with_none_tangents():
    WithExtras.calls.clear()
    obj = WithExtras(jnp.array(3.0))

    def f(obj, x):
        return obj.apply(x, 2, "label", lambda v: v, jnp.array(1))

    grads = jax.jit(jax.grad(f, argnums=(0, 1)))(obj, jnp.array(2.0))
    assert float(grads[1]) == pytest.approx(2 * 6.0 * 3.0)
    assert float(grads[0].w) == pytest.approx(2 * 6.0 * 2.0)
    power, label, fn, index, rest = WithExtras.calls[-1]
    assert (power, label) == (2, "label") and callable(fn)
    assert jnp.issubdtype(index.dtype, jnp.integer)  # an integer array: a primal, no tangent
    assert rest == (None, None, None, None)  # int, str, callable, integer array


def test_keyword_arguments_are_moved_to_positions():
    @pytree_class
    class Kw:
        w: jax.Array

        @custom_jvp_method
        def f(self, x, scale=2.0):
            return self.w * x * scale

        @f.defjvp
        def _f_jvp(primals, tangents):
            (self, x, scale), (_, dx, _) = primals, tangents
            Kw.seen = (len(primals), scale)
            return self.f(x, scale), self.w * dx * scale

    kw = Kw(jnp.array(1.5))
    assert float(jax.grad(lambda x: kw.f(x=x, scale=3.0))(1.0)) == pytest.approx(4.5)
    assert Kw.seen == (3, 3.0)
    assert float(jax.grad(lambda x: kw.f(x))(1.0)) == pytest.approx(3.0)
    with pytest.raises(TypeError, match=r"Kw.f\(\): .*unexpected keyword argument 'scal'"):
        kw.f(1.0, scal=2)
    # Every parameter given by position and one again by keyword: still refused.
    with pytest.raises(
        TypeError, match=r"<locals>\.Kw.f\(\): multiple values for argument 'scale'$"
    ):
        kw.f(1.0, 3.0, scale=2.0)
    with pytest.raises(
        TypeError, match=r"<locals>\.Kw.f\(\): got an unexpected keyword argument 'y'$"
    ):
        kw.f(1.0, 3.0, y=2.0)


def test_keyword_only_parameters_are_refused_at_decoration():
    with pytest.raises(
        TypeError, match=r"custom_jvp_method .*g: parameter 'scale' is keyword-only"
    ):

        @custom_jvp_method
        def g(self, x, *, scale):
            return x

    with pytest.raises(TypeError, match=r"parameter 'options' collects keyword arguments"):

        @custom_jvp_method
        def h(self, x, **options):
            return x


def test_nondiff_self_holds_self_fixed():
    @pytree_class
    class Held:
        w: jax.Array

        @custom_jvp_method(nondiff_self=True)
        def __call__(self, x):
            return self.w * x

        @__call__.defjvp
        def _held_jvp(primals, tangents):
            (self, x), (d_self, dx) = primals, tangents
            assert d_self is None
            return self(x), self.w * dx

    held = Held(jnp.array(3.0))
    grads = jax.grad(lambda h, x: h(x), argnums=(0, 1))(held, 2.0)
    assert float(grads[0].w) == 0.0 and float(grads[1]) == 3.0


def test_no_rule_error_says_to_call_defjvp():
    @pytree_class
    class NoRule:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return self.w * x

    obj = NoRule(jnp.array(2.0))
    assert float(obj.f(3.0)) == 6.0  # evaluating needs no rule
    with pytest.raises(
        TypeError, match=r"NoRule.f is a custom_jvp_method without a JVP rule.*defjvp"
    ):
        jax.grad(obj.f)(3.0)


def test_mismatched_tangent_output_names_method_and_key_path():
    @pytree_class
    class Bad:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return {"a": self.w * x, "b": x}

        @f.defjvp
        def _bad_jvp(primals, tangents):
            (self, x), (_, dx) = primals, tangents
            return self.f(x), {"a": dx, "b": jnp.zeros(3)}

        @custom_jvp_method
        def g(self, x):
            return (x, x)

        @g.defjvp
        def _g_jvp(primals, tangents):
            (_, x), (_, dx) = primals, tangents
            return (x, x), (dx,)

    bad = Bad(jnp.array(1.0))
    with pytest.raises(TypeError, match=r"Bad.f: .*output\['b'\] has a tangent of shape \(3,\)"):
        jax.jvp(lambda x: bad.f(x), (jnp.array(1.0),), (jnp.array(1.0),))
    message = (
        r"Bad.g: the JVP rule .*_g_jvp returned a tangent whose structure does not match the "
        r"primal output: expected PyTreeDef\(\(\*, \*\)\), got PyTreeDef\(\(\*,\)\)"
    )
    with pytest.raises(TypeError, match=message):
        jax.jvp(lambda x: bad.g(x), (jnp.array(1.0),), (jnp.array(1.0),))


def test_tangent_structure_mismatch_shows_none_as_a_leaf():
    @pytree_class
    class Bad:
        w: jax.Array

        @custom_jvp_method
        def g(self, x):
            return (x, x)

        @g.defjvp
        def _g_jvp(primals, tangents):
            (_, x), (_, dx) = primals, tangents
            return (x, x), (dx, None, dx)  # None is a zero tangent, so a leaf of the structure

    message = (
        r"expected PyTreeDef\(\(\*, \*\)\), got PyTreeDef\(\(\*, \*, \*\)\)\. The tangent must"
    )
    with pytest.raises(TypeError, match=message):
        jax.jvp(Bad(jnp.array(1.0)).g, (jnp.array(1.0),), (jnp.array(1.0),))


def test_none_in_tangent_output_means_zero():
    @pytree_class
    class Partial:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return self.w * x, jnp.argsort(x)  # an integer output of shape (3,)

        @f.defjvp
        def _partial_jvp(primals, tangents):
            (self, x), (_, dx) = primals, tangents
            return self.f(x), (self.w * dx, None)

    p = Partial(jnp.array(2.0))
    for transform in (lambda f: f, jax.jit):  # the integer output's zeros: eager, then traced
        _, (t, t_int) = transform(lambda x: jax.jvp(p.f, (x,), (jnp.ones(3),)))(jnp.ones(3))
        np.testing.assert_allclose(t, 2 * jnp.ones(3))
        assert t_int.dtype == jax.dtypes.float0 and t_int.shape == (3,)


@pytest.mark.parametrize(
    ("rule_result", "described"),
    [
        (lambda out, t: (out, t, t), r"a tuple of 3 values"),
        (lambda out, t: 1.5, r"a float"),
        (lambda out, t: t, r"a single array of shape \(\) \(only the tangent\?\)"),
    ],
    ids=["three-values", "a-python-float", "only-the-tangent"],
)
def test_rule_not_returning_a_pair_is_refused_as_jax_refuses_it(rule_result, described):
    @jax.custom_jvp
    def reference(x):
        return 2.0 * x

    reference.defjvp(lambda p, t: rule_result(2.0 * p[0], 2.0 * t[0]))

    @pytree_class
    class Doubler:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return self.w * x

        @f.defjvp
        def _f_jvp(primals, tangents):
            (self, x), (_, dx) = primals, tangents
            return rule_result(self.w * x, self.w * dx)

    with pytest.raises(TypeError):  # JAX refuses the same rule, with its own message
        jax.jvp(reference, (jnp.array(1.0),), (jnp.array(1.0),))
    doubler = Doubler(jnp.array(2.0))
    message = (
        rf"Doubler.f: the JVP rule .*_f_jvp must return a pair \(primal_out, tangent_out\), "
        rf"but it returned {described}\. Return both"
    )
    with pytest.raises(TypeError, match=message):
        jax.jvp(doubler.f, (jnp.array(1.0),), (jnp.array(1.0),))


def test_a_none_tangent_output_is_a_zero_tangent_of_every_output_leaf():
    @pytree_class
    class Frozen:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return {"a": self.w * x, "b": x}

        @f.defjvp
        def _f_jvp(primals, tangents):
            (self, x), _ = primals, tangents
            return self.f(x), None

    frozen = Frozen(jnp.array(2.0))
    out, tangent = jax.jvp(frozen.f, (jnp.array([1.0, 2.0]),), (jnp.array([1.0, 1.0]),))
    np.testing.assert_allclose(out["a"], [2.0, 4.0])
    for leaf in (tangent["a"], tangent["b"]):
        assert isinstance(leaf, jax.Array)
        np.testing.assert_array_equal(leaf, np.zeros(2, np.float32))
    assert float(jax.grad(lambda x: frozen.f(x)["a"].sum())(jnp.ones(2)).sum()) == 0.0


class _Scale:
    """A callable object (no __name__ or __qualname__) used as a method or a rule."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, model, x):
        return self.factor * model.w * x

    def __repr__(self):
        return f"_Scale({self.factor})"


class _KeywordOnly:
    def __call__(self, model, x, *, scale):
        return x

    def __repr__(self):
        return "_KeywordOnly()"


class _NotAPair:
    def __call__(self, primals, tangents):
        return tangents[1]

    def __repr__(self):
        return "_NotAPair()"


def test_a_callable_object_can_be_the_method_and_the_rule():
    @pytree_class
    class Scaled:
        w: jax.Array
        f = custom_jvp_method(_Scale(2.0))

    def rule(primals, tangents):
        (self, x), (_, dx) = primals, tangents
        return self.f(x), 10.0 * dx

    Scaled.f.defjvp(functools.partial(rule))
    scaled = Scaled(jnp.array(3.0))
    assert float(scaled.f(1.5)) == 9.0
    assert float(jax.grad(scaled.f)(1.5)) == 10.0


def test_messages_name_a_callable_object_by_its_repr():
    # Outside a class nothing renames the method: messages use the callable's own name.
    with pytest.raises(
        TypeError,
        match=r"^custom_jvp_method _KeywordOnly\(\): parameter 'scale' is keyword-only;",
    ):
        custom_jvp_method(_KeywordOnly())

    def named(self, x, *, scale):
        return x

    with pytest.raises(
        TypeError,
        match=r"^custom_jvp_method test_messages_name_a_callable_object_by_its_repr\.<locals>"
        r"\.named: parameter 'scale' is keyword-only;",
    ):
        custom_jvp_method(named)

    @pytree_class
    class Doubler:
        w: jax.Array

        @custom_jvp_method
        def f(self, x):
            return self.w * x

    Doubler.f.defjvp(_NotAPair())
    message = (
        r"<locals>\.Doubler.f: the JVP rule _NotAPair\(\) must return a pair "
        r"\(primal_out, tangent_out\), but it returned a single array of shape \(\) "
        r"\(only the tangent\?\)\."
    )
    with pytest.raises(TypeError, match=message):
        jax.jvp(Doubler(jnp.array(2.0)).f, (jnp.array(1.0),), (jnp.array(1.0),))


def test_the_classes_made_directly_check_nondiff_self_under_their_decorators_name():
    def f(self, x):
        return x

    for cls, name in [
        (CustomJVPMethod, "custom_jvp_method"),
        (CustomVJPMethod, "custom_vjp_method"),
    ]:
        with pytest.raises(
            TypeError, match=rf"^{name}\(nondiff_self=\.\.\.\) takes True or False, got 'yes'\.$"
        ):
            cls(f, nondiff_self="yes")
        assert cls(f, nondiff_self=True).nondiff_self is True


def test_jaxprs_name_the_method_and_the_rule_and_defjvp_returns_the_rule():
    @pytree_class
    class Named:
        w: jax.Array

        @custom_jvp_method
        def scaled_by_w(self, x):
            return self.w * x

    def my_named_rule(primals, tangents):
        (self, x), (_, dx) = primals, tangents
        return self.scaled_by_w(x), self.w * dx

    assert Named.scaled_by_w.defjvp(my_named_rule) is my_named_rule  # so it can decorate
    named = Named(jnp.array(2.0))
    if JAXPR_NAMES_CUSTOM_JVP_FUNCTIONS:  # as JAX names a plain custom_jvp function
        assert "name=scaled_by_w" in str(jax.make_jaxpr(named.scaled_by_w)(1.0))
    jvp_jaxpr = str(jax.make_jaxpr(lambda x: jax.jvp(named.scaled_by_w, (x,), (x,)))(1.0))
    if JAXPR_NAMES_CUSTOM_JVP_FUNCTIONS:
        assert "my_named_rule" in jvp_jaxpr


# -- a tangent JAX would refuse: refused where jax.custom_jvp refuses it, naming what to fix ------

_OUTPUTS = {  # what the method returns, from its static float k and its argument x
    "python float": lambda k, x: k * 2.0,
    "float32 array": lambda k, x: k * x,
    "int32 array": lambda k, x: jnp.asarray([3, 4]),
}
_TANGENTS = {
    "python float": lambda: 1.0,
    "python int": lambda: 1,
    "float32 scalar": lambda: jnp.float32(1.0),
    "float16 scalar": lambda: jnp.float16(1.0),
    "int32 scalar": lambda: jnp.int32(1),
    "float32[2]": lambda: jnp.ones(2),
    "numpy float64[2]": lambda: np.ones(2),  # JAX types it float32 (x64 disabled)
    "float0[2]": lambda: np.zeros(2, jax.dtypes.float0),
    "a list": lambda: [1.0, 1.0],
    "a string": lambda: "one",
}


def _jvp_or_error(function, x):
    try:
        primal, tangent = jax.jvp(function, (x,), (jnp.ones(2),))
    except TypeError as error:
        return error
    return primal, tangent


@pytest.mark.parametrize("output", _OUTPUTS)
@pytest.mark.parametrize("tangent", _TANGENTS)
def test_a_tangent_is_refused_where_jax_custom_jvp_refuses_it_naming_method_rule_and_output(
    output, tangent
):
    body, make_tangent = _OUTPUTS[output], _TANGENTS[tangent]

    @pytree_class
    class Fixed:
        k: float = pytreekit.field(static=True)

        @custom_jvp_method
        def f(self, x):
            return {"out": body(self.k, x)}

    @Fixed.f.defjvp
    def given_tangent(primals, tangents):
        self, x = primals
        return self.f(x), {"out": make_tangent()}

    @jax.custom_jvp
    def reference(x):
        return {"out": body(1.5, x)}

    @reference.defjvp
    def _reference_rule(primals, tangents):
        return reference(*primals), {"out": make_tangent()}

    x = jnp.asarray([1.0, 2.0])
    ours = _jvp_or_error(lambda x: Fixed(1.5).f(x), x)
    theirs = _jvp_or_error(reference, x)
    assert isinstance(ours, TypeError) == isinstance(theirs, TypeError), (ours, theirs)
    if isinstance(ours, TypeError):
        # pytreekit's own message: the class and method, the rule, the output's key path
        assert re.search(r"Fixed\.f: the JVP rule .*given_tangent.*output\['out'\]", str(ours))
        return
    for a, b in zip(
        jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), strict=True
    ):
        assert jnp.result_type(a) == jnp.result_type(b)
        np.testing.assert_array_equal(a, b)


def test_a_wrong_tangent_for_a_python_float_output_names_shapes_and_dtypes():
    @pytree_class
    class Const:
        k: float = pytreekit.field(static=True)

        @custom_jvp_method
        def __call__(self, x):
            return self.k * 2.0

    @Const.__call__.defjvp
    def int_tangent(primals, tangents):
        self, x = primals
        return self(x), jnp.int32(0)

    message = (
        r"Const\.__call__: the JVP rule .*int_tangent's tangent output .* dtype int32, but the "
        r"primal output there \(a Python float\) needs shape \(\) and dtype float32"
    )
    with pytest.raises(TypeError, match=message):
        jax.jvp(Const(1.5), (1.0,), (1.0,))
