"""Wrong calls of decorated methods, and rules of the wrong shape."""

from typing import Any

import jax

from pytreekit import custom_jvp_method, custom_vjp_method, pytree_class


@pytree_class
class Scaled:
    w: jax.Array

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x

    @custom_vjp_method
    def apply(self, x: jax.Array, n: int) -> jax.Array:
        return self.w * x**n


w = jax.random.normal(jax.random.key(0), (2,))
s = Scaled(w)
s("not an array")  # E: mypy[arg-type] pyright[reportArgumentType]
s.apply(w, "three")  # E: mypy[arg-type] pyright[reportArgumentType]
wrong: str = s(w)  # E: mypy[assignment] pyright[reportAssignmentType]
s.apply(w)  # E: mypy[call-arg] pyright[reportCallIssue]


# A JVP rule returns the pair (primal_out, tangent_out), primal_out of the method's type.
@Scaled.__call__.defjvp  # E: mypy[arg-type] pyright[reportArgumentType]
def _not_a_pair(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> jax.Array:
    return w


@Scaled.__call__.defjvp  # E: mypy[arg-type] pyright[reportArgumentType]
def _wrong_primal_out(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[str, Any]:
    return "", None


def fwd(self: Scaled, x: jax.Array, n: int) -> tuple[jax.Array, tuple[jax.Array, int]]:
    return self.apply(x, n), (x, n)


def bwd(residuals: tuple[jax.Array, int], g: jax.Array) -> tuple[None, jax.Array, None]:
    return None, g, None


def fwd_missing_n(self: Scaled, x: jax.Array) -> tuple[jax.Array, int]:
    return x, 1


def bwd_other_residuals(residuals: str, g: jax.Array) -> None:
    return None


def fwd_not_a_pair(self: Scaled, x: jax.Array, n: int) -> jax.Array:
    return x


Scaled.apply.defvjp(fwd_missing_n, bwd)  # E: mypy[arg-type] pyright[reportArgumentType]
Scaled.apply.defvjp(fwd, bwd_other_residuals)  # E: mypy[misc] pyright[reportArgumentType]
Scaled.apply.defvjp(fwd_not_a_pair, bwd)  # E: mypy[arg-type] pyright[reportArgumentType]


@pytree_class
class InClass:
    w: jax.Array

    @custom_jvp_method
    def __call__(self, x: jax.Array) -> jax.Array:
        return self.w * x

    # Without @staticmethod, a rule in the class body is a method whose self is named primals.
    # fmt: off
    @__call__.defjvp
    def _rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[jax.Array, Any]:  # E: mypy[misc] pyright[reportGeneralTypeIssues]
        return primals[0](primals[1]), tangents[1]
    # fmt: on
