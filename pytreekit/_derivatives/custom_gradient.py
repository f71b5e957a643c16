"""``custom_gradient_method``: the method form of ``jax.custom_gradient``. As JAX's does, the
forward pass traces ``vjp_fn`` once per call, on the outputs' tangent types, and saves every
constant of that trace (what it closes over, integer, boolean and key arrays too) as a residual;
the backward pass evaluates the trace. Nothing outlives the call (``jax.closure_convert`` would
cache ``vjp_fn`` by hash, keeping each call's arrays alive and reusing an equal one's backward)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, overload

from .custom_vjp import CustomVJPMethod, TracedBackward
from .method import P, R, S, build_or_decorate, non_pair
from .split import Split


class CustomGradientMethod(CustomVJPMethod[S, P, R]):
    """What ``custom_gradient_method`` makes: a descriptor that binds like a method."""

    kind = "custom_gradient_method"

    def __init__(self, fn: Callable[Concatenate[S, P], Any], *, nondiff_self: bool = False) -> None:
        super().__init__(fn, nondiff_self=nondiff_self)
        # Any: the generic forward takes the flat arguments, not the method's own parameters.
        fwd: Any = self._gradient_fwd
        super().defvjp(fwd, self._gradient_bwd)

    def defvjp(self, fwd: Any, bwd: Any) -> None:
        raise TypeError(
            f"{self.name} is a custom_gradient_method: the method itself returns "
            f"(out, vjp_fn), so it takes no defvjp. Use custom_vjp_method for separate fwd and "
            f"bwd rules."
        )

    def _bwd_rule(self) -> str:
        return "its vjp_fn"

    def _primal(self, arguments_split: Split, dynamic: list[Any]) -> Any:
        return self._out_and_vjp(arguments_split.rebuild(dynamic))[0]

    def _out_and_vjp(self, arguments: Any) -> tuple[Any, Callable[[Any], Any]]:
        function: Callable[..., Any] = self.fn
        result = function(*arguments)
        got = non_pair(result) or (
            None if callable(result[1]) else "a pair whose second item is not callable"
        )
        if got is not None:
            raise TypeError(
                f"{self.name}: a custom_gradient_method returns a pair (out, vjp_fn), with "
                f"vjp_fn(g) giving the cotangents of (self, *args); it returned {got}."
            )
        out, vjp_fn = result
        return out, vjp_fn

    def _gradient_fwd(self, *arguments: Any) -> tuple[Any, Any]:
        out, vjp_fn = self._out_and_vjp(arguments)
        return out, TracedBackward.trace(vjp_fn, out)

    @staticmethod
    def _gradient_bwd(residuals: Any, g: Any) -> Any:  # pragma: no cover - _bwd calls residuals
        return residuals(g)


@overload
def custom_gradient_method(
    fn: Callable[Concatenate[S, P], tuple[R, Callable[[Any], Any]]], /
) -> CustomGradientMethod[S, P, R]: ...
@overload
def custom_gradient_method(
    *, nondiff_self: bool = False
) -> Callable[
    [Callable[Concatenate[S, P], tuple[R, Callable[[Any], Any]]]], CustomGradientMethod[S, P, R]
]: ...
def custom_gradient_method(
    fn: Callable[Concatenate[S, P], tuple[R, Callable[[Any], Any]]] | None = None,
    /,
    *,
    nondiff_self: bool = False,
) -> Any:
    """The method form of ``jax.custom_gradient``: the method returns ``(out, vjp_fn)``.

    Returns a ``CustomGradientMethod``. ``vjp_fn(g)`` returns one cotangent per parameter,
    ``self`` first, ``None`` meaning zero. Calling the method gives ``out`` alone; the arrays
    ``vjp_fn`` closes over are what the backward pass keeps. Reverse mode only, as JAX's.

    Args:
        fn: The method, returning ``(out, vjp_fn)``; its first parameter is the instance.
            Without it, ``custom_gradient_method(nondiff_self=...)`` is a decorator.
        nondiff_self: No cotangent flows to ``self`` (what ``vjp_fn`` returns for it is dropped).

    >>> import jax, jax.numpy as jnp
    >>> from pytreekit import custom_gradient_method, pytree_class
    >>> @pytree_class
    ... class LogSumExp:
    ...     def __init__(self, scale):
    ...         self.scale = scale
    ...     @custom_gradient_method
    ...     def __call__(self, x):
    ...         out = jax.nn.logsumexp(self.scale * x)
    ...         def vjp(g):  # softmax, stable where exp(x) overflows
    ...             p = jax.nn.softmax(self.scale * x)
    ...             return None, g * self.scale * p
    ...         return out, vjp
    >>> jax.grad(LogSumExp(1.0))(jnp.asarray([1000.0, 1000.0]))
    Array([0.5, 0.5], dtype=float32)
    """
    return build_or_decorate(CustomGradientMethod, fn, nondiff_self)
