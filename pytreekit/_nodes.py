"""A class's node functions: the flatten and unflatten the registries hold (made once per class),
the code they run as the class's ``LayoutTable`` learns, and the generic paths behind them,
``replace`` included."""

from __future__ import annotations

import builtins
import gc
import types
from collections.abc import Callable, Sequence
from typing import Any

from ._codegen import compile_source, node_functions_source
from ._compat import torch_compiling
from ._fields import check_static_value
from ._layouts import LAYOUT_ATTR, Layout, LayoutTable

# Until a class is first used, its functions run this generic code, shared by every class: nothing
# is compiled when a class is decorated.
_GENERIC: dict[str, types.FunctionType] = {}
exec(
    "def flatten(obj):\n    return _flatten_generic(obj)\n"
    "def unflatten(aux, children):\n    return _unflatten_generic(aux, children)\n"
    "def observe(obj):\n    _observe_slow(obj)\n",
    {},
    _GENERIC,
)


class NodeFunctions:
    """``flatten``, ``unflatten``, ``observe`` (classes without annotations: run when
    ``__init__`` returns) and the keyed flattens of one class, following its ``LayoutTable``.

    Each version of their code is correct on its own, so swapping one in is a single store any
    thread may observe: generic until first use; then generated for the primary layout, falling
    back to the generic path; then, once instances of other layouts exist, checking the
    instance's layout marker first.
    """

    def __init__(self, table: LayoutTable) -> None:
        self.namespace: dict[str, Any] = {
            "__builtins__": builtins,
            "_new": object.__new__,
            "_setattr": object.__setattr__,
            "_hash": hash,
            "_Method": types.MethodType,
            "_referents": gc.get_referents,
            "_torch_compiling": torch_compiling,
            "_flatten_generic": self.flatten_generic,
            "_unflatten_generic": self.unflatten_generic,
            "_observe_traced": self.observe_traced,
        }
        made = {n: types.FunctionType(f.__code__, self.namespace, n) for n, f in _GENERIC.items()}
        self.flatten, self.unflatten, self.observe = made.values()
        self.first_use_hooks: list[Callable[[], None]] = []
        self.attach(table)

    def attach(self, table: LayoutTable) -> None:
        """Follow ``table`` from now on (a class decorated again keeps its registered functions)."""
        with table.lock:
            self.table = table
            self.cls = table.cls
            self.namespace.update(_cls=table.cls, _P=None, _observe_slow=table.observe_slow)
            table.on_change = self.regenerate
            for name, generic in _GENERIC.items():
                getattr(self, name).__code__ = generic.__code__
            self.regenerate()

    def add_first_use_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the class is first used (at once if it was)."""
        with self.table.lock:
            if self.table.used:
                hook()
            else:
                self.first_use_hooks.append(hook)

    def regenerate(self) -> None:
        """Put the code for what the table knows now into the functions (under its lock)."""
        table = self.table
        if table.primary is None or not table.used:
            return
        while self.first_use_hooks:
            self.first_use_hooks.pop(0)()
        source = node_functions_source(
            table.primary,
            table.storage,
            declared=table.declared,
            varied=table.varied,
            traced_init="torch" in table.key_factories,
        )
        self.namespace["_P"] = table.primary
        fresh: dict[str, Any] = {}
        compile_source(source, self.namespace, f"{self.cls.__qualname__} nodes", fresh)
        for name, function in fresh.items():
            getattr(self, name).__code__ = function.__code__

    def flatten_with_keys(self, backend: str) -> Callable[[Any], Any]:
        """The keyed flatten for one registry: ``((key, child), ...), aux``."""
        flatten = self.flatten

        def flatten_with_keys(obj: Any) -> tuple[tuple[tuple[Any, Any], ...], Any]:
            children, aux = flatten(obj)
            table = self.table
            layout = table.primary if table.declared else aux[0]
            assert layout is not None
            return tuple(zip(layout.keys[backend], children, strict=True)), aux

        return flatten_with_keys

    def flatten_with_names(self, obj: Any) -> tuple[Any, Any, tuple[str, ...]]:
        """optree's flatten: ``children, aux, entries`` (the entries are the field names)."""
        children, aux = self.flatten(obj)
        return children, aux, self.layout_in(aux).child_names

    # -- the generic paths ---------------------------------------------------------------------

    def flatten_generic(self, obj: object) -> tuple[tuple[Any, ...], tuple[Any, ...] | None]:
        table = self.table
        table.first_use()
        layout = table.layout_of(obj)
        try:
            children = tuple([getattr(obj, n) for n in layout.child_names])
            statics = tuple([getattr(obj, n) for n in layout.static_names])
        except AttributeError:
            self._missing_field(obj, layout)
            raise
        if table.declared:
            return children, statics or None
        return children, (layout, *statics)

    def layout_in(self, aux: Any) -> Layout:
        """The layout of the instance ``aux`` data was flattened from (the class's own, for an
        annotated class); refused if the data is not this class's."""
        table = self.table
        if table.declared:
            assert table.primary is not None
            return table.primary
        layout = aux[0] if type(aux) is tuple and aux else None
        if not isinstance(layout, Layout) or layout.cls is not self.cls:
            raise TypeError(
                f"cannot unflatten {self.cls.__qualname__} from aux data {aux!r}: it was not "
                f"made by flattening an instance of this class."
            )
        return table.intern(layout.names, layout.static)

    def unflatten_generic(self, aux: Any, children: Sequence[Any]) -> object:
        table = self.table
        table.first_use()
        layout = self.layout_in(aux)
        obj: Any = object.__new__(self.cls)
        statics = iter(aux or ()) if table.declared else iter(aux[1:])
        child_iter = iter(children)
        for name, static in zip(layout.names, layout.static, strict=True):
            object.__setattr__(obj, name, next(statics) if static else next(child_iter))
        if not table.declared:
            table.note(obj, layout)
        return obj

    def replace(self, obj: object, changes: dict[str, Any]) -> object:
        """A copy of ``obj`` with ``changes``, made without ``__init__`` (``pytreekit.replace``)."""
        table = self.table
        layout = table.layout_of(obj)
        for name, value in changes.items():
            if name not in layout.names:
                raise TypeError(
                    f"replace(): {self.cls.__qualname__} has no field {name!r}; its fields are "
                    f"{layout.names}."
                )
            if name in layout.static_names:
                check_static_value(self.cls, name, value)
        new: Any = object.__new__(self.cls)
        for name in layout.names:
            try:
                value = changes[name] if name in changes else getattr(obj, name)
            except AttributeError:
                self._missing_field(obj, layout)
                raise
            object.__setattr__(new, name, value)
        if not table.declared and table.storage.has_dict and layout is not table.primary:
            new.__dict__[LAYOUT_ATTR] = layout
        return new

    def observe_traced(self, obj: object) -> None:
        """``observe`` while torch.compile traces ``__init__``: the garbage collector is out of
        its reach, reading the instance dict is not."""
        primary = self.table.primary
        if primary is not None and tuple(obj.__dict__) == primary.names:
            self.table.check_values(obj, primary)
            return
        self.table.observe_slow(obj)

    def _missing_field(self, obj: object, layout: Layout) -> None:
        """Name the field ``obj`` has no value for; return if it has them all (then the caller
        re-raises the AttributeError it caught)."""
        for name in layout.names:
            if not hasattr(obj, name):
                raise AttributeError(
                    f"{type(obj).__qualname__}.{name} is a field but this instance has no value "
                    f"for it, so it cannot be flattened. Set it in __init__ (or give the field a "
                    f"default)."
                ) from None

    # -- aux data as plain data (jax.export and torch write it to disk) -------------------------

    def aux_state(self, aux: Any) -> tuple[tuple[str, ...] | None, tuple[Any, ...]]:
        """``(field names, static values)``: everything in ``aux``, as plain data. ``names`` is
        ``None`` for annotated classes, whose class fixes the layout."""
        if self.table.declared:
            return None, tuple(aux or ())
        return self.layout_in(aux).names, tuple(aux[1:])

    def aux_from_state(self, names: Sequence[str] | None, static_values: Sequence[Any]) -> Any:
        """The aux data ``aux_state`` describes, read with the class as it is now; works in a
        process that never built an instance."""
        if self.table.declared:
            if names is not None:
                raise TypeError(
                    f"{self.cls.__qualname__} has field annotations, so its aux data names no "
                    f"fields; got names {tuple(names)!r}."
                )
            return tuple(static_values) or None
        if names is None:
            raise TypeError(
                f"{self.cls.__qualname__} has no field annotations: its aux data needs the "
                f"field names of the instance layout."
            )
        layout = self.table.intern(tuple(names))
        if len(static_values) != len(layout.static_names):
            raise TypeError(
                f"{self.cls.__qualname__}: {len(static_values)} static values for the static "
                f"fields {layout.static_names}."
            )
        return (layout, *static_values)
