"""Custom methods across subclasses, and the names JAX shows for custom rules."""

import abc
import warnings

import jax
import jax.numpy as jnp
import pytest
from _versions import needs_jaxpr_rule_names

from pytreekit import custom_jvp_method, custom_vjp_method, pytree_class


def _jvp_base(abstract: bool):
    @pytree_class
    class Base(abc.ABC):
        scale: jax.Array

        if abstract:

            @custom_jvp_method
            @abc.abstractmethod
            def f(self, x): ...

        else:

            @custom_jvp_method
            def f(self, x):
                return self.scale * jnp.sin(x)

        @f.defjvp
        def _f_jvp(primals, tangents):
            (self, x), (_, dx) = primals, tangents
            return self.f(x), 100.0 * dx  # recognisably not the true derivative

    return Base


def _vjp_base(abstract: bool):
    @pytree_class
    class Base(abc.ABC):
        scale: jax.Array

        if abstract:

            @custom_vjp_method
            @abc.abstractmethod
            def f(self, x): ...

        else:

            @custom_vjp_method
            def f(self, x):
                return self.scale * jnp.sin(x)

        def _fwd(self, x):
            return self.f(x), None

        def _bwd(residuals, g):
            return None, 100.0 * g

        f.defvjp(_fwd, _bwd)

    return Base


@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_an_implementation_of_an_abstract_custom_method_keeps_the_rule(make_base):
    Base = make_base(abstract=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Sub(Base):
            def f(self, x):
                return self.scale * x**2

    model = Sub(jnp.array(2.0))
    assert model.f(3.0) == 18.0  # the subclass's computation
    assert jax.grad(lambda x: model.f(x))(3.0) == 100.0  # under the base's rule
    assert jax.jit(jax.grad(lambda m, x: m.f(x), argnums=1))(model, 3.0) == 100.0
    with pytest.raises(TypeError, match="abstract"):
        Base(jnp.array(1.0))


def _give_rule(method, factor: float) -> None:
    """Give ``method`` (an abstract custom method) a rule multiplying the tangent by ``factor``."""
    if hasattr(method, "defjvp"):
        method.defjvp(lambda primals, tangents: (primals[0].f(primals[1]), factor * tangents[1]))
    else:
        method.defvjp(lambda self, x: (self.f(x), None), lambda residuals, g: (None, factor * g))


@pytest.mark.parametrize("decorator", [custom_jvp_method, custom_vjp_method])
def test_an_implementation_uses_the_abstract_method_s_rule_as_it_is_when_called(decorator):
    """The rule given after the subclass is defined (as the docs write rules, after the class
    body), and given again later, is the one an existing implementation uses: as for a
    subclass defined after it."""

    @pytree_class
    class Base(abc.ABC):
        scale: jax.Array

        @decorator
        @abc.abstractmethod
        def f(self, x): ...

    class Early(Base):
        def f(self, x):
            return self.scale * x**2

    _give_rule(Base.f, 7.0)

    class Late(Base):
        def f(self, x):
            return self.scale * x**2

    models = [Early(jnp.array(2.0)), Late(jnp.array(2.0))]
    assert [jax.grad(lambda x, m=m: m.f(x))(3.0) for m in models] == [7.0, 7.0]
    _give_rule(Base.f, 5.0)
    assert [jax.grad(lambda x, m=m: m.f(x))(3.0) for m in models] == [5.0, 5.0]


@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_a_plain_override_of_a_concrete_custom_method_is_plain_and_says_so(make_base):
    Base = make_base(abstract=False)
    with pytest.warns(UserWarning, match=r"Sub\.f overrides .*Base\.f.* no custom rule"):

        class Sub(Base):
            def f(self, x):
                return self.scale * x**2

    model = Sub(jnp.array(2.0))
    assert jax.grad(lambda x: model.f(x))(3.0) == 12.0  # JAX differentiates the override
    assert jax.grad(lambda x: Base.f(model, x))(3.0) == 100.0  # the base keeps its rule


def test_an_override_decorated_with_its_own_rule_is_not_warned_about():
    Base = _jvp_base(abstract=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @pytree_class
        class Sub(Base):
            @custom_jvp_method
            def f(self, x):
                return self.scale * x**2

            @f.defjvp
            def _f_jvp(primals, tangents):
                (self, x), (_, dx) = primals, tangents
                return self.f(x), 7.0 * dx

    assert jax.grad(lambda x: Sub(jnp.array(1.0)).f(x))(3.0) == 7.0


@needs_jaxpr_rule_names
def test_the_jaxpr_of_a_custom_vjp_method_names_the_users_rules():
    @pytree_class
    class Clip:
        bound: float = 1.0

        @custom_vjp_method
        def __call__(self, x):
            return x

        def clip_forward(self, x):
            return x, None

        def clip_backward(residuals, g):
            return None, jnp.clip(g, -1.0, 1.0)

        __call__.defvjp(clip_forward, clip_backward)

    text = str(jax.make_jaxpr(lambda x: Clip()(x))(2.0))
    assert "fwd=clip_forward" in text and "bwd=clip_backward" in text


def test_an_integer_tangent_for_a_float_output_names_the_method_and_the_rule():
    @pytree_class
    class Square:
        @custom_jvp_method
        def __call__(self, x):
            return 2.0

        @__call__.defjvp
        def square_jvp(primals, tangents):
            return 2.0, 1

    with pytest.raises(TypeError, match=r"Square\.__call__.*square_jvp.*int"):
        jax.jvp(lambda x: Square()(x), (1.0,), (1.0,))


def _jitted(fn):
    return jax.jit(fn)


def _filter_jitted(fn):
    eqx = pytest.importorskip("equinox")
    return eqx.filter_jit(fn)


WRAPPERS = {"jax.jit": _jitted, "equinox.filter_jit": _filter_jitted}


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_a_jitted_implementation_of_an_abstract_custom_method_keeps_the_rule(make_base, wrapper):
    Base = make_base(abstract=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Sub(Base):
            @WRAPPERS[wrapper]
            def f(self, x):
                return self.scale * x**2

    model = Sub(jnp.array(2.0))
    assert model.f(3.0) == 18.0
    assert jax.grad(lambda x: model.f(x))(3.0) == 100.0
    assert jax.jit(jax.grad(lambda m, x: m.f(x), argnums=1))(model, 3.0) == 100.0


@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_a_jitted_override_of_a_concrete_custom_method_says_it_has_no_rule(make_base):
    Base = make_base(abstract=False)
    with pytest.warns(UserWarning, match=r"Sub\.f overrides .*Base\.f.* with a PjitFunction.*"):

        class Sub(Base):
            @jax.jit
            def f(self, x):
                return self.scale * x**2

    assert jax.grad(lambda x: Sub(jnp.array(2.0)).f(x))(3.0) == 12.0


class _Unbound:
    """A callable object that does not bind: as a class attribute it is called without self."""

    def __call__(self, x):
        return 2.0 * x


@pytest.mark.parametrize("abstract", [True, False], ids=["abstract", "concrete"])
@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_an_override_that_is_no_method_says_it_has_no_rule(make_base, abstract):
    import functools

    Base = make_base(abstract=abstract)
    what = "partialmethod" if abstract else "_Unbound"
    advice = r"implement it with a plain method" if abstract else r"decorate the override"
    with pytest.warns(UserWarning, match=rf"Sub\.f overrides .*Base\.f.* with a {what}.*{advice}"):

        class Sub(Base):
            def _power(self, x, n):
                return self.scale * x**n

            f = functools.partialmethod(_power, n=2) if abstract else _Unbound()

    expected = 12.0 if abstract else 2.0  # the body, differentiated by JAX
    assert jax.grad(lambda x: Sub(jnp.array(2.0)).f(x))(3.0) == expected


class _LinearMixin:
    def f(self, x):
        return self.scale * x


@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_a_mixin_implementing_an_abstract_custom_method_keeps_the_rule(make_base):
    Base = make_base(abstract=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Sub(_LinearMixin, Base):
            pass

    model = Sub(jnp.array(2.0))
    assert model.f(3.0) == 6.0
    assert jax.grad(lambda x: model.f(x))(3.0) == 100.0


@pytest.mark.parametrize("make_base", [_jvp_base, _vjp_base], ids=["jvp", "vjp"])
def test_a_mixin_overriding_a_concrete_custom_method_says_so_once(make_base):
    Base = make_base(abstract=False)
    with pytest.warns(UserWarning) as caught:

        class Sub(_LinearMixin, Base):
            pass

    (warning,) = [w for w in caught if "overrides" in str(w.message)]
    assert "Sub.f (from _LinearMixin, before " in str(warning.message)
    assert jax.grad(lambda x: Sub(jnp.array(2.0)).f(x))(3.0) == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class SubSub(Sub):  # Sub was warned about; nothing new
            pass


class _Cyclic:
    """Binds like a function, but its __wrapped__ chain is a cycle: nothing to unwrap to."""

    def __init__(self):
        self.__wrapped__ = self

    def __get__(self, instance, owner=None):
        return self

    def __call__(self, x):
        return x


@pytest.mark.parametrize("wrapper", [staticmethod, classmethod, property])
def test_a_descriptor_in_an_abstract_custom_method_s_place_is_warned_about(wrapper):
    Base = _jvp_base(abstract=True)
    with pytest.warns(
        UserWarning, match=rf"Sub\.f overrides .*Base\.f.* with a {wrapper.__name__}"
    ):

        class Sub(Base):
            f = wrapper(lambda *args: 2.0)

    assert isinstance(vars(Sub)["f"], wrapper)


def test_an_override_whose_wrapped_chain_cycles_is_warned_about():
    Base = _jvp_base(abstract=True)
    with pytest.warns(UserWarning, match=r"Sub\.f overrides .*Base\.f.* with a _Cyclic"):

        class Sub(Base):
            f = _Cyclic()

    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class SubSub(Sub):  # overrides Sub.f, no custom method: nothing to say
            def f(self, x):
                return x

    assert SubSub(jnp.array(1.0)).f(2.0) == 2.0
