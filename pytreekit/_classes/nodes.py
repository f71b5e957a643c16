"""A class's node functions: the flatten, unflatten and keyed flattens the registries hold (made
once per class), ``observe`` and ``replace``, the code they run as the class's layout table learns,
and the generic paths behind them.

Aux data is ``(layout, *static_values)``: the layout says which fields the children and the static
values are, so any treedef can be unflattened, also after the class was decorated again and in a
process that never built an instance. The layout an annotated class declares is the exception,
whose aux data reads as ``register_dataclass``'s: its static values alone (``Layout.plain``), or,
without static fields, one object per class that prints as ``None`` (``Layout.bare``).
``carrying`` reads every form, ``aux_data`` writes the one flatten gives.
"""

from __future__ import annotations

import builtins
import functools
import gc
import itertools
import sys
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any

from .._compat import static_hash
from .codegen import BARE, PRIMARY, compile_source, key_name, node_functions_source
from .layouts import FLAT, NESTED_HASHES, Layout, LayoutTable, bound_inside, check

# Until a class is first used, its functions run this generic code, shared by every class: nothing
# is compiled when a class is decorated.
_GENERIC: dict[str, types.FunctionType] = {}
exec(
    "def flatten(obj):\n    return _flatten_generic(obj)\n"
    "def flatten_with_keys(obj, backend):\n    return _flatten_with_keys_generic(obj, backend)\n"
    "def unflatten(aux, children):\n    return _unflatten_generic(aux, children)\n"
    "def layout_of(obj):\n    return _layout_of_generic(obj)\n"
    "def observe(obj):\n    _observe_slow(obj)\n"
    "def replace(obj, changes):\n    return _replace_generic(obj, changes)\n",
    {},
    _GENERIC,
)
# One function object each per class.
_SINGLE = ("flatten", "unflatten", "layout_of", "observe", "replace")


class NodeFunctions:
    """``flatten``, ``unflatten``, the keyed flattens (one per registry that takes them),
    ``layout_of``, ``observe`` (run when a user's ``__init__`` returns) and ``replace`` of one
    class, following its layout table.

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
            "_hash": static_hash,
            "_Method": types.MethodType,
            "_check": check,
            "_Layout": Layout,
            "_nested": NESTED_HASHES,
            "_flat": FLAT,
            "_partial": functools.partial,
            "_inside": bound_inside,
            "_referents": gc.get_referents,
            "_modules": sys.modules,
            "_flatten_generic": self.flatten_generic,
            "_flatten_with_keys_generic": self.flatten_with_keys_generic,
            "_unflatten_generic": self.unflatten_generic,
            "_replace_generic": self.replace_generic,
            "_observe_traced": self.observe_traced,
            "_observe_slow": self.observe_slow,
            "_layout_of_generic": self.layout_of_generic,
        }
        made = [types.FunctionType(_GENERIC[n].__code__, self.namespace, n) for n in _SINGLE]
        self.flatten, self.unflatten, self.layout_of, self.observe, self.replace = made
        self.keyed: dict[str, types.FunctionType] = {}
        self.first_use_hooks: list[Callable[[], None]] = []
        # Every code object swapped out, kept alive: without the GIL a thread may still be
        # running one when it is replaced (a few per class: first use, varied, each backend).
        self.retired: list[types.CodeType] = []
        self.lock = threading.RLock()
        self._generations = itertools.count()
        self.attach(table)

    def attach(self, table: LayoutTable) -> None:
        """Follow ``table`` from now on (a class decorated again keeps its registered functions)."""
        # Under the functions' own lock, not the table's: a thread that holds an earlier table's
        # lock may be regenerating them (lock order: a table's, then this one).
        with self.lock:
            self.table = table
            self.cls = table.cls
            # One store each: a thread running these functions sees the old table or the new.
            self.namespace.update(_cls=table.cls)
            table.on_change = self.regenerate
            for name in _SINGLE:
                self._swap(getattr(self, name), _GENERIC[name].__code__)
            for function in self.keyed.values():
                self._swap(function, _GENERIC["flatten_with_keys"].__code__)
            self.regenerate()

    def flatten_with_keys(self, backend: str) -> types.FunctionType:
        """The keyed flatten for one registry, ``((key, child), ...), aux``: the same function
        object every time."""
        with self.table.lock:
            function = self.keyed.get(backend)
            if function is None:
                generic = _GENERIC["flatten_with_keys"]
                function = types.FunctionType(
                    generic.__code__, self.namespace, f"flatten_with_keys_{backend}", (backend,)
                )
                self.keyed[backend] = function
                self.regenerate()
            return function

    def add_first_use_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the class is first used (at once if it was)."""
        with self.table.lock:
            if self.table.used:
                hook()
            else:
                self.first_use_hooks.append(hook)

    def regenerate(self) -> None:
        """Put the code for what the current table knows now into the functions (any table may
        ask: the last to run writes code for the table followed now)."""
        with self.lock:
            self._regenerate()

    def _regenerate(self) -> None:
        table = self.table
        primary = table.primary
        if primary is None or not table.used:
            return
        while self.first_use_hooks:
            self.first_use_hooks.pop(0)()
        # A backend whose registration was undone keeps its function, unused, generic.
        keyed = tuple(backend for backend in self.keyed if backend in table.key_factories)
        # Names of this generation, put in the namespace before any code reading them runs: a
        # thread sees one version of each function, complete, and the names it reads.
        suffix = f"_{next(self._generations)}"
        fresh_names: dict[str, Any] = {
            f"{PRIMARY}{suffix}": primary,
            f"{BARE}{suffix}": primary.bare,
        }
        for backend in keyed:
            fresh_names.update(
                (f"{key_name(backend, i)}{suffix}", key)
                for i, key in enumerate(primary.keys[backend])
            )
        self.namespace.update(fresh_names)
        source = node_functions_source(
            primary,
            table.storage,
            exact=table.exact(primary),
            varied=table.varied,
            keyed=keyed,
            ordered=table.ordered,
            suffix=suffix,
        )
        fresh: dict[str, Any] = {}
        label = f"{self.cls.__qualname__} nodes"
        compile_source(source, self.namespace, label, fresh, self.cls)
        for function in [*(getattr(self, n) for n in _SINGLE), *(self.keyed[b] for b in keyed)]:
            function.__doc__ = fresh[function.__name__].__doc__
            self._swap(function, fresh[function.__name__].__code__)

    def _swap(self, function: types.FunctionType, code: types.CodeType) -> None:
        if function.__code__ is not code:
            self.retired.append(function.__code__)
            function.__code__ = code

    # -- the generic paths ---------------------------------------------------------------------

    def observe_slow(self, obj: object) -> None:
        self.table.observe_slow(obj)

    def layout_of_generic(self, obj: object) -> Layout:
        table = self.table
        table.first_use()  # instances built by a proven __init__ were never observed
        return table.layout_of(obj)

    def flatten_generic(self, obj: object) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        table = self.table
        table.first_use()
        layout = table.layout_of(obj)
        try:
            children = tuple([getattr(obj, n) for n in layout.child_names])
            statics = [getattr(obj, n) for n in layout.static_names]
        except AttributeError:
            self._missing_field(obj, layout)
            raise
        return children, self.aux_data(layout, statics)

    def flatten_with_keys_generic(self, obj: object, backend: str) -> tuple[Any, Any]:
        children, aux = self.flatten(obj)
        keys = self.carrying(aux)[0].keys[backend]
        return tuple(zip(keys, children, strict=True)), aux

    @staticmethod
    def aux_data(layout: Layout, statics: Sequence[Any]) -> Any:
        """The aux data flatten gives an instance of ``layout`` holding ``statics``."""
        if layout.bare is not None:
            return layout.bare
        return tuple(statics) if layout.plain else (layout, *statics)

    def carrying(self, aux: Any) -> tuple[Any, ...]:
        """``aux`` data, in any form flatten gave it (now or before), as ``(layout,
        *static_values)``, the layout interned in the class as it is now; refused if the data is
        not this class's."""
        if isinstance(aux, tuple) and aux:
            first = aux[0]
            if isinstance(first, Layout):
                if first.cls is self.cls:
                    return (self.table.intern(first.names, first.static), *aux[1:])
            else:
                declared = self.table.declared()  # aux data that is static values alone
                if declared is not None and len(aux) == len(declared.static_names):
                    return (declared, *aux)
        raise TypeError(
            f"cannot unflatten {self.cls.__qualname__} from aux data {aux!r}: it was not "
            f"made by flattening an instance of this class."
        )

    def unflatten_generic(self, aux: Any, children: Sequence[Any]) -> object:
        table = self.table
        table.first_use()
        layout, *static_values = self.carrying(aux)
        obj: Any = object.__new__(self.cls)
        statics = iter(static_values)
        child_iter = iter(children)
        for name, static in zip(layout.names, layout.static, strict=True):
            object.__setattr__(obj, name, next(statics) if static else next(child_iter))
        table.note(obj, layout)
        return obj

    def replace_generic(self, obj: object, changes: dict[str, Any]) -> object:
        """A copy of ``obj`` with ``changes``, made without ``__init__`` (``pytreekit.replace``)."""
        table = self.table
        table.first_use()
        layout = table.layout_of(obj)
        for name in changes:
            if name not in layout.names:
                raise TypeError(
                    f"replace(): {self.cls.__qualname__} has no field {name!r}; its fields are "
                    f"{layout.names}."
                )
        new: Any = object.__new__(self.cls)
        for name in layout.names:
            try:
                value = changes[name] if name in changes else getattr(obj, name)
            except AttributeError:
                self._missing_field(obj, layout)
                raise
            object.__setattr__(new, name, value)
        check(new, layout, obj)
        table.note(new, layout)
        return new

    def observe_traced(self, obj: object) -> None:
        """``observe`` while torch.compile traces ``__init__``: the garbage collector is out of
        its reach, reading the instance dict is not."""
        primary = self.table.primary
        if primary is not None and tuple(obj.__dict__) == primary.names:
            check(obj, primary)
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
