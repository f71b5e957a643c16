"""What differs between the supported versions of JAX and CPython, for the tests: one place.

- ``message(key, **names)``: a regular expression that matches the message JAX or CPython prints
  for ``key`` in every supported version, with the names it must contain filled in (escaped).
  Tests match a third party's message through it only, never verbatim: what a message must name
  (the field, the argument, the class) is checked, the wording around it is each version's own.
- Feature flags for APIs newer than the floor (JAX 0.4.35), so a test that needs one says why it
  skips instead of failing at the floor.

The supported range and the cells of ``.ci/run`` that test it are in ``docs/versions.md``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import re
import sys

import jax
import pytest

PYTHON = sys.version_info[:2]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


JAX = _version(jax.__version__)

# -- feature flags ------------------------------------------------------------------------------

# Python 3.14 defers annotations (PEP 649/749): a class may name one defined below it, and
# annotationlib reads annotations in several formats.
DEFERRED_ANNOTATIONS = PYTHON >= (3, 14)

needs_deferred_annotations = pytest.mark.skipif(
    not DEFERRED_ANNOTATIONS,
    reason=f"annotations are deferred from Python 3.14 on (PEP 649; this is "
    f"{sys.version.split()[0]}): before, a name not defined yet fails where it is written",
)

# Keyword arguments of inspect.get_annotations for each format it reads: VALUE only, before 3.14.
ANNOTATION_FORMATS: dict[str, dict[str, object]] = {"VALUE": {}}
if DEFERRED_ANNOTATIONS:
    import annotationlib

    ANNOTATION_FORMATS = {
        format.name: {"format": format}
        for format in (
            annotationlib.Format.VALUE,
            annotationlib.Format.FORWARDREF,
            annotationlib.Format.STRING,
        )
    }

# Python 3.14: dataclasses.make_dataclass(..., decorator=...) applies a decorator of one's own.
MAKE_DATACLASS_DECORATOR = "decorator" in inspect.signature(dataclasses.make_dataclass).parameters

needs_make_dataclass_decorator = pytest.mark.skipif(
    not MAKE_DATACLASS_DECORATOR,
    reason=f"dataclasses.make_dataclass(decorator=...) is new in Python 3.14 (this is "
    f"{sys.version.split()[0]})",
)

# Python 3.13: copy.replace(obj, **changes), through obj.__replace__.
HAS_COPY_REPLACE = hasattr(copy, "replace")

needs_copy_replace = pytest.mark.skipif(
    not HAS_COPY_REPLACE,
    reason=f"copy.replace is new in Python 3.13 (this is {sys.version.split()[0]})",
)

# Python 3.14: dataclasses' fields carry a docstring (dataclasses.field(doc=...), Field.doc).
DATACLASSES_FIELD_DOC = "doc" in inspect.signature(dataclasses.field).parameters

needs_dataclasses_field_doc = pytest.mark.skipif(
    not DATACLASSES_FIELD_DOC,
    reason=f"dataclasses.field(doc=...) is new in Python 3.14 (this is {sys.version.split()[0]})",
)

# PyTreeDef.from_node_data_and_children (forging a treedef from node data): not in JAX 0.4.35.
HAS_FROM_NODE_DATA_AND_CHILDREN = hasattr(jax.tree_util.PyTreeDef, "from_node_data_and_children")

# jax.tree_util.register_dataclass(cls) without data_fields/meta_fields: in JAX 0.4.35 both
# lists are required positional arguments.
_DATACLASS_PARAMETERS = inspect.signature(jax.tree_util.register_dataclass).parameters
REGISTER_DATACLASS_INFERS_FIELDS = (
    _DATACLASS_PARAMETERS["data_fields"].default is not inspect.Parameter.empty
)

# shard_map: jax.shard_map from JAX 0.6 on; jax.experimental.shard_map before (0.4.35, 0.5).
try:
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map  # type: ignore[no-redef]

# Varying manual axes: from JAX 0.6 on, a value's type inside shard_map names the mesh axes it
# varies over (float32[2]{V:i}), and a tangent must carry its primal's (check_vma=True).
HAS_VARYING_MANUAL_AXES = "check_vma" in inspect.signature(shard_map).parameters

# Explicit mesh axes (the sharding part of every value's type), entered with jax.set_mesh: JAX 0.7
# on. JAX 0.5 and 0.6 have them as an experiment (jax.sharding.use_mesh), where an eager
# custom_jvp rule cannot give an integer output a zero tangent JAX accepts, however it is made.
HAS_EXPLICIT_MESH_AXES = hasattr(jax, "set_mesh") and hasattr(jax.sharding, "AxisType")


@contextlib.contextmanager
def use_explicit_mesh(devices, axis):
    """A one-axis mesh over ``devices`` whose axis is Explicit, entered (JAX 0.7 and later)."""
    mesh = jax.make_mesh(
        (len(devices),), (axis,), devices=devices, axis_types=(jax.sharding.AxisType.Explicit,)
    )
    with jax.set_mesh(mesh):
        yield mesh


needs_from_node_data_and_children = pytest.mark.skipif(
    not HAS_FROM_NODE_DATA_AND_CHILDREN,
    reason=f"needs PyTreeDef.from_node_data_and_children, which JAX {jax.__version__} lacks",
)
needs_register_dataclass_inference = pytest.mark.skipif(
    not REGISTER_DATACLASS_INFERS_FIELDS,
    reason=f"needs jax.tree_util.register_dataclass(cls) without field lists, which JAX "
    f"{jax.__version__} lacks",
)


def _plain_custom_rules_jaxprs() -> tuple[str, str]:
    """The jaxprs of a plain ``jax.custom_jvp`` and a plain ``jax.custom_vjp`` function: what this
    JAX prints for the functions and rules it is given (the reference for pytreekit's methods)."""

    @jax.custom_jvp
    def plain_jvp_function(x):
        return x

    @plain_jvp_function.defjvp
    def plain_jvp_rule(primals, tangents):
        return primals[0], tangents[0]

    @jax.custom_vjp
    def plain_vjp_function(x):
        return x

    def plain_forward(x):
        return x, None

    def plain_backward(_, g):
        return (g,)

    plain_vjp_function.defvjp(plain_forward, plain_backward)
    return (
        str(jax.make_jaxpr(plain_jvp_function)(1.0)),
        str(jax.make_jaxpr(plain_vjp_function)(1.0)),
    )


_JVP_JAXPR, _VJP_JAXPR = _plain_custom_rules_jaxprs()
# Whether jaxprs name a custom_jvp function ("name=f"; pytreekit's JVP rules are named through
# the same parameter) and a custom_vjp's rules ("fwd=...", "bwd=..."): JAX 0.4.35 prints neither.
JAXPR_NAMES_CUSTOM_JVP_FUNCTIONS = "name=plain_jvp_function" in _JVP_JAXPR
JAXPR_NAMES_CUSTOM_VJP_RULES = (
    "fwd=plain_forward" in _VJP_JAXPR and "bwd=plain_backward" in _VJP_JAXPR
)

needs_jaxpr_rule_names = pytest.mark.skipif(
    not JAXPR_NAMES_CUSTOM_VJP_RULES,
    reason=f"JAX {jax.__version__} does not name a custom_vjp's rules in jaxprs",
)

# What JAX raises for an argument that is not a JAX type ("... is not a valid JAX type"): a
# TypeError in recent JAX; JAX 0.4.35 raises jax._src.interpreters.xla.InvalidInputException.
try:
    from jax._src.interpreters.xla import InvalidInputException as _InvalidInput
except ImportError:  # moved or gone: TypeError alone
    _InvalidInput = TypeError

INVALID_JAX_TYPE_ERRORS: tuple[type[BaseException], ...] = (TypeError, _InvalidInput)


# -- messages -----------------------------------------------------------------------------------

# Each entry: the variants, as regular expressions with {name} placeholders for the values a test
# passes (escaped before substitution). One entry per message a test matches; each variant says
# which versions print it.
_MESSAGES: dict[str, tuple[str, ...]] = {
    # dataclasses: Python 3.11 names the argument only; 3.12 and later name the default before it.
    "dataclasses.non_default_after_default": (
        r"non-default argument {field} follows default argument",
    ),
}


def message(key: str, **names: object) -> str:
    """A regular expression matching the message ``key`` of every supported version, with
    ``names`` (each value's ``repr`` when it is a str, as the messages quote them) filled in."""
    variants = _MESSAGES[key]
    escaped = {
        name: re.escape(repr(value) if isinstance(value, str) else str(value))
        for name, value in names.items()
    }
    return "|".join(f"(?:{variant.format(**escaped)})" for variant in variants)
