"""``linearize`` for functions of trees that also hold non-array leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._compat import zeros_like
from .filters import is_inexact_array
from .split import Split, leaves_by_position, split

Primals = TypeVarTuple("Primals")
Out = TypeVar("Out")


def linearize(fn: Callable[[*Primals], Out], *primals: *Primals) -> tuple[Out, Callable[..., Any]]:
    """Like ``jax.linearize``, but ``primals`` may hold functions, ints, strings and so on.

    Only floating-point (and complex) arrays are linearized, the leaves ``is_inexact_array``
    accepts; every other leaf is held fixed, Python floats included. ``fn`` runs once. Returns
    ``(out, jvp_fn)``: ``jvp_fn(*tangents)`` takes one tangent per primal, of its structure,
    ``None`` (or anything) at held leaves, ``None`` for a whole argument or sub-tree held fixed
    (a zero tangent), and returns the
    tangent of ``out``, ``None`` at its leaves that are not floating-point arrays.

    Args:
        fn: The function to linearize, called as ``fn(*primals)``.
        *primals: Its arguments: pytrees whose leaves may be of any type.

    Raises:
        TypeError: ``fn`` is not callable; from ``jvp_fn``, tangents that do not match the
            primals in number or structure, or a tangent leaf that is not an array.
        ValueError: From ``jvp_fn``: a tangent leaf without its primal's shape and dtype.

    >>> import jax.numpy as jnp
    >>> from pytreekit import linearize
    >>> def affine(params, x):
    ...     return params["scale"] * x + params["shift"]
    >>> params = {"scale": jnp.asarray(2.0), "shift": jnp.asarray(1.0), "name": "affine"}
    >>> out, jvp_fn = linearize(affine, params, jnp.ones(3))
    >>> d_params = {"scale": jnp.asarray(1.0), "shift": jnp.asarray(0.0), "name": None}
    >>> jvp_fn(d_params, None)  # the derivative along d_params, with x held fixed
    Array([1., 1., 1.], dtype=float32)
    >>> jvp_fn(None, jnp.arange(3.0))  # along x, with params held fixed
    Array([0., 2., 4.], dtype=float32)
    """
    if not callable(fn):
        raise TypeError(
            f"linearize(): fn must be callable (the function to linearize, called as "
            f"fn(*primals)), got {fn!r} ({type(fn).__name__})."
        )
    dynamic, primals_split = split(primals, is_inexact_array)
    outputs: list[Split] = []
    call_fn: Callable[..., Out] = fn  # called on rebuilt primals, which are untyped

    def dynamic_fn(*dynamic_primals: Any) -> list[Any]:
        out_dynamic, out_split = split(
            call_fn(*primals_split.rebuild(dynamic_primals)), is_inexact_array
        )
        outputs.append(out_split)
        return out_dynamic

    out_dynamic, linear_fn = jax.linearize(dynamic_fn, *dynamic)
    out_split = outputs[-1]

    def jvp_fn(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise TypeError(
                f"linearize(): jvp_fn takes one tangent per primal ({len(primals)}), "
                f"got {len(tangents)}."
            )

        def mismatch(index: int, expected: object, given: Any) -> TypeError:
            return TypeError(
                f"linearize(): the tangent for primal {index} does not have its structure: "
                f"expected {expected}, got {jax.tree_util.tree_structure(given)}. Use None for "
                f"leaves (or whole arguments) that are held fixed."
            )

        by_position = leaves_by_position(primals_split, tangents, mismatch)
        dynamic_tangents: list[Any] = []
        for position, primal in zip(primals_split.dynamic, dynamic, strict=True):
            tangent = by_position.get(position)
            # Zeros like the primal itself: its sharding and varying manual axes (shard_map) too.
            dynamic_tangents.append(
                zeros_like(primal, primal.dtype) if tangent is None else tangent
            )
        try:
            tangent_out = linear_fn(*dynamic_tangents)
        except (TypeError, ValueError) as error:
            culprit = _wrong_tangent(primals, primals_split.dynamic, dynamic_tangents)
            if culprit is None:
                raise
            raise type(error)(culprit) from error
        return out_split.rebuild_sparse(dict(zip(out_split.dynamic, tangent_out, strict=True)))

    out: Out = out_split.rebuild(out_dynamic)
    return out, jvp_fn


def _wrong_tangent(
    primals: tuple[Any, ...], dynamic: tuple[int, ...], tangents: list[Any]
) -> str | None:
    """Explain the first tangent leaf that does not match its primal leaf, if any."""
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(primals)[0]]
    leaves = jax.tree_util.tree_leaves(primals)
    for position, tangent in zip(dynamic, tangents, strict=True):
        expected = _aval(leaves[position])
        try:
            given = _aval(tangent)
        except TypeError:
            given = f"{tangent!r} ({type(tangent).__name__}), not an array,"
        if given == expected:
            continue
        index, where = paths[position][0], jax.tree_util.keystr(paths[position][1:])
        return (
            f"linearize(): jvp_fn got a tangent of {given} for primal "
            f"{getattr(index, 'idx', index)}{' at ' + where if where else ''}, which is "
            f"{expected}; a tangent must have its primal's shape and dtype (None stands for "
            f"zeros)."
        )
    return None


def _aval(x: Any) -> str:
    """``float32[2,3]``, as JAX writes the shape and dtype of an array."""
    shape = ",".join(str(d) for d in np.shape(x))
    return f"{jnp.result_type(x)}[{shape}]"
