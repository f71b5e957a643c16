"""The classes wing: everything about one decorated class. Its spec and fields, the dataclass
hand-over, the layouts (the field rule's only home), the generated ``__init__`` and node
functions, and the methods installed on it. Map: README.md.

Modules above (the decorator, the backends, the artifacts wing) import from here, never from
the modules inside.
"""

from __future__ import annotations

from .dataclass import changed_since, generated_init, later_run, prepare
from .fields import MISSING, Field, field, flags
from .frozen import FrozenInstanceError
from .init import init_wrapper, prove_init
from .layouts import (
    FixedLayouts,
    KeyFactory,
    Layout,
    LayoutTable,
    LearnedLayouts,
    Storage,
    declare_sent,
    layout_for,
    publish,
    resolved,
    table_for,
)
from .methods import apply as apply_methods
from .methods import plan as plan_methods
from .methods import restricted_state_check
from .nodes import NodeFunctions
from .pickling import StandIn, new_object, restored
from .replace import replace
from .spec import (
    ClassSpec,
    Options,
    copied_spec,
    decoration_lock,
    fields,
    is_pytree_class,
    own_spec,
    spec_of,
)

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
    "apply_methods",
    "changed_since",
    "copied_spec",
    "declare_sent",
    "decoration_lock",
    "field",
    "fields",
    "flags",
    "generated_init",
    "init_wrapper",
    "is_pytree_class",
    "later_run",
    "layout_for",
    "new_object",
    "own_spec",
    "plan_methods",
    "prepare",
    "prove_init",
    "publish",
    "replace",
    "resolved",
    "restored",
    "restricted_state_check",
    "spec_of",
    "table_for",
]
