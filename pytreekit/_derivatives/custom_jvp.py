"""``custom_jvp_method``: a custom JVP rule on a method, with ``self`` as a pytree primal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, TypeAlias, TypeVar, cast, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr, tree_flatten_with_path

from .._compat import zeros_like
from .method import CustomMethod, P, R, S, build_or_decorate, named_after, non_pair
from .split import PyTreeDef, Split

T = TypeVar("T")

# A JVP rule as type checkers see it, ``primal_out`` of the method's return type. Primals and
# tangents stay ``tuple[Any, ...]``: a ParamSpec cannot be turned into a tuple type.
JVPRule: TypeAlias = Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[R, T]]


class CustomJVPMethod(CustomMethod[S, P, R]):
    """What ``custom_jvp_method`` makes: a descriptor that binds like a method."""

    kind = "custom_jvp_method"

    def __init__(self, fn: Callable[Concatenate[S, P], R], *, nondiff_self: bool = False) -> None:
        super().__init__(fn, nondiff_self=nondiff_self)
        self.rule: Callable[..., Any] | None = None
        self._custom.defjvp(named_after(None, self._jvp))

    def defjvp(self, rule: JVPRule[R, T]) -> JVPRule[R, T]:
        """Register ``rule(primals, tangents) -> (primal_out, tangent_out)``; returns ``rule``."""
        if not callable(rule):
            raise TypeError(
                f"{self.name}.defjvp() takes the JVP rule, a function "
                f"(primals, tangents) -> (primal_out, tangent_out); got {rule!r}."
            )
        self.rule = rule
        self._custom.defjvp(named_after(rule, self._jvp))
        return rule

    def _jax_custom(self) -> Any:
        return jax.custom_jvp

    def has_rules(self) -> bool:
        return self.rule is not None

    def _jvp(
        self, arguments_split: Split, primals: tuple[Any, ...], tangents: tuple[Any, ...]
    ) -> tuple[Any, Any]:
        ruled = self.ruled()
        if ruled is None or ruled.rule is None:
            raise TypeError(
                f"{self.name} is a custom_jvp_method without a JVP rule, and something asked "
                f"for its derivative. Define one with @{self.name}.defjvp."
            )
        # As jax.custom_jvp does, the rule gets every tangent JAX has (a Python float's too);
        # only float0 ones (integer primals, nothing to differentiate) become None.
        tangent_at = {
            position: tangent
            for position, tangent in zip(arguments_split.dynamic, tangents[0], strict=True)
            if getattr(tangent, "dtype", None) != jax.dtypes.float0
        }
        tangent_arguments = arguments_split.rebuild_sparse(tangent_at)
        if self.nondiff_self:
            tangent_arguments = (None, *tangent_arguments[1:])
        rule = ruled.rule
        result = rule(arguments_split.rebuild(primals[0]), tangent_arguments)
        rule_name = getattr(rule, "__qualname__", repr(rule))
        got = non_pair(result)
        if got is not None:
            raise TypeError(
                f"{self.name}: the JVP rule {rule_name} must return a pair "
                f"(primal_out, tangent_out), but it returned {got}"
                f"{' (only the tangent?)' if hasattr(result, 'shape') else ''}. Return both, e.g. "
                f"`return self.method(x), tangent`."
            )
        out, tangent_out = result
        return out, _matching_tangent(self.name, rule_name, out, tangent_out)


def _matching_tangent(name: str, rule_name: str, out: Any, tangent_out: Any) -> Any:
    """``tangent_out`` checked against ``out``, its ``None`` leaves made zeros."""
    primal_leaves, treedef = tree_flatten_with_path(out)
    treedef = cast(PyTreeDef, treedef)
    try:
        tangent_leaves = (
            [None] * len(primal_leaves)
            if tangent_out is None
            else treedef.flatten_up_to(tangent_out)
        )
    except (ValueError, TypeError):
        got = jax.tree_util.tree_structure(tangent_out, is_leaf=lambda x: x is None)
        raise TypeError(
            f"{name}: the JVP rule {rule_name} returned a tangent whose structure does not "
            f"match the primal output: expected {treedef}, got {got}. The tangent must have "
            f"the primal output's structure (same containers, same static parts), with "
            f"None allowed for zero at any leaf."
        ) from None
    filled = []
    for (path, primal), tangent in zip(primal_leaves, tangent_leaves, strict=True):
        dtype = jnp.result_type(primal)  # a tangent's: float0 for integers
        expected_dtype = dtype if jnp.issubdtype(dtype, jnp.inexact) else jax.dtypes.float0
        problem = _tangent_problem(primal, tangent, expected_dtype)
        if problem is not None:
            where = f"output{keystr(path)}" if path else "the output"
            raise TypeError(
                f"{name}: the JVP rule {rule_name}'s tangent output does not match the primal "
                f"output: {where} {problem}. The tangent must have the primal output's "
                f"structure, shapes and dtypes (None is read as zero)."
            )
        # None: zeros like the primal, its sharding and varying manual axes too.
        filled.append(zeros_like(primal, expected_dtype) if tangent is None else tangent)
    return jax.tree_util.tree_unflatten(treedef, filled)


def _tangent_problem(primal: Any, tangent: Any, expected_dtype: Any) -> str | None:
    """What is wrong with ``tangent`` as the tangent of the output leaf ``primal``, if anything."""
    if tangent is None:
        return None
    if isinstance(tangent, int) and expected_dtype != jax.dtypes.float0:
        return (
            f"has the Python {type(tangent).__name__} {tangent!r} as its tangent, but the "
            f"primal output there is {_dtype_name(expected_dtype)}: write a float "
            f"({float(tangent)!r}) or an array"
        )
    # Compared as JAX compares them: Python scalars and NumPy float64 as JAX types them, and a
    # Python float output (which has no shape attribute) too.
    try:
        shape, dtype = np.shape(tangent), jnp.result_type(tangent)
    except TypeError:
        return (
            f"has {_cut(tangent)} ({type(tangent).__name__}) as its tangent, which is not an array"
        )
    if shape == np.shape(primal) and dtype == expected_dtype:
        return None
    integer = expected_dtype == jax.dtypes.float0
    return (
        f"has a tangent of shape {shape} and dtype {_dtype_name(dtype)}, but the primal output "
        f"there ({_described(primal)}) needs shape {np.shape(primal)} and dtype "
        f"{_dtype_name(expected_dtype)}"
        + (" (an integer output has no tangent: use None)" if integer else "")
    )


def _described(primal: Any) -> str:
    if isinstance(primal, (bool, int, float, complex)):
        return f"a Python {type(primal).__name__}"
    return f"a {_dtype_name(jnp.result_type(primal))} array"


def _cut(value: Any) -> str:
    return text if len(text := repr(value)) <= 60 else text[:57] + "..."


def _dtype_name(dtype: Any) -> str:
    return "float0" if dtype == jax.dtypes.float0 else np.dtype(dtype).name


@overload
def custom_jvp_method(fn: Callable[Concatenate[S, P], R], /) -> CustomJVPMethod[S, P, R]: ...
@overload
def custom_jvp_method(
    *, nondiff_self: bool = False
) -> Callable[[Callable[Concatenate[S, P], R]], CustomJVPMethod[S, P, R]]: ...
def custom_jvp_method(
    fn: Callable[Concatenate[S, P], R] | None = None, /, *, nondiff_self: bool = False
) -> Any:
    """Give a method a custom JVP rule (``jax.custom_jvp`` for methods): ``self`` is a primal.

    Returns a ``CustomJVPMethod``; ``Class.method.defjvp`` registers ``rule(primals, tangents)``,
    called with ``primals == (self, *args)`` (keyword arguments moved to their positions,
    defaults filled in) and ``tangents`` of the same structure, ``None`` where there is no
    tangent (non-arrays, integer arrays). It returns ``(primal_out, tangent_out)``, ``None``
    anywhere in ``tangent_out`` meaning zero. ``jax.jvp``, ``jax.grad`` and what is built on
    them use it, under ``jit``, ``vmap``, ``scan`` and ``checkpoint``.

    Args:
        fn: The method (``__call__`` too); its first parameter is the instance. Positional or
            keyword parameters only. Without it, ``custom_jvp_method(nondiff_self=...)`` is a
            decorator.
        nondiff_self: Hold ``self``'s arrays fixed: the rule gets ``None`` as ``self``'s tangent.

    >>> import jax, jax.numpy as jnp
    >>> from pytreekit import custom_jvp_method, field, pytree_class
    >>> @pytree_class
    ... class Quantize:
    ...     step: float = field(static=True)
    ...     @custom_jvp_method
    ...     def __call__(self, x):
    ...         return jnp.round(x / self.step) * self.step
    >>> @Quantize.__call__.defjvp
    ... def straight_through(primals, tangents):
    ...     (self, x), (_, dx) = primals, tangents
    ...     return self(x), dx  # rounding's derivative taken as 1
    >>> quantize = Quantize(0.5)
    >>> float(quantize(jnp.array(0.7))), float(jax.grad(quantize)(jnp.array(0.7)))
    (0.5, 1.0)
    """
    return build_or_decorate(CustomJVPMethod, fn, nondiff_self)
