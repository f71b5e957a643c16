"""Static data written with pickle: by pytreekit 0.2 (format 1), by the versions before
artifacts were data (format 2), and by this one for a class opted in with
``pickle_static_fields``. Unpickling runs whatever code the bytes name, so such data is read only
inside ``allow_pickled_artifacts(...)``, for the classes it names, and a pickle only an opted-in
class writes is refused for any other class. The format is told from pickle's opcodes, without
unpickling.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import pickle
import pickletools
import threading
import weakref
from typing import Any, TypeVar

from .._classes import spec_of
from .._names import by_reference, import_by_name
from .schema import FORMAT
from .static_data import StaticDataError

C = TypeVar("C", bound=type)
_lock = threading.Lock()
_pickled_classes: weakref.WeakSet[type] = weakref.WeakSet()
_PICKLED_BY = {
    1: "pytreekit 0.2 (format 1)",
    2: "a version of pytreekit from before artifacts were data (format 2)",
    3: "pytreekit for a class opted in with pytreekit.pickle_static_fields (format 3)",
    4: "pytreekit for a class opted in with pytreekit.pickle_static_fields (format 4)",
}


def opted_in(cls: type) -> bool:
    """Whether ``cls`` writes its static fields with pickle."""
    return cls in _pickled_classes


# -- the two opt-ins to pickle ------------------------------------------------------------------


def pickle_static_fields(cls: C, /) -> C:
    """Store the static fields of ``cls`` with pickle in the artifacts it is written to
    (``jax.export``, torch treespecs), for values static data cannot hold. **Unsafe**: loading
    such an artifact runs whatever code its bytes name, so it is refused unless loaded inside
    ``allow_pickled_artifacts()``. Prefer a plain value or ``register_static_codec``.

    Applies to ``cls`` itself (not its subclasses), from the next artifact written on. Returns
    ``cls``, so it can decorate the class (above ``@pytree_class``).

    Args:
        cls: A class decorated with ``@pytree_class``.

    Returns:
        ``cls``.

    Raises:
        TypeError: ``cls`` is not a pytree class, or is an instance.

    >>> import pytreekit
    >>> @pytreekit.pickle_static_fields
    ... @pytreekit.pytree_class
    ... class Legacy:
    ...     options: object = pytreekit.field(static=True, default=None)
    """
    spec_of(cls, "pickle_static_fields()")
    if not isinstance(cls, type):
        raise TypeError(
            f"pickle_static_fields() takes a class, got an instance of {type(cls).__qualname__}"
        )
    with _lock:
        _pickled_classes.add(cls)
    return cls


class _Permission:
    """One ``allow_pickled_artifacts`` block: alive in the thread that entered it, until its
    ``__exit__`` (a task or a copied context keeps the object, not the permission)."""

    __slots__ = ("alive", "classes", "thread")

    def __init__(self, classes: frozenset[type]) -> None:
        self.classes = classes
        self.thread = threading.get_ident()
        self.alive = False

    def covers(self, cls: type) -> bool:
        return (
            self.alive
            and self.thread == threading.get_ident()
            and (cls in self.classes if self.classes else cls in _pickled_classes)
        )


_permissions: contextvars.ContextVar[tuple[_Permission, ...]] = contextvars.ContextVar(
    "pytreekit_pickle_allowed", default=()
)


class allow_pickled_artifacts:
    """Within this block (in this thread), load artifacts whose static fields were written with
    pickle for ``classes``: by pytreekit 0.2 and the versions before artifacts were data, or for a
    class opted in with ``pickle_static_fields``. Without classes named, for the classes opted in
    only. **Unsafe**: unpickling runs whatever code the artifact names; use it only for artifacts
    you trust, and export them again to get data.

    The permission ends with the block, also for a task or a copied context created inside (one
    running in this thread while the block is open has it); a thread started inside never has it
    (also where threads inherit the context, ``PYTHON_THREAD_INHERIT_CONTEXT=1``).

    Args:
        *classes: The pytree classes whose pickled static fields may be read.

    >>> import pytreekit
    >>> with pytreekit.allow_pickled_artifacts():
    ...     pass  # jax.export.deserialize(trusted_old_artifact)
    """

    def __init__(self, *classes: type) -> None:
        for cls in classes:
            spec_of(cls, "allow_pickled_artifacts()")
        self._permission = _Permission(frozenset(classes))
        self._token: contextvars.Token[tuple[_Permission, ...]] | None = None

    def __enter__(self) -> None:
        if self._token is not None:
            raise RuntimeError("an allow_pickled_artifacts(...) block is entered once")
        self._permission.alive = True
        self._token = _permissions.set((*_permissions.get(), self._permission))

    def __exit__(self, *exc: object) -> None:
        self._permission.alive = False
        if self._token is not None:
            _permissions.reset(self._token)


def _pickle_allowed(cls: type) -> bool:
    return any(permission.covers(cls) for permission in _permissions.get())


class _Pickler(pickle.Pickler):
    """Pickle, with objects found by name (``jnp.tanh``) stored by reference."""

    def reducer_override(self, obj: Any) -> Any:
        name = by_reference(obj)
        return NotImplemented if name is None else (import_by_name, name)


def pickled(state: Any, layout: Any, what: str) -> bytes:
    """``state`` pickled (its last item: the static values of ``layout``'s fields)."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=4).dump(state)
    except Exception as error:
        raise _unpicklable(layout, state[-1], what, error) from error
    return buffer.getvalue()


def _unpicklable(layout: Any, statics: tuple[Any, ...], what: str, error: Exception) -> TypeError:
    cls, static_names = layout.cls, layout.static_names
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
        f"{what} stores the static fields of {cls.__qualname__} with pickle (the class is opted "
        f"in with pytreekit.pickle_static_fields), but {cls.__qualname__}.{name} holds {text}, "
        f"which pickle cannot store ({type(error).__name__}: {error}). Use a value defined at "
        f"module level, or make {name} a non-static field."
    )


def _pickle_error(value: Any) -> Exception | None:
    try:
        _Pickler(io.BytesIO(), protocol=4).dump(value)
    except Exception as error:
        return error
    return None


def unpickled(raw: bytes, cls: type) -> Any:
    written = _pickled_format(raw)
    if written in (3, FORMAT) and cls not in _pickled_classes:
        raise StaticDataError(
            f"its static fields are pickled as pytreekit writes them only for a class opted in "
            f"with pytreekit.pickle_static_fields, and {cls.__qualname__} is not: the artifact "
            f"was edited. It is refused, also inside allow_pickled_artifacts()."
        )
    if not _pickle_allowed(cls):
        writer = _PICKLED_BY.get(written) if written is not None else "an unknown writer"
        again = (
            ""
            if written == FORMAT  # an opted-in class would write pickle again
            else ", then export it again: this version writes data that loading cannot run"
        )
        raise StaticDataError(
            f"its static fields were written with pickle by "
            f"{writer or f'an unknown writer (format {written})'}, and unpickling runs whatever "
            f"code the bytes name, so it is refused. If you trust the artifact, load it inside "
            f"`with pytreekit.allow_pickled_artifacts({cls.__qualname__}):`{again}."
        )
    try:
        return pickle.loads(raw)
    except Exception as error:
        raise StaticDataError(
            f"its pickled static fields cannot be unpickled ({type(error).__name__}: "
            f"{error!s:.200})."
        ) from error


_INTS = frozenset({"BININT1", "BININT2", "BININT", "INT", "LONG1"})


def _pickled_format(raw: bytes) -> int | None:
    """The format number (the tuple's first int) read from the opcodes, without unpickling."""
    with contextlib.suppress(Exception):  # malformed opcodes: the writer is unknown
        for opcode, argument, _ in pickletools.genops(raw):
            if opcode.name in ("PROTO", "FRAME", "MARK"):
                continue
            return argument if opcode.name in _INTS and type(argument) is int else None
    return None
