"""Aux data as bytes, for the registries that write treedefs to disk: ``jax.export`` (registered
automatically with the jax backend) and ``torch.export`` (the torch backend's dumpable context).

A class's aux data holds its static values (and, without annotations, the instance's layout), so
a serialized treedef stores them: pickled, which stores functions and classes by reference
(module and name). Reading such an artifact back unpickles it, so load only artifacts you trust,
as with any pickle.

Each class is registered under ``"<module>:<qualname>"`` for ``jax.export`` and
``"<module>.<qualname>"`` for torch (torch's own convention), so a fresh process that imports the
defining module finds it. Defining a class again under the same name (a notebook cell run twice)
points the name at the newest class: artifacts read afterwards produce instances of it.
"""

from __future__ import annotations

import base64
import pickle
import threading
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._nodes import NodeFunctions

_FORMAT = 1  # bump when the layout of the pickled tuple changes
_lock = threading.Lock()


def export_name(cls: type) -> str:
    """The name ``jax.export`` artifacts store for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _static_names(nodes: NodeFunctions, aux: Any) -> tuple[str, ...]:
    if nodes.annotated:
        assert nodes.primary is not None
        return nodes.primary.static_names
    return tuple(aux[0].static_names)


def dump_aux(nodes: NodeFunctions, aux: Any, what: str) -> bytes:
    """``aux`` as bytes: format, field names (``None`` when annotated), static names, values.

    ``what`` names the consumer in the error for a value pickle cannot store.
    """
    names, statics = nodes.aux_state(aux)
    static_names = _static_names(nodes, aux)
    try:
        return pickle.dumps((_FORMAT, names, static_names, statics), protocol=4)
    except Exception as error:
        raise _unpicklable(nodes, static_names, statics, what, error) from error


def load_aux(nodes: NodeFunctions, data: bytes | bytearray) -> Any:
    """The aux data ``dump_aux`` wrote, checked against the class as it is now."""
    cls = nodes.spec.cls
    state = pickle.loads(bytes(data))
    if not (isinstance(state, tuple) and len(state) == 4 and state[0] == _FORMAT):
        written = state[0] if isinstance(state, tuple) and state else None
        raise ValueError(
            f"cannot read the serialized treedef of {cls.__qualname__}: it was written by an "
            f"incompatible version of pytreekit (format {written!r}, this version reads format "
            f"{_FORMAT})."
        )
    _, names, static_names, statics = state
    if nodes.annotated:
        expected = _static_names(nodes, None)
        if tuple(static_names) != expected:
            raise TypeError(
                f"cannot read the serialized treedef of {cls.__qualname__}: it was written when "
                f"the class's static fields were {tuple(static_names)}, but now they are "
                f"{expected}. Export the function again with the current class."
            )
    return nodes.aux_from_state(names, statics)


def _unpicklable(
    nodes: NodeFunctions,
    static_names: tuple[str, ...],
    statics: tuple[Any, ...],
    what: str,
    error: Exception,
) -> TypeError:
    cls = nodes.spec.cls
    culprits = [
        (name, value, value_error)
        for name, value in zip(static_names, statics, strict=True)
        if (value_error := _pickle_error(value)) is not None
    ]
    # Pickle failing on the tuple but on no value alone is not expected; name them all then.
    name, value, error = culprits[0] if culprits else (", ".join(static_names), statics, error)
    return TypeError(
        f"{what} stores the static fields of {cls.__qualname__} with pickle, but "
        f"{cls.__qualname__}.{name} holds {_short(value)}, which pickle cannot store "
        f"({type(error).__name__}: {error}). Use a value defined at module level (functions "
        f"and classes are stored by reference: a lambda or a function defined inside another "
        f"function cannot be), or make {name} a non-static field."
    )


def _pickle_error(value: Any) -> Exception | None:
    try:
        pickle.dumps(value, protocol=4)
    except Exception as error:
        return error
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# -- jax.export ---------------------------------------------------------------------------------


def register_jax_export(cls: type, nodes: NodeFunctions) -> None:
    """Let ``jax.export`` serialize treedefs holding ``cls`` (called once per class, after its
    ``jax.tree_util`` registration)."""
    from jax import export

    name = export_name(cls)

    def serialize_auxdata(aux: Any) -> bytes:
        return dump_aux(nodes, aux, "jax.export")

    def deserialize_auxdata(data: bytes) -> Any:
        return load_aux(nodes, data)

    serialize_auxdata.__pytreekit_class__ = cls  # type: ignore[attr-defined]
    with _lock:
        try:
            export.register_pytree_node_serialization(
                cls,
                serialized_name=name,
                serialize_auxdata=serialize_auxdata,
                deserialize_auxdata=deserialize_auxdata,
            )
        except ValueError:
            _register_again(cls, name, serialize_auxdata, deserialize_auxdata)


def _jax_registries() -> tuple[dict[type, Any], dict[str, Any], dict[type, Any]]:
    """jax.export's registries by type and by name, and jax.tree_util's (private: jax offers no
    way to point a registered name at another class). Empty if a jax moved them."""
    try:
        from jax._src.export import _export as registry
        from jax._src.tree_util import _registry as tree_registry

        return registry.serialization_registry, registry.deserialization_registry, tree_registry
    except (ImportError, AttributeError):
        return {}, {}, {}


def _register_again(cls: type, name: str, serialize: Any, deserialize: Any) -> None:
    """``jax.export`` refuses a second registration of a type or of a name; decide which."""
    by_type, by_name, tree_registry = _jax_registries()
    if cls in by_type:
        return  # registered by hand already: the user's registration stands
    previous = by_name.get(name)
    previous_cls = previous[0] if previous is not None else None
    if (
        previous_cls is not None
        and getattr(by_type.get(previous_cls, (None, None))[1], "__pytreekit_class__", None)
        is previous_cls
        and cls in tree_registry
    ):
        # The same module:qualname defined again (a notebook cell run twice): artifacts read from
        # now on produce the newest class; instances of the older one still serialize.
        by_type[cls] = (name, serialize)
        by_name[name] = (cls, deserialize, tree_registry[cls].from_iter)
        return
    warnings.warn(
        f"{cls.__qualname__} was not registered for jax.export serialization: the name {name!r} "
        f"is already registered for {previous_cls!r}. Exporting a function whose signature "
        f"holds {cls.__qualname__} will fail at serialize(); register it by hand with "
        f"jax.export.register_pytree_node_serialization under another name.",
        RuntimeWarning,
        stacklevel=2,
    )


# -- torch --------------------------------------------------------------------------------------


def torch_dumpable(nodes: NodeFunctions) -> tuple[Any, Any]:
    """``(to_dumpable_context, from_dumpable_context)`` for torch: the aux bytes as base64 text,
    so a treespec written by ``treespec_dumps`` or ``torch.export.save`` reads back equal."""

    def to_dumpable_context(context: Any) -> str:
        return base64.b64encode(dump_aux(nodes, context, "torch treespec_dumps")).decode("ascii")

    def from_dumpable_context(dumpable: str) -> Any:
        return load_aux(nodes, base64.b64decode(dumpable))

    return to_dumpable_context, from_dumpable_context
