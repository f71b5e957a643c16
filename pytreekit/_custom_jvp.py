"""``custom_jvp_method``: a custom JVP rule on a method, with ``self`` as a pytree primal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, TypeVar, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr, tree_flatten_with_path

from ._method import CustomMethod, P, R, S, build_or_decorate
from ._split import Split

JVPRule = TypeVar("JVPRule", bound=Callable[..., Any])


class CustomJVPMethod(CustomMethod[S, P, R]):
    """A method with a custom JVP rule; see ``custom_jvp_method``."""

    kind = "custom_jvp_method"

    def __init__(self, fn: Callable[Concatenate[S, P], R], *, nondiff_self: bool = False) -> None:
        super().__init__(fn, nondiff_self=nondiff_self)
        self.rule: Callable[..., Any] | None = None
        self._custom = jax.custom_jvp(self._primal, nondiff_argnums=(0,))
        self._custom.defjvp(self._jvp)

    def defjvp(self, rule: JVPRule) -> JVPRule:
        """Register ``rule(primals, tangents) -> (primal_out, tangent_out)``.

        ``primals`` is ``(self, *args)``; ``tangents`` has the same structure, with ``None`` for
        everything that is not a floating-point array. Returns ``rule``, so it can decorate.
        """
        self.rule = rule
        return rule

    def _jvp(
        self, arguments_split: Split, primals: tuple[Any, ...], tangents: tuple[Any, ...]
    ) -> tuple[Any, Any]:
        if self.rule is None:
            raise TypeError(
                f"{self.name} is a custom_jvp_method without a JVP rule, and something asked "
                f"for its derivative. Define one with @{self.name}.defjvp."
            )
        # JAX hands non-differentiable primals (integer arrays) float0 tangents; inside a rule a
        # known Python scalar may arrive as a dtype-carrying literal, so judge by the tangent.
        tangent_at = {
            position: tangent
            for position, tangent in zip(arguments_split.dynamic, tangents, strict=True)
            if _has_dtype(tangent, inexact=True)
        }
        tangent_arguments = arguments_split.rebuild_sparse(tangent_at)
        if self.nondiff_self:
            tangent_arguments = (None, *tangent_arguments[1:])
        out, tangent_out = self.rule(arguments_split.rebuild(primals), tangent_arguments)
        return out, _matching_tangent(self.name, out, tangent_out)


def _matching_tangent(name: str, out: Any, tangent_out: Any) -> Any:
    """``tangent_out`` checked against ``out`` leaf by leaf, ``None`` leaves made zeros."""
    primal_leaves, treedef = tree_flatten_with_path(out)
    tangent_leaves, _ = tree_flatten_with_path(tangent_out, is_leaf=lambda x: x is None)
    primal_paths = [path for path, _ in primal_leaves]
    tangent_paths = [path for path, _ in tangent_leaves]
    if primal_paths != tangent_paths:
        pairs = zip(primal_paths, tangent_paths, strict=False)
        first = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
        if first is None:  # one is a prefix of the other
            first = min(len(primal_paths), len(tangent_paths))
        if first < len(primal_paths):
            raise _mismatch(name, primal_paths[first], "has no tangent at the same key path")
        raise _mismatch(name, tangent_paths[first], "exists in the tangent but not the primal")
    filled = []
    for (path, primal), (_, tangent) in zip(primal_leaves, tangent_leaves, strict=True):
        if not _has_dtype(primal):
            filled.append(tangent)  # a Python value: JAX itself says what it wants
            continue
        expected_dtype = primal.dtype if _has_dtype(primal, inexact=True) else jax.dtypes.float0
        if tangent is None:
            tangent = np.zeros(np.shape(primal), expected_dtype)
        elif hasattr(tangent, "shape") and (
            tuple(tangent.shape) != tuple(primal.shape) or tangent.dtype != expected_dtype
        ):
            raise _mismatch(
                name,
                path,
                f"has a tangent of shape {tuple(tangent.shape)} and dtype {tangent.dtype}, "
                f"but the primal output there needs shape {tuple(primal.shape)} and dtype "
                f"{np.dtype(expected_dtype).name}",
            )
        filled.append(tangent)
    return jax.tree_util.tree_unflatten(treedef, filled)


def _has_dtype(x: Any, inexact: bool = False) -> bool:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return False
    return not inexact or bool(jnp.issubdtype(dtype, jnp.inexact))


def _mismatch(name: str, path: tuple[Any, ...], what: str) -> TypeError:
    where = f"output{keystr(path)}" if path else "the output"
    return TypeError(
        f"{name}: the JVP rule's tangent output does not match the primal output: {where} {what}. "
        f"The tangent must have the primal output's structure, shapes and dtypes (None is "
        f"read as zero)."
    )


@overload
def custom_jvp_method(fn: Callable[Concatenate[S, P], R], /) -> CustomJVPMethod[S, P, R]: ...
@overload
def custom_jvp_method(
    *, nondiff_self: bool = False
) -> Callable[[Callable[Concatenate[S, P], R]], CustomJVPMethod[S, P, R]]: ...
def custom_jvp_method(
    fn: Callable[Concatenate[S, P], R] | None = None, /, *, nondiff_self: bool = False
) -> (
    CustomJVPMethod[S, P, R] | Callable[[Callable[Concatenate[S, P], R]], CustomJVPMethod[S, P, R]]
):
    """Give a method (or function) a custom JVP rule; ``self`` is a differentiable primal.

    Arguments that are not floating-point arrays pass through untouched and get tangent ``None``
    in the rule. ``nondiff_self=True`` holds ``self``'s arrays fixed (its tangent is ``None``).

    >>> class Scaled:
    ...     @custom_jvp_method
    ...     def __call__(self, x):
    ...         return self.inner(x / self.scale)
    ...     @__call__.defjvp
    ...     def _(primals, tangents):
    ...         (self, x), (dself, dx) = primals, tangents
    ...         return self(x), jax.jvp(self.inner, (x / self.scale,), (dx,))[1]
    """
    return build_or_decorate(CustomJVPMethod, fn, nondiff_self)  # type: ignore[no-any-return]
