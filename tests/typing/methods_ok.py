"""Method decorators keep the method's signature; typed JVP/VJP rules; the in-class rule form."""

from typing import Any, assert_type

import jax

from pytreekit import (
    CustomJVPMethod,
    CustomVJPMethod,
    custom_gradient_method,
    custom_jvp_method,
    custom_vjp_method,
    pytree_class,
)

w = jax.random.normal(jax.random.key(0), (2,))


@pytree_class
class Scaled:
    w: jax.Array
    scale: float = 2.0

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x / self.scale

    @custom_vjp_method(nondiff_self=True)
    def apply(self, x: jax.Array, n: int) -> jax.Array:
        return self.w * x**n


# A rule after the class body may annotate primals and tangents as precisely as it likes; its
# result must be the pair (primal_out, tangent_out), primal_out of the method's return type.
@Scaled.__call__.defjvp
def _scaled_jvp(
    primals: tuple[Scaled, jax.Array], tangents: tuple[Scaled, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (s, x), (_, dx) = primals, tangents
    return s(x), s.w * dx / s.scale


def _apply_fwd(self: Scaled, x: jax.Array, n: int) -> tuple[jax.Array, tuple[jax.Array, int]]:
    return self.apply(x, n), (x, n)


def _apply_bwd(residuals: tuple[jax.Array, int], g: jax.Array) -> tuple[None, jax.Array, None]:
    x, n = residuals
    return None, g * n * x ** (n - 1), None


Scaled.apply.defvjp(_apply_fwd, _apply_bwd)  # residuals: fwd's type must be bwd's parameter's

s = Scaled(w)
assert_type(s(w), jax.Array)
assert_type(s.apply(w, 3), jax.Array)
assert_type(Scaled.__call__(s, w), jax.Array)
call: CustomJVPMethod[Scaled, [jax.Array], jax.Array] = Scaled.__call__
apply: CustomVJPMethod[Scaled, [jax.Array, int], jax.Array] = Scaled.apply
assert_type(_scaled_jvp((s, w), (s, w)), tuple[jax.Array, jax.Array])  # a rule stays callable


@pytree_class
class InClass:
    w: jax.Array

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x

    # Inside the class body a rule has no self: @staticmethod says so to every checker.
    @__call__.defjvp
    @staticmethod
    def _rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[jax.Array, Any]:
        (self, x), (d_self, dx) = primals, tangents
        return self(x), self.w * dx + (0 if d_self is None else d_self.w * x)


@pytree_class
class LogSumExp:
    scale: float

    @custom_gradient_method
    def __call__(self, x: jax.Array) -> tuple[jax.Array, Any]:
        out = jax.nn.logsumexp(self.scale * x)

        def vjp(g: jax.Array) -> tuple[None, jax.Array]:
            return None, g * self.scale * jax.nn.softmax(self.scale * x)

        return out, vjp


assert_type(InClass(w)(w), jax.Array)
assert_type(LogSumExp(1.0)(w), jax.Array)
assert bool((InClass(w)(w) == w * w).all())
assert s.apply(w, 3).shape == (2,)
