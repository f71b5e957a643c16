"""``custom_vjp_method``: a custom VJP (forward and backward rule) on a method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, overload

import jax

from ._filters import is_array, is_inexact_array
from ._method import CustomMethod, P, R, S
from ._split import Split, leaves_per_argument, split


class CustomVJPMethod(CustomMethod[S, P, R]):
    """A method with custom forward and backward rules; see ``custom_vjp_method``."""

    kind = "custom_vjp_method"

    def __init__(self, fn: Callable[Concatenate[S, P], R], *, nondiff_self: bool = False) -> None:
        super().__init__(fn, nondiff_self=nondiff_self)
        self.fwd: Callable[..., tuple[Any, Any]] | None = None
        self.bwd: Callable[[Any, Any], Any] | None = None
        # Any: JAX's ParamSpec typing of custom_vjp cannot express the opaque first argument.
        self._custom: Any = jax.custom_vjp(self._primal, nondiff_argnums=(0,))
        self._custom.defvjp(self._fwd, self._bwd)

    def defvjp(self, fwd: Callable[..., tuple[Any, Any]], bwd: Callable[[Any, Any], Any]) -> None:
        """Register ``fwd(self, *args) -> (out, residuals)`` and
        ``bwd(residuals, g) -> (self_cotangent, *arg_cotangents)``.

        Residuals may hold anything (arrays are saved, everything else is kept aside). A
        cotangent of ``None`` means zero, for ``self`` or any argument; non-array arguments need
        none (``None``). For ``self`` a cotangent is most easily ``pytreekit.replace(self, ...)``.
        """
        self.fwd = fwd
        self.bwd = bwd

    def _call(self, arguments: tuple[Any, ...]) -> R:
        dynamic, arguments_split = self._split_arguments(arguments)
        result: R = self._custom(arguments_split, *dynamic)
        return result

    def _primal(self, arguments_split: Split, *dynamic: Any) -> Any:
        function: Callable[..., Any] = self.fn  # rebuilt arguments are untyped
        return function(*arguments_split.rebuild(dynamic))

    def _fwd(self, arguments_split: Split, *dynamic: Any) -> tuple[Any, tuple[Any, ...]]:
        if self.fwd is None or self.bwd is None:
            raise TypeError(
                f"{self.name} is a custom_vjp_method without rules, and something asked for its "
                f"derivative. Define them with {self.name}.defvjp(fwd, bwd)."
            )
        out, residuals = self.fwd(*arguments_split.rebuild(dynamic))
        saved, residuals_split = split(residuals, is_array)
        arguments_split.residuals = residuals_split
        return out, tuple(saved)

    def _bwd(
        self, arguments_split: Split, saved: tuple[Any, ...], cotangent_out: Any
    ) -> tuple[Any, ...]:
        assert self.bwd is not None and arguments_split.residuals is not None
        residuals = arguments_split.residuals.rebuild(saved)
        cotangents = self.bwd(residuals, cotangent_out)
        return self._dynamic_cotangents(arguments_split, cotangents)

    def _dynamic_cotangents(self, arguments_split: Split, cotangents: Any) -> tuple[Any, ...]:
        """Lay the user's per-argument cotangents out as JAX wants them: one per array leaf."""
        argument_ranges = leaves_per_argument(arguments_split)
        names = self._argument_names(len(argument_ranges))
        if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(argument_ranges):
            got = (
                f"{len(cotangents)} values"
                if isinstance(cotangents, (tuple, list))
                else (f"a {type(cotangents).__name__}")
            )
            raise TypeError(
                f"{self.name}: the bwd rule must return a tuple of {len(argument_ranges)} "
                f"cotangents, one for each of ({', '.join(names)}), with None for zero; it "
                f"returned {got}."
            )
        children = arguments_split.treedef.children()
        by_position: dict[int, Any] = {}
        for index, (name, cotangent, leaf_range, child) in enumerate(
            zip(names, cotangents, argument_ranges, children, strict=True)
        ):
            if cotangent is None or (index == 0 and self.nondiff_self):
                continue
            try:
                leaves = child.flatten_up_to(cotangent)
            except (ValueError, TypeError):
                raise TypeError(
                    f"{self.name}: the bwd rule's cotangent for {name!r} does not have the "
                    f"structure of {name!r}: expected {child}, got "
                    f"{jax.tree_util.tree_structure(cotangent)}. Return None for a zero "
                    f"cotangent, or a value shaped like the argument "
                    f"(pytreekit.replace(self, ...) for self)."
                ) from None
            by_position.update(zip(leaf_range, leaves, strict=True))

        result = []
        for position in arguments_split.dynamic:
            primal = arguments_split.leaves[position]
            cotangent = by_position.get(position)
            if cotangent is not None and is_inexact_array(primal):
                if tuple(getattr(cotangent, "shape", ())) != tuple(primal.shape):
                    raise TypeError(
                        f"{self.name}: the bwd rule returned a cotangent of shape "
                        f"{tuple(getattr(cotangent, 'shape', ()))} for an argument leaf of "
                        f"shape {tuple(primal.shape)}; cotangents match their primal's shape."
                    )
                result.append(cotangent)
            else:
                result.append(None)  # zero, or an integer array (no cotangent)
        return tuple(result)

    def _argument_names(self, count: int) -> list[str]:
        names = list(self.parameter_names[:count])
        names += [f"argument {i}" for i in range(len(names), count)]  # through *args
        return names


@overload
def custom_vjp_method(fn: Callable[Concatenate[S, P], R], /) -> CustomVJPMethod[S, P, R]: ...
@overload
def custom_vjp_method(
    *, nondiff_self: bool = False
) -> Callable[[Callable[Concatenate[S, P], R]], CustomVJPMethod[S, P, R]]: ...
def custom_vjp_method(
    fn: Callable[Concatenate[S, P], R] | None = None, /, *, nondiff_self: bool = False
) -> (
    CustomVJPMethod[S, P, R] | Callable[[Callable[Concatenate[S, P], R]], CustomVJPMethod[S, P, R]]
):
    """Give a method (or function) custom forward and backward rules.

    >>> class Clipped:
    ...     @custom_vjp_method
    ...     def __call__(self, x):
    ...         return self.w * x
    >>> Clipped.__call__.defvjp(fwd, bwd)  # bwd(res, g) -> (self_cotangent, x_cotangent)
    """
    if fn is None:

        def decorate(f: Callable[Concatenate[S, P], R]) -> CustomVJPMethod[S, P, R]:
            return CustomVJPMethod(f, nondiff_self=nondiff_self)

        return decorate
    return CustomVJPMethod(fn, nondiff_self=nondiff_self)
