"""Pairs for tests/test_histories.py: a pytree class and its twin registered by hand.

Both get the same ``__init__`` and class body; the twin is registered with
``jax.tree_util.register_pytree_with_keys`` (and with optree, in pytreekit's namespace) and
follows the field rule as written in docs/guide/existing-classes.md, with the static names it is
given: its fields are the attributes the instance holds, in its own order. Whatever ran before in
the process, the pytree class must flatten as its twin does.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import jax
from jax.tree_util import GetAttrKey

from pytreekit import fields, pytree_class

HAS_OPTREE = importlib.util.find_spec("optree") is not None
if HAS_OPTREE:
    import optree


def _names(obj: object) -> tuple[str, ...]:
    return tuple(n for n in vars(obj) if not n.startswith("__"))


def define(
    init: Any,
    static: tuple[str, ...] = (),
    *,
    name: str = "Layer",
    frozen: bool = False,
    body: dict[str, Any] | None = None,
) -> tuple[type, type]:
    """``(pytree class, twin)``: the class is made in ``__main__`` (so pickle finds it there by
    name, as a script's classes are) and decorated with ``static`` and ``frozen``."""
    namespace = {"__init__": init, "__module__": "__main__", "__qualname__": name, **(body or {})}
    backends = ("jax", "optree") if HAS_OPTREE else ("jax",)
    cls = pytree_class(
        type(name, (), dict(namespace)), static=static, frozen=frozen, backends=backends
    )
    twin = type(f"{name}Twin", (), {**namespace, "__qualname__": f"{name}Twin"})
    register_twin(twin, static)
    return cls, twin


def register_twin(twin: type, static: tuple[str, ...]) -> None:
    def flatten_with_keys(obj: Any) -> tuple[Any, Any]:
        names = _names(obj)
        children = [(GetAttrKey(n), getattr(obj, n)) for n in names if n not in static]
        return children, (names, tuple(getattr(obj, n) for n in names if n in static))

    def flatten(obj: Any) -> tuple[Any, Any]:
        children, aux = flatten_with_keys(obj)
        return [c for _, c in children], aux

    def unflatten(aux: Any, children: Any) -> Any:
        names, statics = aux
        obj = object.__new__(twin)
        values, held = iter(children), iter(statics)
        for n in names:
            object.__setattr__(obj, n, next(held) if n in static else next(values))
        return obj

    jax.tree_util.register_pytree_with_keys(twin, flatten_with_keys, unflatten, flatten)
    if HAS_OPTREE:

        def flatten_named(obj: Any) -> tuple[Any, Any, Any]:
            children, aux = flatten(obj)
            return children, aux, tuple(n for n in aux[0] if n not in static)

        optree.register_pytree_node(twin, flatten_named, unflatten, namespace="pytreekit")


def views(obj: Any, static_of: Any) -> dict[str, Any]:
    """What a user sees of ``obj``'s tree: key paths with leaves (jax, optree), the fields and
    their static flags, and the fields of a copy ``tree_map`` rebuilds."""
    paths = jax.tree_util.tree_flatten_with_path(obj)[0]
    rebuilt = jax.tree_util.tree_map(lambda x: x, obj)
    seen: dict[str, Any] = {
        "jax": [(jax.tree_util.keystr(p), leaf) for p, leaf in paths],
        "fields": static_of(obj),
        "rebuilt": [(n, getattr(rebuilt, n)) for n in _names(rebuilt)],
    }
    if HAS_OPTREE:
        entries, leaves, _ = optree.tree_flatten_with_path(obj, namespace="pytreekit")
        seen["optree"] = list(zip(entries, leaves, strict=True))
    return seen


def assert_twins(obj: Any, twin_obj: Any, static: tuple[str, ...]) -> None:
    """``obj`` (a pytree class's instance) flattens exactly as ``twin_obj`` (its twin's)."""
    ours = views(obj, lambda o: [(f.name, f.static) for f in fields(o)])
    theirs = views(twin_obj, lambda o: [(n, n in static) for n in _names(o)])
    assert ours == theirs, f"{type(obj).__qualname__}: {ours} != twin {theirs}"
