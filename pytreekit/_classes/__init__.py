"""The classes wing: everything about one decorated class. Its spec and fields, the dataclass
hand-over, the layouts (the field rule's only home), the generated ``__init__`` and node
functions, and the methods installed on it. Map: README.md.

Modules above (the decorator, the backends, the artifacts wing) import from here, never from
the modules inside.
"""

from __future__ import annotations

from . import dataclass
from .codegen import prove_init
from .fields import MISSING, Field, field, flag
from .frozen import FrozenInstanceError
from .layouts import (
    FixedLayouts,
    KeyFactory,
    Layout,
    LayoutTable,
    LearnedLayouts,
    Storage,
    layout_for,
    publish,
    resolved,
)
from .methods import install, nearest_init
from .nodes import NodeFunctions
from .pickling import StandIn, new_object, restored
from .replace import replace
from .spec import ClassSpec, Options, decoration_lock, fields, is_pytree_class, own_spec, spec_of

__all__ = [
    "MISSING",
    "ClassSpec",
    "Field",
    "FixedLayouts",
    "FrozenInstanceError",
    "KeyFactory",
    "Layout",
    "LayoutTable",
    "LearnedLayouts",
    "NodeFunctions",
    "Options",
    "StandIn",
    "Storage",
    "dataclass",
    "decoration_lock",
    "field",
    "fields",
    "flag",
    "install",
    "is_pytree_class",
    "layout_for",
    "nearest_init",
    "new_object",
    "own_spec",
    "prove_init",
    "publish",
    "replace",
    "resolved",
    "restored",
    "spec_of",
]
