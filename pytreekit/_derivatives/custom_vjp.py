"""``custom_vjp_method``: a custom VJP (forward and backward rule) on a method."""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import types
from collections.abc import Callable
from typing import Any, Concatenate, TypeVar, cast, overload

import jax
from jax.core import Tracer

from .._compat import eval_jaxpr, tangent_type, without_consts
from .filters import is_array
from .method import CustomMethod, P, R, S, build_or_decorate, named_after, non_pair
from .split import PyTreeDef, Split, leaves_by_position, split

# The residuals ``fwd`` returns, which ``bwd`` takes: checkers match the two rules' types.
Res = TypeVar("Res")


class CustomVJPMethod(CustomMethod[S, P, R]):
    """What ``custom_vjp_method`` makes: a descriptor that binds like a method."""

    kind = "custom_vjp_method"
    keeps_shapes = True

    def __init__(self, fn: Callable[Concatenate[S, P], R], *, nondiff_self: bool = False) -> None:
        super().__init__(fn, nondiff_self=nondiff_self)
        self.fwd: Callable[..., tuple[Any, Any]] | None = None
        self.bwd: Callable[[Any, Any], Any] | None = None
        self._custom.defvjp(self._fwd, self._bwd)

    def defvjp(
        self, fwd: Callable[Concatenate[S, P], tuple[R, Res]], bwd: Callable[[Res, Any], Any]
    ) -> None:
        """Register ``fwd(self, *args) -> (out, residuals)`` and ``bwd(residuals, g)``."""
        for role, rule, shape in (
            ("fwd", fwd, "fwd(self, *args) -> (out, residuals)"),
            ("bwd", bwd, "bwd(residuals, g) -> (self_cotangent, *arg_cotangents)"),
        ):
            if not callable(rule):
                raise TypeError(
                    f"{self.name}.defvjp(fwd, bwd): {role} must be a function {shape}, got "
                    f"{rule!r}."
                )
        self.fwd = fwd
        self.bwd = bwd
        self._custom.defvjp(named_after(fwd, self._fwd), named_after(bwd, self._bwd))

    def _jax_custom(self) -> Any:
        return jax.custom_vjp

    def has_rules(self) -> bool:
        return self.fwd is not None

    def _fwd(self, arguments_split: Split, dynamic: list[Any]) -> tuple[Any, tuple[Any, ...]]:
        ruled = self.ruled()
        if ruled is None or ruled.fwd is None:  # defvjp sets fwd and bwd together
            raise TypeError(
                f"{self.name} is a custom_vjp_method without rules, and something asked for its "
                f"derivative. Define them with {self.name}.defvjp(fwd, bwd)."
            )
        fwd = ruled.fwd
        result = fwd(*arguments_split.rebuild(dynamic))
        got = non_pair(result)
        if got is not None:
            raise TypeError(
                f"{self.name}: the fwd rule {getattr(fwd, '__qualname__', fwd)} must "
                f"return a pair (out, residuals), but it returned {got}."
            )
        out, residuals = result
        saved, residuals_split = split(residuals, is_array)
        # (the Split holds None at the arrays' places)
        if any(holds_tracer(leaf) for leaf in residuals_split.leaves):
            # A traced array inside an object JAX does not flatten (a closure) would outlive its
            # trace in the Split: bwd is traced now, over these residuals, and what it closes
            # over is saved, as custom_gradient_method saves what vjp_fn closes over.
            bwd = cast(Callable[[Any, Any], Any], ruled.bwd)
            residuals = TracedBackward.trace(functools.partial(bwd, residuals), out)
            saved, residuals_split = split(residuals, is_array)
        arguments_split.residuals = residuals_split
        return out, tuple(saved)

    def _bwd(
        self, arguments_split: Split, saved: tuple[Any, ...], cotangent_out: Any
    ) -> tuple[list[Any]]:
        # JAX calls bwd only after fwd, which checked that the rules exist and set the residuals.
        residuals = cast(Split, arguments_split.residuals).rebuild(saved)
        if type(residuals) is TracedBackward:
            cotangents = residuals(cotangent_out)
        else:
            bwd = cast(Callable[[Any, Any], Any], self._bwd_function())
            cotangents = bwd(residuals, cotangent_out)
        return (list(self._dynamic_cotangents(arguments_split, cotangents)),)

    def _bwd_function(self) -> Callable[[Any, Any], Any] | None:
        ruled = self.ruled()
        return None if ruled is None else ruled.bwd

    def _bwd_rule(self) -> str:  # as messages name it
        bwd = self._bwd_function()
        return f"the bwd rule {getattr(bwd, '__qualname__', repr(bwd))}"

    def _dynamic_cotangents(self, arguments_split: Split, cotangents: Any) -> tuple[Any, ...]:
        """The user's per-argument cotangents as JAX wants them: one per array leaf."""
        count = len(arguments_split.treedef.children())
        names = list(self.parameter_names[:count])
        names += [f"argument {i}" for i in range(len(names), count)]  # through *args
        sequence = isinstance(cotangents, (tuple, list))
        if not sequence or len(cotangents) != count:
            got = f"{len(cotangents)} values" if sequence else f"a {type(cotangents).__name__}"
            raise TypeError(
                f"{self.name}: {self._bwd_rule()} must return a tuple of {count} "
                f"cotangents, one for each of ({', '.join(names)}), with None for zero; it "
                f"returned {got}."
            )
        if self.nondiff_self:
            cotangents = (None, *cotangents[1:])

        def mismatch(index: int, expected: PyTreeDef, given: Any) -> TypeError:
            name = names[index]
            return TypeError(
                f"{self.name}: {self._bwd_rule()} returned a cotangent for {name!r} that does "
                f"not have the structure of {name!r}: expected {expected}, got "
                f"{jax.tree_util.tree_structure(given)}. Return None for a zero cotangent, or a "
                f"value shaped like the argument (for self: pytreekit.replace(self, ...) with "
                f"every array field given, None for a zero one)."
            )

        by_position = leaves_by_position(arguments_split, cotangents, mismatch)
        result = []
        for position in arguments_split.dynamic:
            primal = arguments_split.leaves[position]
            cotangent = by_position.get(position)
            if cotangent is not None and jax.numpy.issubdtype(primal.dtype, jax.numpy.inexact):
                shape = tuple(getattr(cotangent, "shape", ()))
                if shape != tuple(primal.shape):
                    where = _leaf_name(arguments_split, position, names)
                    # ValueError, as jax.custom_vjp's own check of a cotangent's shape
                    raise ValueError(
                        f"{self.name}: {self._bwd_rule()} returned a cotangent of shape {shape} "
                        f"for {where}, whose shape is {tuple(primal.shape)}; a cotangent has its "
                        f"primal's shape. Return one of shape {tuple(primal.shape)} for {where} "
                        f"(or None there for zero)."
                    )
                result.append(cotangent)
            else:
                result.append(None)  # zero, or an integer array (no cotangent)
        return tuple(result)


@jax.tree_util.register_pytree_node_class
class TracedBackward:
    """A backward function traced on its output's tangent types (as ``jax.custom_gradient``
    does): the trace's constants are its children, arrays that a transformation sees."""

    __slots__ = ("consts", "cotangent_tree", "jaxpr", "out_tree")

    def __init__(
        self, jaxpr: Any, out_tree: PyTreeDef, cotangent_tree: PyTreeDef, consts: list[Any]
    ) -> None:
        self.jaxpr = jaxpr
        self.out_tree = out_tree
        self.cotangent_tree = cotangent_tree
        self.consts = consts

    @classmethod
    def trace(cls, backward: Callable[[Any], Any], out: Any) -> TracedBackward:
        """``backward`` (a function of the cotangent of ``out``) traced once."""
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)

        def flat(*cotangent_leaves: Any) -> Any:
            return backward(jax.tree_util.tree_unflatten(out_tree, cotangent_leaves))

        closed, shapes = jax.make_jaxpr(flat, return_shape=True)(
            *(tangent_type(leaf) for leaf in out_leaves)
        )
        cotangent_tree = jax.tree_util.tree_structure(shapes)
        jaxpr = without_consts(closed.jaxpr)  # the consts are children, seen by transformations
        return cls(jaxpr, out_tree, cotangent_tree, list(closed.consts))

    def __call__(self, cotangent_out: Any) -> Any:
        leaves = self.out_tree.flatten_up_to(cotangent_out)
        return self.cotangent_tree.unflatten(eval_jaxpr(self.jaxpr, self.consts, *leaves))

    def tree_flatten(self) -> tuple[list[Any], tuple[Any, PyTreeDef, PyTreeDef]]:
        return self.consts, (self.jaxpr, self.out_tree, self.cotangent_tree)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, PyTreeDef, PyTreeDef], consts: Any) -> TracedBackward:
        return cls(*aux, list(consts))


# How far holds_tracer looks into a residual: objects visited, and nesting.
_LOOK_AT, _DEPTH = 10_000, 8
_ATOMS = (str, bytes, int, float, complex, type, types.ModuleType, type(None))


def holds_tracer(value: Any) -> bool:
    """Whether ``value`` (a residual JAX does not flatten) holds a tracer: in a closure's cells,
    defaults, a bound method's instance, a partial's arguments, a container or an attribute."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack and len(seen) < _LOOK_AT:
        item, depth = stack.pop()
        if isinstance(item, Tracer):
            return True
        if depth >= _DEPTH or isinstance(item, _ATOMS) or id(item) in seen or is_array(item):
            continue
        seen.add(id(item))
        stack.extend((child, depth + 1) for child in _parts(item))
    return False


def _function_parts(item: types.FunctionType) -> list[Any]:
    cells = []
    for cell in item.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty cell
            cells.append(cell.cell_contents)
    return [*cells, *(item.__defaults__ or ()), *(item.__kwdefaults__ or {}).values()]


def _parts(item: Any) -> list[Any]:
    if isinstance(item, types.FunctionType):
        return _function_parts(item)
    if isinstance(item, types.MethodType):
        return [item.__self__, item.__func__]
    if isinstance(item, functools.partial):
        return [item.func, *item.args, *item.keywords.values()]
    if isinstance(item, (list, tuple, set, frozenset)):
        return list(item)
    if isinstance(item, dict):
        return list(item.values())
    leaves = jax.tree_util.tree_leaves(item)
    if len(leaves) != 1 or leaves[0] is not item:  # a pytree (a registered node)
        return leaves
    attributes = getattr(item, "__dict__", None)
    return list(attributes.values()) if isinstance(attributes, dict) else []


def _leaf_name(arguments_split: Split, position: int, names: list[str]) -> str:
    """The argument leaf at ``position`` as the user writes it: ``self.w``, ``x['scale']``."""
    arguments = arguments_split.treedef.children()
    ends = list(itertools.accumulate(treedef.num_leaves for treedef in arguments))
    index = bisect.bisect_right(ends, position)
    treedef = arguments[index]
    try:  # the argument's key paths, read off a copy of it holding its leaves' positions
        copy = treedef.unflatten(range(treedef.num_leaves))
        paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(copy)[0]]
    except Exception:  # a node whose unflatten refuses ints: the argument alone
        return names[index]
    path = paths[position - (ends[index] - treedef.num_leaves)]
    return f"{names[index]}{jax.tree_util.keystr(path)}"


@overload
def custom_vjp_method(fn: Callable[Concatenate[S, P], R], /) -> CustomVJPMethod[S, P, R]: ...
@overload
def custom_vjp_method(
    *, nondiff_self: bool = False
) -> Callable[[Callable[Concatenate[S, P], R]], CustomVJPMethod[S, P, R]]: ...
def custom_vjp_method(
    fn: Callable[Concatenate[S, P], R] | None = None, /, *, nondiff_self: bool = False
) -> Any:
    """Give a method custom forward and backward rules (``jax.custom_vjp`` for methods).

    Returns a ``CustomVJPMethod``; ``Class.method.defvjp(fwd, bwd)`` registers the rules:
    ``fwd(self, *args)`` returns ``(out, residuals)`` and ``bwd(residuals, g)`` one cotangent
    per parameter, ``(self_cotangent, *arg_cotangents)``, ``None`` meaning zero (for ``self``,
    ``pytreekit.replace(self, ...)`` makes one, naming every array field: one left out keeps its
    primal value as its cotangent). Residuals may hold any pytree of arrays and also
    what ``jax.custom_vjp`` refuses: non-array values (names, flags, shapes, functions), held
    aside, and arrays inside objects that are no pytree (a closure, a ``functools.partial``, a
    bound method): under a transformation, ``bwd`` is then traced in the forward pass, over the
    residuals, and the arrays it uses are saved (as ``custom_gradient_method`` does). Reverse mode
    only, as with ``jax.custom_vjp``: use ``custom_jvp_method`` for ``jax.jvp``.

    Args:
        fn: The method (``__call__`` too); its first parameter is the instance. Positional or
            keyword parameters only. Without it, ``custom_vjp_method(nondiff_self=...)`` is a
            decorator.
        nondiff_self: No cotangent flows to ``self``: what ``bwd`` returns for it is dropped.

    >>> import jax, jax.numpy as jnp
    >>> from pytreekit import custom_vjp_method, pytree_class, replace
    >>> @pytree_class
    ... class Scale:
    ...     w: jax.Array
    ...     @custom_vjp_method
    ...     def __call__(self, x):
    ...         return self.w * x
    >>> def fwd(self, x):
    ...     return self(x), (self, x)
    >>> def bwd(residuals, g):
    ...     self, x = residuals
    ...     g = jnp.clip(g, -1.0, 1.0)  # clip the incoming gradient
    ...     return replace(self, w=g * x), g * self.w
    >>> Scale.__call__.defvjp(fwd, bwd)
    >>> float(jax.grad(lambda x: 10.0 * Scale(jnp.array(3.0))(x))(2.0))
    3.0
    """
    return build_or_decorate(CustomVJPMethod, fn, nondiff_self)
