"""Artifacts: what ``jax.export`` and torch store of a pytree class's static fields, read back
without running code. The rest of pytreekit reaches the wing through these names only; see
README.md beside this file for its map."""

from __future__ import annotations

from .export import (
    ArtifactReference,
    artifact_references,
    is_namedtuple,
    leaves_of,
    register_jax_export,
    torch_dumpable,
)
from .legacy import allow_pickled_artifacts, pickle_static_fields
from .static_data import (
    StaticDataError,
    UnencodableError,
    add_safe_references,
    register_static_codec,
    safe_references,
)

__all__ = [
    "ArtifactReference",
    "StaticDataError",
    "UnencodableError",
    "add_safe_references",
    "allow_pickled_artifacts",
    "artifact_references",
    "is_namedtuple",
    "leaves_of",
    "pickle_static_fields",
    "register_jax_export",
    "register_static_codec",
    "safe_references",
    "torch_dumpable",
]
