"""``linearize`` for functions of trees that also hold non-array leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.tree_util import PyTreeDef

from ._filters import is_inexact_array
from ._split import Split, leaves_by_position, split


def linearize(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """Like ``jax.linearize``, but ``primals`` may hold functions, ints, strings and so on.

    Only floating-point arrays are linearized; every other leaf is held fixed. ``fn`` runs once;
    ``jvp_fn(*tangents)`` evaluates the linear map without calling it again. Tangents have the
    primals' structure, with ``None`` (or anything) at the held leaves, or ``None`` for a whole
    argument.

    >>> out, jvp_fn = linearize(lambda m, x: m(x), model, x)
    >>> directions = [jvp_fn(tangent_model, None) for tangent_model in tangent_models]
    """
    dynamic, primals_split = split(primals, is_inexact_array)
    outputs: list[Split] = []

    def dynamic_fn(*dynamic_primals: Any) -> list[Any]:
        out_dynamic, out_split = split(
            fn(*primals_split.rebuild(dynamic_primals)), is_inexact_array
        )
        outputs.append(out_split)
        return out_dynamic

    out_dynamic, linear_fn = jax.linearize(dynamic_fn, *dynamic)
    out_split = outputs[-1]

    def jvp_fn(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise TypeError(
                f"linearize: jvp_fn takes one tangent per primal ({len(primals)}), "
                f"got {len(tangents)}."
            )

        def mismatch(index: int, expected: PyTreeDef, given: Any) -> TypeError:
            return TypeError(
                f"linearize: the tangent for primal {index} does not have its structure: "
                f"expected {expected}, got {jax.tree_util.tree_structure(given)}. Use None for "
                f"leaves (or whole arguments) that are held fixed."
            )

        by_position = leaves_by_position(primals_split, tangents, mismatch)
        dynamic_tangents = []
        for position in primals_split.dynamic:
            tangent = by_position.get(position)
            primal = primals_split.leaves[position]
            dynamic_tangents.append(
                np.zeros(primal.shape, primal.dtype) if tangent is None else tangent
            )
        tangent_out = linear_fn(*dynamic_tangents)
        return out_split.rebuild_sparse(dict(zip(out_split.dynamic, tangent_out, strict=True)))

    return out_split.rebuild(out_dynamic), jvp_fn
