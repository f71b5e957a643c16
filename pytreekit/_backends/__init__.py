"""The pytree registries a class is registered with, and ``register_backend``. Each has an adapter
module beside this one (``register``, ``unregister``, ``KEY``: a child's key type), imported only
when a class asks for it. Registration is all or nothing: optree and torch, which can undo one,
go first; JAX, which cannot, last.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterable
from types import ModuleType

from .. import _markers as markers
from .._classes import ClassSpec, KeyFactory, NodeFunctions, decoration_lock, own_spec, spec_of
from .._compat import TORCH_PYTREE

# backend name -> (the library it needs, its adapter module, how to install it). pytreekit is
# installed from its clone, so the advice names the library itself, not an extra of pytreekit.
_ADAPTERS = {
    "jax": ("jax", "pytreekit._backends.jax", "pip install jax"),
    "optree": ("optree", "pytreekit._backends.optree", "pip install optree"),
    "torch": (
        TORCH_PYTREE,
        "pytreekit._backends.torch",
        "pip install torch (the CPU build: add --index-url https://download.pytorch.org/whl/cpu)",
    ),
}
_REGISTRATION_ORDER = ("optree", "torch", "jax")  # the ones that can be undone first


class BackendNotInstalledError(ImportError):
    """A class asked for a backend whose library is not installed; an ``ImportError``, whose
    message says how to install it.

    >>> from pytreekit import BackendNotInstalledError
    >>> issubclass(BackendNotInstalledError, ImportError)
    True
    """


def adapter(backend: str, cls: type) -> ModuleType:
    """The adapter module for ``backend``, or a clear error naming what to install."""
    if backend not in _ADAPTERS:
        raise ValueError(
            f"{cls.__qualname__}: unknown pytree backend {backend!r}; "
            f"choose from {tuple(_ADAPTERS)}."
        )
    library, module, advice = _ADAPTERS[backend]
    try:
        # Every time (cheap once loaded): the library's absence is seen however it comes about.
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
    """Register ``cls`` with each backend, or with none (a refusal undoes the ones before), and
    the classes following every backend with each backend new to them."""
    order = sorted(backends, key=_REGISTRATION_ORDER.index)
    undo: list[Callable[[], None]] = []
    try:
        for backend in order:
            module = adapter(backend, cls)
            module.register(cls, nodes)
            undo.append(functools.partial(module.unregister, cls))
            for follower in _followers:
                if follower is not cls:
                    undo.extend(_register_follower(follower, backend))
    except BaseException:
        for step in reversed(undo):
            step()
        raise
    _in_use.update(order)


# The classes following every backend in use, and the backends some class was registered with;
# both change under the decoration lock only.
_followers: list[type] = []
_in_use: set[str] = set()


def follow_every_backend(cls: type) -> None:
    """Register ``cls`` with every backend pytreekit registers any class with, now and later: a
    class others hold must be a node wherever they are (``Static``; a leaf to optree otherwise)."""
    with decoration_lock:
        # JAX too, whatever cls was decorated with: then no follower is ever registered with JAX
        # after a class's own JAX registration, which cannot be undone.
        backends = sorted({"jax", *_in_use}, key=_REGISTRATION_ORDER.index)
        undo: list[Callable[[], None]] = []
        try:
            for backend in backends:
                undo.extend(_register_follower(cls, backend))
        except BaseException:
            for step in reversed(undo):
                step()
            raise
        if cls not in _followers:
            _followers.append(cls)


def _register_follower(follower: type, backend: str) -> list[Callable[[], None]]:
    """Register ``follower`` with ``backend`` unless it is already: the step undoing it, if any."""
    spec = own_spec(follower)
    if spec is None or backend in spec.backends:
        return []
    _add_key_factory(spec, backend)
    module = adapter(backend, follower)
    module.register(follower, spec.nodes)
    setattr(follower, markers.SPEC, dataclasses.replace(spec, backends=(*spec.backends, backend)))

    def undo() -> None:
        module.unregister(follower)
        setattr(follower, markers.SPEC, spec)

    return [undo]


def _add_key_factory(spec: ClassSpec, backend: str) -> None:
    """Make ``spec``'s node functions ready for one more backend's keys."""
    (make_key,) = key_factories([backend], spec.cls).values()
    with spec.table.lock:
        spec.table.add_key_factory(backend, make_key)
        spec.nodes.regenerate()


def register_backend(cls: type, backend: str, /) -> None:
    """Register a pytree class with one more registry (``"jax"``, ``"optree"``, ``"torch"``).

    For classes decorated elsewhere without the backend you need (a library's classes). The
    class must already be a pytree class; its pytree subclasses, those defined before too, get
    the backend as well. Registering a backend the class already has does nothing.

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
    spec_of(cls, "register_backend()")  # a TypeError first for what is no pytree class
    if not isinstance(cls, type):
        raise TypeError(
            f"register_backend() takes a class, got an instance of {type(cls).__qualname__}"
        )
    with decoration_lock:
        _add_backend(cls, backend)


def _add_backend(cls: type, backend: str) -> None:
    """Register ``cls`` and its pytree subclasses, those made before too, with ``backend``."""
    spec = spec_of(cls, "register_backend()")
    if backend not in spec.backends:
        _add_key_factory(spec, backend)
        register_all(cls, spec.nodes, [backend])
        setattr(cls, markers.SPEC, dataclasses.replace(spec, backends=(*spec.backends, backend)))
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        if own_spec(sub) is not None:
            _add_backend(sub, backend)
