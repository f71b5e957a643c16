"""The pytree registries a class is registered with, and ``register_backend``.

Each registry has a thin adapter module beside this one (``register``, ``unregister``, and
``KEY``, the type of a child's key in key paths); an adapter is imported only when a class asks
for its backend, so ``import pytreekit`` never imports optree or torch.

Registration is all or nothing: the registries that can undo a registration (optree, torch) go
first and are undone if a later one refuses; JAX, which cannot, goes last.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable
from types import ModuleType

from .._codegen import SPEC_ATTR
from .._layouts import KeyFactory
from .._nodes import NodeFunctions
from .._spec import decoration_lock, spec_of

# backend name -> (the library it needs, its adapter module, how to install it). pytreekit is
# installed from its clone, so the advice names the library itself, not an extra of pytreekit.
_ADAPTERS = {
    "jax": ("jax", "pytreekit._backends.jax", "pip install jax"),
    "optree": ("optree", "pytreekit._backends.optree", "pip install optree"),
    "torch": (
        "torch.utils._pytree",
        "pytreekit._backends.torch",
        "pip install torch (the CPU build: add --index-url https://download.pytorch.org/whl/cpu)",
    ),
}
_REGISTRATION_ORDER = ("optree", "torch", "jax")  # the ones that can be undone first


class BackendNotInstalledError(ImportError):
    """A class asked for a backend whose library is not installed."""


def adapter(backend: str, cls: type) -> ModuleType:
    """The adapter module for ``backend``, or a clear error naming what to install."""
    if backend not in _ADAPTERS:
        raise ValueError(
            f"{cls.__qualname__}: unknown pytree backend {backend!r}; "
            f"choose from {tuple(_ADAPTERS)}."
        )
    library, module, advice = _ADAPTERS[backend]
    try:
        # Through __import__ every time (cheap once loaded), so the library's absence is seen
        # however it comes about, even after the adapter was first imported.
        __import__(library)
        return importlib.import_module(module)
    except ImportError as error:
        raise BackendNotInstalledError(
            f"{cls.__qualname__} asks for the {backend!r} pytree backend, but {backend} is not "
            f"installed ({error}). Install it with: {advice}."
        ) from error


def key_factories(backends: Iterable[str], cls: type) -> dict[str, KeyFactory]:
    """Each backend's key type, checking first that every backend is known and installed."""
    return {backend: adapter(backend, cls).KEY for backend in backends}


def register_all(cls: type, nodes: NodeFunctions, backends: Iterable[str]) -> None:
    """Register ``cls`` with each backend, or with none (a refusal undoes the ones before)."""
    order = sorted(backends, key=_REGISTRATION_ORDER.index)
    done: list[ModuleType] = []
    try:
        for backend in order:
            module = adapter(backend, cls)
            module.register(cls, nodes)
            done.append(module)
    except BaseException:
        for module in reversed(done):
            module.unregister(cls)
        raise


def register_backend(cls: type, backend: str, /) -> None:
    """Register a pytree class with one more registry (``"jax"``, ``"optree"``, ``"torch"``).

    For classes decorated elsewhere without the backend you need (a library's classes). The
    class must already be a pytree class; subclasses defined afterwards inherit the backend.
    Registering a backend the class already has does nothing.

    Args:
        cls: A class decorated with ``@pytree_class`` (not an instance).
        backend: The registry's name.

    Raises:
        TypeError: ``cls`` is not a pytree class, or is an instance.
        ValueError: ``backend`` is not one of the names above.
        BackendNotInstalledError: The registry's library is not installed (the message says how
            to install it).

    >>> import optree
    >>> import pytreekit
    >>> @pytreekit.pytree_class  # imagine it comes from a library: registered with JAX only
    ... class ThirdPartyModel:
    ...     weights: list
    >>> pytreekit.register_backend(ThirdPartyModel, "optree")
    >>> optree.tree_leaves(ThirdPartyModel([1.0, 2.0]), namespace="pytreekit")
    [1.0, 2.0]
    """
    spec = spec_of(cls, "register_backend()")
    if not isinstance(cls, type):
        raise TypeError(
            f"register_backend() takes a class, got an instance of {type(cls).__qualname__}"
        )
    with decoration_lock:
        spec = spec_of(cls, "register_backend()")
        if backend in spec.backends:
            return
        (make_key,) = key_factories([backend], cls).values()
        table = spec.table
        with table.lock:
            table.add_key_factory(backend, make_key)
            spec.nodes.regenerate()
        register_all(cls, spec.nodes, [backend])
        setattr(cls, SPEC_ATTR, dataclasses.replace(spec, backends=(*spec.backends, backend)))
