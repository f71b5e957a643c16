"""Which pytree registries a class is registered with, and ``register_backend``.

Each registry has a thin adapter module beside this one; an adapter is imported only when a class
asks for its backend, so ``import pytreekit`` never imports optree or torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

from .._spec import ClassSpec, spec_of

# backend name -> (the library it needs, its adapter module, what pip installs it as)
_ADAPTERS = {
    "jax": ("jax", "pytreekit._backends.jax", "jax"),
    "optree": ("optree", "pytreekit._backends.optree", "pytreekit[optree]"),
    "torch": ("torch.utils._pytree", "pytreekit._backends.torch", "pytreekit[torch]"),
}


class BackendNotInstalledError(ImportError):
    """A class asked for a backend whose library is not installed."""


def adapter(backend: str, cls: type) -> ModuleType:
    """The adapter module for ``backend``, or a clear error naming what to install."""
    if backend not in _ADAPTERS:
        raise ValueError(
            f"{cls.__qualname__}: unknown pytree backend {backend!r}; "
            f"choose from {tuple(_ADAPTERS)}."
        )
    library, module, extra = _ADAPTERS[backend]
    try:
        # Through __import__ every time (cheap once loaded), so the library's absence is seen
        # however it comes about, even after the adapter was first imported.
        __import__(library)
        return importlib.import_module(module)
    except ImportError as error:
        raise BackendNotInstalledError(
            f"{cls.__qualname__} asks for the {backend!r} pytree backend, but {backend} is not "
            f"installed ({error}). Install it with: pip install '{extra}'"
        ) from error


def check_backends(backends: Iterable[str], cls: type) -> None:
    """Fail before the class is changed at all if any backend is unknown or missing."""
    for backend in backends:
        adapter(backend, cls)


def register_with(spec: ClassSpec, backends: Iterable[str]) -> None:
    for backend in backends:
        if backend in spec.backends:
            continue
        adapter(backend, spec.cls).register(spec.cls, spec.nodes)
        spec.backends.append(backend)


def register_backend(cls: type, backend: str, /) -> None:
    """Register an already-decorated pytree class with one more registry.

    For classes you do not own; subclasses defined afterwards inherit the backend.

    >>> pytreekit.register_backend(ThirdPartyModel, "torch")
    """
    spec = spec_of(cls, "register_backend()")
    if not isinstance(cls, type):
        raise TypeError(
            f"register_backend() takes a class, got an instance of {type(cls).__qualname__}"
        )
    register_with(spec, [backend])
