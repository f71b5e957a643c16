"""``CustomMethod``, the descriptor base of the custom derivative methods: ``jax.custom_jvp`` and
``jax.custom_vjp`` are no descriptors, so on a method they lose ``self``. Keyword arguments are
moved to their positions (defaults filled in), as JAX's machinery is positional.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from .._compat import signature
from .filters import is_array
from .split import Split, split

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")

# Parameters JAX's positional machinery cannot take, and how a message says so.
_UNSUPPORTED: dict[Any, str] = {
    inspect.Parameter.KEYWORD_ONLY: "is keyword-only",
    inspect.Parameter.VAR_KEYWORD: "collects keyword arguments",
}


class CustomMethod(Generic[S, P, R]):
    """Descriptor around a function whose first parameter (``self``) is a pytree primal."""

    kind: ClassVar[str]  # the decorator's name, set by each subclass (for messages)
    # Whether the rules need the shapes and dtypes of the array arguments (to check cotangents).
    keeps_shapes = False

    def __init__(self, fn: Callable[Concatenate[S, P], R], *, nondiff_self: bool) -> None:
        _check_wrappable(self.kind, fn)
        _check_nondiff_self(self.kind, nondiff_self)
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.nondiff_self = nondiff_self
        self.name = getattr(fn, "__qualname__", repr(fn))
        try:
            self._signature = signature(fn)  # for its parameters: annotations stay unevaluated
        except ValueError:
            raise TypeError(
                f"{self.kind} cannot wrap {fn!r}: Python gives it no signature, so its first "
                f"parameter cannot be taken for the instance (self). Decorate a method written "
                f"in Python."
            ) from None
        parameters = list(self._signature.parameters.values())
        for parameter in parameters:
            what = _UNSUPPORTED.get(parameter.kind)
            if what is not None:
                raise TypeError(
                    f"{self.kind} {self.name}: parameter {parameter.name!r} {what}; JAX's custom "
                    f"derivatives are positional, so use ordinary parameters (they may still be "
                    f"passed by keyword)."
                )
        if not parameters:
            raise TypeError(
                f"{self.kind} {self.name}: the function takes no parameters, but the first one "
                f"is the instance (self), a primal of the rule. Decorate a method."
            )
        self.parameter_names: tuple[str, ...] = tuple(p.name for p in parameters)
        self._exact_arity = (
            None
            if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
            else len(parameters)
        )
        # Any: JAX's ParamSpec typing cannot express its opaque first argument (the Split).
        self._custom: Any = self._jax_custom()(named_after(fn, self._primal), nondiff_argnums=(0,))
        # An implementation of an abstract custom method: the method whose rules it uses, as they
        # are when called (a rule may be given, or given again, after the subclass is defined).
        self.base: Any = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, instance: S, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, instance: S | None, owner: type | None = None) -> Self | Callable[P, R]:
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def __call__(self, instance: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        arguments = self._resolve((instance, *args), kwargs)
        # Every array goes to JAX as a primal, integer ones too: under jit they are tracers, which
        # JAX refuses as non-differentiable arguments. Everything else is held aside.
        dynamic, arguments_split = split(arguments, is_array, keep_shapes=self.keeps_shapes)
        # One list argument, not one argument per leaf: JAX's handling of nondiff_argnums costs
        # time quadratic in the number of positional arguments.
        result: R = self._custom(arguments_split, dynamic)
        return result

    def with_primal(self, fn: Callable[Concatenate[S, P], R]) -> Self:
        """This method's rules, as they are when called, around ``fn``: an implementation of an
        abstract custom method."""
        kept = type(self)(fn, nondiff_self=self.nondiff_self)
        kept.base = self
        return kept

    def ruled(self) -> Self | None:
        """The method whose rules apply: this one, else the abstract one it implements."""
        method: Any = self
        while method is not None and not method.has_rules():
            method = method.base
        found: Self | None = method
        return found

    def has_rules(self) -> bool:
        """Whether rules were given to this method itself."""
        raise NotImplementedError

    def _jax_custom(self) -> Any:  # jax.custom_jvp or jax.custom_vjp
        raise NotImplementedError

    def _primal(self, arguments_split: Split, dynamic: list[Any]) -> Any:
        """The undecorated computation, on rebuilt arguments (what JAX's custom_* wraps)."""
        function: Callable[..., Any] = self.fn  # rebuilt arguments are untyped
        return function(*arguments_split.rebuild(dynamic))

    def _resolve(self, arguments: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        if not kwargs and len(arguments) == self._exact_arity:
            return arguments
        try:
            bound = self._signature.bind(*arguments, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.name}(): {error}") from None
        bound.apply_defaults()
        return bound.args


def named_after(user_function: Any, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` under the name of the user's function, which JAX shows in jaxprs and messages."""

    def named(*arguments: Any) -> Any:
        return call(*arguments)

    named.__name__ = getattr(user_function, "__name__", call.__name__)
    named.__qualname__ = getattr(user_function, "__qualname__", named.__name__)
    # Its signature computed once: JAX computes the signature of the functions it wraps on every
    # call (to describe them in messages), which dominates a cheap eager call.
    named.__signature__ = inspect.signature(named)  # type: ignore[attr-defined]
    return named


def inherit_rules(cls: type) -> None:
    """A method implementing a base's abstract custom method keeps its rules (as tjax does);
    one overriding a concrete custom method replaces it, rules included, and a warning says so.
    The method is ``cls``'s own or one a mixin earlier in the MRO provides; a wrapper that binds
    like a function (``jax.jit``, ``equinox.filter_jit``) is an implementation too, and anything
    else overriding a custom method is warned about (it has no rule)."""
    mro = cls.__mro__
    names = {n for klass in mro[1:] for n, v in vars(klass).items() if isinstance(v, CustomMethod)}
    for name in sorted(names):
        found = _overriding(mro, name)
        if found is None:
            continue
        owner, value, inherited = found
        implements = isinstance(value, types.FunctionType) or _binds_like(value)
        if getattr(inherited, "__isabstractmethod__", False) and implements:
            kept = inherited.with_primal(value)
            kept.__set_name__(cls, name)
            setattr(cls, name, kept)
        else:
            _warn_override(cls, name, owner, value, inherited)


def _overriding(
    mro: tuple[type, ...], name: str
) -> tuple[type, Any, CustomMethod[Any, Any, Any]] | None:
    """Where ``name`` resolves for the class of ``mro`` (the class defining it, and its value)
    when that is no custom method but overrides one further along the MRO (``None``: not so, or
    a base between already resolves it as the class does, set up when it was made)."""
    owner = next(klass for klass in mro if name in vars(klass))
    value = vars(owner)[name]
    if isinstance(value, CustomMethod):
        return None
    after = mro[mro.index(owner) + 1 :]
    holder = next((klass for klass in after if name in vars(klass)), object)
    inherited = vars(holder).get(name)
    between = mro[1 : mro.index(owner) + 1]
    if not isinstance(inherited, CustomMethod) or any(issubclass(k, holder) for k in between):
        return None
    return owner, value, inherited


def _binds_like(value: Any) -> bool:
    """Whether ``value`` wraps a plain function and binds as one (``jax.jit``, ``filter_jit``):
    calling it with the instance first is what calling it as a bound method does."""
    if isinstance(value, (staticmethod, classmethod, property)):  # not bound to the instance
        return False
    if not callable(value) or not hasattr(type(value), "__get__"):
        return False
    try:
        return isinstance(inspect.unwrap(value), types.FunctionType)
    except ValueError:  # a cycle of __wrapped__
        return False


def _warn_override(cls: type, name: str, owner: type, value: Any, inherited: Any) -> None:
    where = f"{cls.__qualname__}.{name}"
    if owner is not cls:
        where += f" (from {owner.__qualname__}, before {inherited.name} in the MRO)"
    plain = isinstance(value, types.FunctionType)
    what = "a plain method" if plain else f"a {type(value).__name__}"
    if getattr(inherited, "__isabstractmethod__", False):
        advice = (
            f"To use {inherited.name}'s rule, implement it with a plain method or a wrapper "
            f"that binds like one (jax.jit), in {cls.__qualname__} itself"
        )
    else:
        advice = (
            f"To keep a rule, decorate the override with @{inherited.kind} and give it its rule, "
            f"or make {inherited.name} abstract (@abc.abstractmethod) so that implementations "
            f"keep its rule"
        )
    try:
        code = getattr(inspect.unwrap(value), "__code__", None)
    except ValueError:  # a cycle of __wrapped__
        code = None
    module = sys.modules.get(cls.__module__)
    # Shown at the override in the user's class (not in pytreekit), once per place, also when
    # the class is decorated again (set up as a subclass, then decorated explicitly).
    warnings.warn_explicit(
        f"{where} overrides {inherited.name}, a {inherited.kind}, with {what}: "
        f"{cls.__qualname__}.{name} has no custom rule, and JAX differentiates its body. "
        f"{advice}.",
        UserWarning,
        code.co_filename if code is not None else getattr(module, "__file__", None) or "<unknown>",
        code.co_firstlineno if code is not None else 0,
        module=cls.__module__,
        registry=vars(module).setdefault("__warningregistry__", {}) if module else None,
    )


def non_pair(result: Any) -> str | None:
    """What a rule returned instead of a pair, for error messages; ``None`` for a pair."""
    if isinstance(result, (tuple, list)):
        return None if len(result) == 2 else f"a {type(result).__name__} of {len(result)} values"
    if hasattr(result, "shape") and hasattr(result, "dtype"):
        return f"a single array of shape {tuple(result.shape)}"
    return f"a {type(result).__name__}"


def _check_wrappable(kind: str, fn: Any) -> None:
    for wrapper in (staticmethod, classmethod, property):
        if isinstance(fn, wrapper):
            raise TypeError(
                f"{kind} cannot wrap a {wrapper.__name__}: the decorated function's first "
                f"parameter must be the instance (self), a primal of the rule. Put @{kind} on a "
                f"plain method (for a function without self, use jax.custom_jvp / jax.custom_vjp "
                f"directly)."
            )
    if isinstance(fn, CustomMethod):
        raise TypeError(f"{kind}: {fn.name} is already a {fn.kind}; decorate it once.")
    if not callable(fn):
        raise TypeError(f"{kind} decorates a function (a method), got {fn!r}.")


def _check_nondiff_self(kind: str, nondiff_self: Any) -> None:
    if not isinstance(nondiff_self, bool):
        raise TypeError(f"{kind}(nondiff_self=...) takes True or False, got {nondiff_self!r}.")


def build_or_decorate(kind: type[CustomMethod[Any, Any, Any]], fn: Any, nondiff_self: bool) -> Any:
    """``kind(fn)`` for the bare decorator, or a decorator when options came first."""
    if fn is None:
        _check_nondiff_self(kind.kind, nondiff_self)  # now, not when the function comes
        return lambda f: kind(f, nondiff_self=nondiff_self)
    return kind(fn, nondiff_self=nondiff_self)
