"""Aux data as bytes, for the registries that write treedefs to disk: ``jax.export`` (registered
automatically with the jax backend) and ``torch.export`` (the torch backend's dumpable context).

A class's aux data holds its layout and static values, so a serialized treedef stores the field
names, the static names and the static values, pickled. Pickle stores functions and classes by
reference (module and name), and pytreekit stores the functions pickle cannot (``jnp.tanh``,
``jax.nn.relu``) by reference too. Reading such an artifact back unpickles it, so load only
artifacts you trust, as with any pickle.

Each class is registered under ``"<module>:<qualname>"`` for ``jax.export`` and
``"<module>.<qualname>"`` for torch (torch's own convention), so a fresh process that imports the
defining module finds it. The name is registered for reading when the class is decorated; the
class is registered for writing when it is first used, unless a registration made by hand with
``jax.export.register_pytree_node_serialization`` (JAX's documented route) came first: that one
stands. Defining a class again under the same name (a notebook cell run twice) points the name at
the newest class: artifacts read afterwards produce instances of it.
"""

from __future__ import annotations

import base64
import io
import pickle
import threading
import warnings
from typing import Any

from ._compat import export_registries, jax_from_children
from ._fields import findable_name, import_by_name
from ._nodes import NodeFunctions

_FORMAT = 1  # bump when the layout of the pickled tuple changes
_lock = threading.Lock()


def export_name(cls: type) -> str:
    """The name ``jax.export`` artifacts store for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


class _Pickler(pickle.Pickler):
    """Pickle, with objects found by name (``jnp.tanh``) stored by reference."""

    def reducer_override(self, obj: Any) -> Any:
        name = findable_name(obj)
        return NotImplemented if name is None else (import_by_name, name)


def dump_aux(nodes: NodeFunctions, aux: Any, what: str) -> bytes:
    """``aux`` as bytes: format, field names, static names, static values.

    ``what`` names the consumer in the error for a value pickle cannot store.
    """
    names, statics = nodes.aux_state(aux)
    static_names = nodes.layout_in(aux).static_names
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=4).dump((_FORMAT, names, static_names, statics))
    except Exception as error:
        raise _unpicklable(nodes.cls, static_names, statics, what, error) from error
    return buffer.getvalue()


def load_aux(nodes: NodeFunctions, data: bytes | bytearray) -> Any:
    """The aux data ``dump_aux`` wrote, checked against the class as it is now."""
    cls = nodes.cls
    state = pickle.loads(bytes(data))
    if not (isinstance(state, tuple) and len(state) == 4 and state[0] == _FORMAT):
        written = state[0] if isinstance(state, tuple) and state else None
        raise ValueError(
            f"cannot read the serialized treedef of {cls.__qualname__}: it was written by an "
            f"incompatible version of pytreekit (format {written!r}, this version reads format "
            f"{_FORMAT})."
        )
    _, names, static_names, statics = state
    table = nodes.table
    if table.declared and names is None:
        assert table.primary is not None
        expected = table.primary.static_names
        if tuple(static_names) != expected:
            raise TypeError(
                f"cannot read the serialized treedef of {cls.__qualname__}: it was written when "
                f"the class's static fields were {tuple(static_names)}, but now they are "
                f"{expected}. Export the function again with the current class."
            )
    return nodes.aux_from_state(names, statics)


def _unpicklable(
    cls: type, static_names: tuple[str, ...], statics: tuple[Any, ...], what: str, error: Exception
) -> TypeError:
    culprits = [
        (name, value, value_error)
        for name, value in zip(static_names, statics, strict=True)
        if (value_error := _pickle_error(value)) is not None
    ]
    # Pickle failing on the tuple but on no value alone is not expected; name them all then.
    name, value, error = culprits[0] if culprits else (", ".join(static_names), statics, error)
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return TypeError(
        f"{what} stores the static fields of {cls.__qualname__} with pickle, but "
        f"{cls.__qualname__}.{name} holds {text}, which pickle cannot store "
        f"({type(error).__name__}: {error}). Use a value defined at module level (functions "
        f"and classes are stored by reference: a lambda or a function defined inside another "
        f"function cannot be), or make {name} a non-static field."
    )


def _pickle_error(value: Any) -> Exception | None:
    try:
        _Pickler(io.BytesIO(), protocol=4).dump(value)
    except Exception as error:
        return error
    return None


# -- jax.export ---------------------------------------------------------------------------------


def register_jax_export(cls: type, nodes: NodeFunctions) -> None:
    """Let ``jax.export`` read artifacts naming ``cls`` now, and write them from the class's first
    use (called once per class, after its ``jax.tree_util`` registration)."""
    name = export_name(cls)

    def serialize_auxdata(aux: Any) -> bytes:
        return dump_aux(nodes, aux, "jax.export")

    def deserialize_auxdata(data: bytes) -> Any:
        return load_aux(nodes, data)

    serialize_auxdata.__pytreekit_class__ = cls  # type: ignore[attr-defined]
    deserialize_auxdata.__pytreekit_class__ = cls  # type: ignore[attr-defined]
    by_type, by_name = export_registries()
    with _lock:
        previous = by_name.get(name)
        if previous is None or getattr(previous[1], "__pytreekit_class__", None) is previous[0]:
            # Free, or ours for a class of the same name defined earlier (re-pointed).
            by_name[name] = (cls, deserialize_auxdata, jax_from_children(cls))
        elif previous[0] is not cls:
            warnings.warn(
                f"{cls.__qualname__} was not registered for jax.export serialization: the name "
                f"{name!r} is already registered for {previous[0]!r}. Exporting a function whose "
                f"signature holds {cls.__qualname__} will fail at serialize(); register it by "
                f"hand with jax.export.register_pytree_node_serialization under another name.",
                RuntimeWarning,
                stacklevel=2,
            )
            return

    def register_for_writing() -> None:
        with _lock:
            if cls not in by_type:  # a registration by hand, made before, stands
                by_type[cls] = (name, serialize_auxdata)

    nodes.add_first_use_hook(register_for_writing)


# -- torch --------------------------------------------------------------------------------------


def torch_dumpable(nodes: NodeFunctions) -> tuple[Any, Any]:
    """``(to_dumpable_context, from_dumpable_context)`` for torch: the aux bytes as base64 text,
    so a treespec written by ``treespec_dumps`` or ``torch.export.save`` reads back equal."""

    def to_dumpable_context(context: Any) -> str:
        return base64.b64encode(dump_aux(nodes, context, "torch treespec_dumps")).decode("ascii")

    def from_dumpable_context(dumpable: str) -> Any:
        return load_aux(nodes, base64.b64decode(dumpable))

    return to_dumpable_context, from_dumpable_context
