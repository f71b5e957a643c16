"""Every private API of CPython, JAX and torch that pytreekit touches, and the JAX features that
differ between the supported versions, reached from here only.

Each private name is looked up once, with the versions it is known in; where one has moved, the
error says which name and what pytreekit needs it for, instead of a silent fallback (a renamed
``dataclasses._FIELD`` must not make every class lose its fields without a word).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax

_KNOWN_PYTHON = "3.11 to 3.13"


class PrivateAPIMoved(ImportError):
    """A private API pytreekit relies on is not where the supported versions keep it."""


def _private(owner: object, name: str, where: str, needed_for: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        raise PrivateAPIMoved(
            f"pytreekit needs {where}.{name} ({needed_for}), which this version does not have "
            f"(Python {sys.version.split()[0]}, jax {jax.__version__}; known in Python "
            f"{_KNOWN_PYTHON} and the jax versions pytreekit supports). Please report it, with "
            f"these versions."
        ) from None


# -- CPython's dataclasses --------------------------------------------------------------------

# Which entries of __dataclass_fields__ are fields and which are InitVar pseudo-fields: only the
# private markers tell them apart (an InitVar annotated as a string is still a string).
_FIELD = _private(dataclasses, "_FIELD", "dataclasses", "to tell fields from InitVars")
_FIELD_INITVAR = _private(dataclasses, "_FIELD_INITVAR", "dataclasses", "to find InitVars")
_PARAMS_FLAGS = ("init", "repr", "eq")


def is_field(f: dataclasses.Field[Any]) -> bool:
    return f._field_type is _FIELD  # type: ignore[attr-defined]


def is_init_var(f: dataclasses.Field[Any]) -> bool:
    return f._field_type is _FIELD_INITVAR  # type: ignore[attr-defined]


def record_dataclass_params(cls: type, *, init: bool, repr: bool, eq: bool) -> None:
    """Make ``cls.__dataclass_params__`` say what the class has: pytreekit asks dataclasses not to
    write ``__init__``, ``__repr__`` and ``__eq__`` (it writes its own), and tools read these
    flags."""
    params = cls.__dict__["__dataclass_params__"]
    for flag, value in zip(_PARAMS_FLAGS, (init, repr, eq), strict=True):
        _private(params, flag, "dataclasses._DataclassParams", "to record the class's flags")
        object.__setattr__(params, flag, value)


# -- JAX --------------------------------------------------------------------------------------

from jax._src import tree_util as _jax_tree_util  # noqa: E402 - JAX has no public registry query
from jax._src.export import _export as _jax_export_module  # noqa: E402 - nor an export one

_JAX_TREE_REGISTRY: dict[type, Any] = _private(
    _jax_tree_util, "_registry", "jax._src.tree_util", "to tell whether a class is registered"
)
_private(
    _private(_jax_tree_util, "_RegistryEntry", "jax._src.tree_util", "jax.export loading"),
    "from_iter",
    "jax._src.tree_util._RegistryEntry",
    "jax.export loading",
)


def registered_with_jax(cls: type) -> bool:
    return cls in _JAX_TREE_REGISTRY


def jax_from_children(cls: type) -> Callable[..., Any]:
    """How ``jax.export`` rebuilds ``cls`` from aux data and children (what JAX's own
    registration call stores)."""
    from_iter: Callable[..., Any] = _JAX_TREE_REGISTRY[cls].from_iter
    return from_iter


# JAX offers only a call that refuses a second registration; pytreekit writes these to let a
# registration by hand stand and to point a name defined again (a notebook cell run twice) at the
# newest class. (jax.export's serialization registry arrived in jax 0.4.35, pytreekit's floor.)
_export_by_type: dict[type, Any] = _private(
    _jax_export_module, "serialization_registry", "jax._src.export._export", "jax.export"
)
_export_by_name: dict[str, Any] = _private(
    _jax_export_module, "deserialization_registry", "jax._src.export._export", "jax.export"
)


def export_registries() -> tuple[dict[type, Any], dict[str, Any]]:
    """``jax.export``'s registries by type (writing) and by name (reading)."""
    return _export_by_type, _export_by_name


# -- torch ------------------------------------------------------------------------------------


def torch_pytree() -> ModuleType:
    """``torch.utils._pytree``: torch's pytree registry has no public module."""
    import torch.utils._pytree as torch_pytree

    return torch_pytree


def unregister_from_torch(cls: type) -> None:
    """Undo a torch registration (a later registry refused the class): torch's Python registry,
    and its C++ one (optree's namespace "torch") if torch registered there too."""
    pytree = torch_pytree()
    where = "torch.utils._pytree"
    _private(pytree, "_deregister_pytree_node", where, "to undo a registration")(cls)
    pending: list[Any] = _private(
        pytree, "_cxx_pytree_pending_imports", where, "to undo a registration"
    )
    pending[:] = [entry for entry in pending if entry[0][0] is not cls]
    if _private(pytree, "_cxx_pytree_imported", where, "to undo a registration"):
        import optree

        optree.unregister_pytree_node(cls, namespace="torch")


def torch_compiling() -> bool:
    """Whether torch.compile is tracing the caller (never true when torch was not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.compiler.is_compiling())
