"""Flatten, unflatten and replace functions for one class, generated from its layout.

The code generated for a layout reads and writes the fields directly, so the hot path does no
introspection and runs no user code: unflatten and ``replace`` never call ``__init__``,
``__post_init__``, converters or a custom ``__setattr__`` (JAX unflattens with ``None``,
``object()`` sentinels and tracers).

Annotated classes have one layout, fixed by the class; their aux data is the tuple of static
values (``None`` without any). Classes without annotations have a layout per kind of instance
(see ``_layouts``); their aux data is ``(layout, *static_values)``. Their functions go through at
most three versions, each correct on its own, so that swapping one in is a single store that any
thread may observe at any time:

1. before any instance was seen: generic code that works out each instance's layout;
2. once the first layout is known (the *primary* one): code specialised for it, with the generic
   path as fallback when an attribute is missing;
3. once an instance with another layout exists (it carries its layout in ``__pytreekit_layout__``;
   the class attribute of that name holds the primary): flatten first checks that marker.

These functions are registry-independent; the backend adapters hand them to jax, optree and
torch, each with its own key type for key paths.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._codegen import compile_function, indent, retarget
from ._layouts import LAYOUT_ATTR, Layout, LayoutTable
from ._static import check_static_value

if TYPE_CHECKING:
    from ._spec import ClassSpec

KeyFactory = Callable[[str], Any]

# How many distinct instance-dict key tuples ``observe`` remembers per class (a class whose
# instances set arbitrary attributes must not grow this without bound).
_RAW_CACHE_SIZE = 256


class NodeFunctions:
    """The flatten/unflatten/replace functions of one class.

    The function objects are created once and stay the same for the life of the class (they are
    what the registries hold); the code inside them is regenerated as the class's layouts become
    known.
    """

    def __init__(self, spec: ClassSpec) -> None:
        self.spec = spec
        self.layouts = LayoutTable(spec)
        cls = spec.cls
        self.has_dict = _instances_have_dict(cls)
        self.slots = _all_slots(cls)
        self.primary: Layout | None = None
        self.varied = False  # an instance with a non-primary layout exists
        self.used = False  # annotated classes: flattened or unflattened at least once
        self._raw: dict[tuple[str, ...], Layout] = {}
        self._key_factories: dict[str, KeyFactory] = {}
        self._namespace: dict[str, Any] = {
            "__builtins__": __builtins__,
            "_cls": cls,
            "_new": object.__new__,
            "_flatten_generic": self._flatten_generic,
            "_unflatten_generic": self._unflatten_generic,
            "_replace_generic": self._replace_generic,
            "_apply_changes": self._apply_changes,
            "_missing_field": self._missing_field,
            "_first_use": self._first_use,
            "_referents": gc.get_referents,
            "_hash": hash,
            "_setattr": object.__setattr__,
            "_check_statics": self._check_statics,
            "_observe_slow": self._observe_slow,
        }
        # observe(obj): an instance of an unannotated class finished __init__; record its layout.
        self.observe = self._build("observe", self._observe_source())
        self.flatten = self._build("flatten", self._stub_source("flatten", "obj"))
        self.flatten_with_names = self._build(
            "flatten_with_names", self._stub_source("flatten_with_names", "obj")
        )
        self.unflatten = self._build("unflatten", self._stub_source("unflatten", "aux, children"))
        self.replace = self._build("replace", self._stub_source("replace", "obj, changes"))
        if spec.fields is not None:
            self.primary = self._annotated_layout()

    # -- public -------------------------------------------------------------------------------

    @property
    def annotated(self) -> bool:
        return self.spec.fields is not None

    def flatten_with_keys(self, backend: str, make_key: KeyFactory) -> types.FunctionType:
        """The keyed flatten for one registry: ``((key, child), ...), aux`` with its key type."""
        name = f"flatten_with_keys_{backend}"
        with self.layouts.lock:
            # A registry asks once per class; asked again, the same function object comes back
            # (``_build`` regenerates an existing function in place).
            self._key_factories[backend] = make_key
            if self._specialised():
                self._install_keys(backend)
                return self._build(name, self._flatten_source(name, backend))
            return self._build(name, self._stub_source(name, "obj"))

    def _observe_slow(self, obj: object) -> None:
        """``observe`` for an instance that is not plainly of the primary layout."""
        if self.has_dict and not self.slots:
            raw = tuple(obj.__dict__)
            layout = self._raw.get(raw)
            if layout is not None:
                self._check_statics(obj, layout)
                if layout is not self.primary:
                    self._note(obj, layout)
                return
        else:
            raw = None
        layout = self.layouts.intern(self.spec.attribute_names(obj))
        self._check_statics(obj, layout)
        if raw is not None and LAYOUT_ATTR not in raw and len(self._raw) < _RAW_CACHE_SIZE:
            self._raw[raw] = layout
        self._note(obj, layout)

    def layout_of(self, obj: object) -> Layout:
        """The layout of ``obj`` under the field rule (see ``_layouts``); only for classes without
        annotations (an annotated class's one layout is ``primary``)."""
        if self.has_dict:
            instance_dict = obj.__dict__
            layout: Layout | None = instance_dict.get(LAYOUT_ATTR)
            if layout is None and self.primary is not None:
                layout = self.primary
                if not all(_holds(obj, instance_dict, n) for n in layout.names):
                    layout = None  # not made by __init__, unflatten, replace, copy or pickle
            if layout is not None:
                present = tuple(n for n in layout.names if _holds(obj, instance_dict, n))
                if present == layout.names:
                    return layout
                static = tuple(
                    s for n, s in zip(layout.names, layout.static, strict=True) if n in present
                )
                return self.layouts.intern(present, static)  # a field was deleted since
        layout = self.layouts.intern(self.spec.attribute_names(obj))
        if self.primary is None:
            self._note(obj, layout)
        return layout

    def aux_state(self, aux: Any) -> tuple[tuple[str, ...] | None, tuple[Any, ...]]:
        """``(field names or None, static values)``: everything in ``aux``, as plain data.

        ``names`` is ``None`` for annotated classes, whose class fixes the layout.
        """
        if self.annotated:
            return None, tuple(aux or ())
        layout = self._layout_in(aux)
        return layout.names, tuple(aux[1:])

    def aux_from_state(self, names: Sequence[str] | None, static_values: Sequence[Any]) -> Any:
        """The aux data ``aux_state`` describes; works in a process that never built an instance."""
        if self.annotated:
            if names is not None:
                raise TypeError(
                    f"{self.spec.cls.__qualname__} has field annotations, so its aux data names no "
                    f"fields; got names {tuple(names)!r}."
                )
            return tuple(static_values) or None
        if names is None:
            raise TypeError(
                f"{self.spec.cls.__qualname__} has no field annotations: its aux data needs the "
                f"field names of the instance layout."
            )
        layout = self.layouts.intern(tuple(names))
        if len(static_values) != len(layout.static_names):
            raise TypeError(
                f"{self.spec.cls.__qualname__}: {len(static_values)} static values for the static "
                f"fields {layout.static_names}."
            )
        return (layout, *static_values)

    def reset(self, spec: ClassSpec) -> None:
        """Start again from a new spec (the class was decorated a second time).

        Layouts of unannotated classes carry their own static flags, so treedefs made before stay
        valid. An annotated class's aux data is just its static values, so changing its fields or
        static flags after it was used as a pytree would misread old treedefs: that is refused.
        """
        with self.layouts.lock:
            if spec.fields is not None and self.spec.fields is not None and self.used:
                old, new = self.primary, _layout_key(spec)
                if old is not None and (old.names, old.static) != new:
                    raise TypeError(
                        f"{spec.cls.__qualname__} has already been flattened or unflattened as a "
                        f"pytree with fields {old.names} (static: {old.static_names}); decorating "
                        f"it again with fields {new[0]} would make existing treedefs unreadable. "
                        f"Decorate the class once, with all its options."
                    )
            self.spec = spec
            self.layouts.spec = spec
            self._raw.clear()
            self.varied = False
            self._build("observe", self._observe_source())
            if LAYOUT_ATTR in spec.cls.__dict__:
                delattr(spec.cls, LAYOUT_ATTR)
            self.primary = self._annotated_layout() if spec.fields is not None else None
            for name in self._function_names():
                params = {"unflatten": "aux, children", "replace": "obj, changes"}.get(name, "obj")
                self._build(name, self._stub_source(name, params))
            if self._specialised():
                self._generate()

    # -- state transitions (under the class's lock) --------------------------------------------

    def _note(self, obj: object, layout: Layout) -> None:
        """``obj`` (being built, not yet visible to others) has ``layout``: record it."""
        with self.layouts.lock:
            if self.primary is None:
                self.primary = layout
                setattr(self.spec.cls, LAYOUT_ATTR, layout)  # the unmarked instances' layout
                self._generate()
            if not self.has_dict:
                return  # no marker possible: a slot is a field whenever it holds a value
            instance_dict = obj.__dict__
            if layout is self.primary:
                instance_dict.pop(LAYOUT_ATTR, None)
                return
            instance_dict[LAYOUT_ATTR] = layout
            if not self.varied:
                self.varied = True
                self._generate()

    def _first_use(self) -> None:
        with self.layouts.lock:
            if not self.used:
                self.used = True
                self._generate()

    def _specialised(self) -> bool:
        return self.primary is not None and (self.used or not self.annotated)

    def _annotated_layout(self) -> Layout:
        names, static = _layout_key(self.spec)
        return self.layouts.intern(names, static)

    # -- code generation ----------------------------------------------------------------------

    def _function_names(self) -> list[str]:
        keyed = [f"flatten_with_keys_{backend}" for backend in self._key_factories]
        return ["flatten", "flatten_with_names", *keyed, "unflatten", "replace"]

    def _generate(self) -> None:
        """Generate every function of this class for its primary layout."""
        layout = self.primary
        assert layout is not None
        self._namespace["_P"] = layout
        self._namespace["_child_names"] = layout.child_names
        self._namespace["_field_names"] = frozenset(layout.names)
        self._namespace["_static_names"] = frozenset(layout.static_names)
        for name in layout.names:
            if name in self.slots:
                self._namespace[f"_set_{name}"] = _resolved(self.spec.cls, name).__set__
        for backend in self._key_factories:
            self._install_keys(backend)
        self._build("flatten", self._flatten_source("flatten", None))
        self._build("flatten_with_names", self._flatten_source("flatten_with_names", ""))
        for backend in self._key_factories:
            name = f"flatten_with_keys_{backend}"
            self._build(name, self._flatten_source(name, backend))
        self._build("unflatten", self._unflatten_source())
        self._build("replace", self._replace_source())
        self._build("observe", self._observe_source())

    def _install_keys(self, backend: str) -> None:
        assert self.primary is not None
        make_key = self._key_factories[backend]
        for index, name in enumerate(self.primary.child_names):
            self._namespace[f"_{backend}_k{index}"] = make_key(name)

    def _build(self, name: str, source: str) -> types.FunctionType:
        existing = self._namespace.get(name)
        function = compile_function(
            name, source, self._namespace, f"{self.spec.cls.__qualname__}.<{name}>"
        )
        function.__module__ = self.spec.cls.__module__
        if isinstance(existing, types.FunctionType):
            retarget(existing, function)
            self._namespace[name] = existing
            return existing
        return function

    def _stub_source(self, name: str, params: str) -> str:
        if self.annotated:
            # Annotated classes specialise on first use, which is how re-decoration knows whether
            # treedefs of the class may exist.
            return f"def {name}({params}):\n    _first_use()\n    return {name}({params})\n"
        if name == "unflatten":
            return "def unflatten(aux, children):\n    return _unflatten_generic(aux, children)\n"
        if name == "replace":
            return "def replace(obj, changes):\n    return _replace_generic(obj, changes)\n"
        backend = {"flatten": None, "flatten_with_names": ""}.get(name, name.rsplit("_", 1)[-1])
        return f"def {name}(obj):\n    return _flatten_generic(obj, {backend!r})\n"

    def _always_generic(self) -> bool:
        # Without a __dict__ there is no marker, so the slots themselves say which are fields:
        # code for the primary layout is only safe when it covers every slot.
        assert self.primary is not None
        return not self.has_dict and not set(self.slots) <= set(self.primary.names)

    def _observe_source(self) -> str:
        """``observe(obj)``, with a fast path for an instance of exactly the primary layout,
        recognised without reading ``obj.__dict__``: on CPython that turns the instance's compact
        attribute storage into a real dict and makes every later attribute read (so every
        flatten) slower. The garbage collector's referents of such an instance are its attribute
        values and its class, so their count says whether ``__init__`` set other attributes.
        Wherever that reasoning does not hold, the general path runs."""
        slow = "def observe(obj):\n    _observe_slow(obj)\n"
        layout = self.primary
        if layout is None or self.annotated or not self.has_dict or self.slots:
            return slow
        names = layout.names
        if any(hasattr(self.spec.cls, n) for n in names):  # a class attribute could stand in
            return slow
        check = f"if len(refs) == {len(names) + 1}:"
        if len(names) == 1:  # [dict, class] is also what a materialised __dict__ gives
            check = "if len(refs) == 2 and refs[0].__class__ is not dict:"
        # One read per field, as statements (no tuple built); static values go to locals and
        # are hashed from there, so each attribute is read once.
        statics = {n: f"_s{i}" for i, n in enumerate(layout.static_names)}
        reads = [f"{statics[n]} = obj.{n}" if n in statics else f"obj.{n}" for n in names]
        hashes = [f"_hash({local})" for local in statics.values()] or ["pass"]
        body = [
            "refs = _referents(obj)",
            check,
            "    try:",
            *(f"        {read}" for read in reads or ["pass"]),
            "    except AttributeError:",
            "        pass",
            "    else:",
            "        try:",
            *(f"            {h}" for h in hashes),
            "        except TypeError:",
            "            _check_statics(obj, _P)",
            "        return",
            "_observe_slow(obj)",
        ]
        return "def observe(obj):\n" + "\n".join(indent(body)) + "\n"

    def _flatten_source(self, name: str, backend: str | None) -> str:
        layout = self.primary
        assert layout is not None
        fallback = f"_flatten_generic(obj, {backend!r})"
        if not self.annotated and self._always_generic():
            return f"def {name}(obj):\n    return {fallback}\n"
        if backend:
            children = [f"(_{backend}_k{i}, obj.{n})" for i, n in enumerate(layout.child_names)]
        else:
            children = [f"obj.{n}" for n in layout.child_names]
        statics = [f"obj.{n}" for n in layout.static_names]
        result = f"({''.join(c + ', ' for c in children)}), "
        if self.annotated:
            result += f"({''.join(s + ', ' for s in statics)})" if statics else "None"
        else:
            result += f"(_P, {''.join(s + ', ' for s in statics)})"
        if backend == "":
            result += ", _child_names"
        if self.annotated:
            body = [
                "try:",
                f"    return {result}",
                "except AttributeError:",
                "    _missing_field(obj)",
                "    raise",
            ]
        elif self.varied:
            body = [
                f"if obj.{LAYOUT_ATTR} is _P:",
                "    try:",
                f"        return {result}",
                "    except AttributeError:",
                "        pass",
                f"return {fallback}",
            ]
        else:
            body = [
                "try:",
                f"    return {result}",
                "except AttributeError:",
                f"    return {fallback}",
            ]
        return f"def {name}(obj):\n" + "\n".join(indent(body)) + "\n"

    def _store_lines(self, target: str, values: dict[str, str]) -> list[str]:
        """Write ``values`` (field -> expression) into ``target``'s storage, bypassing any custom
        ``__setattr__`` (plain attribute stores where the class has none: the fastest)."""
        plain = _resolved(self.spec.cls, "__setattr__") is object.__dict__["__setattr__"]
        lines: list[str] = []
        if not plain and any(name not in self.slots for name in values):
            lines.append(f"d = {target}.__dict__")
        for name, value in values.items():
            if plain:
                lines.append(f"{target}.{name} = {value}")
            elif name in self.slots:
                lines.append(f"_set_{name}({target}, {value})")
            else:
                lines.append(f"d[{name!r}] = {value}")
        return lines

    def _unflatten_source(self) -> str:
        layout = self.primary
        assert layout is not None
        values: dict[str, str] = {}
        child_index, static_index = 0, 0 if self.annotated else 1
        for name, static in zip(layout.names, layout.static, strict=True):
            if static:
                values[name] = f"aux[{static_index}]"
                static_index += 1
            else:
                values[name] = f"children[{child_index}]"
                child_index += 1
        build = ["obj = _new(_cls)", *self._store_lines("obj", values), "return obj"]
        if self.annotated:
            body = build
        else:
            body = ["if aux[0] is _P:", *indent(build), "return _unflatten_generic(aux, children)"]
        return "def unflatten(aux, children):\n" + "\n".join(indent(body)) + "\n"

    def _replace_source(self) -> str:
        layout = self.primary
        assert layout is not None
        if not self.annotated and self._always_generic():
            return "def replace(obj, changes):\n    return _replace_generic(obj, changes)\n"
        copy = self._store_lines("new", {n: f"obj.{n}" for n in layout.names})
        on_missing = (
            "_missing_field(obj)\n        raise"
            if self.annotated
            else ("return _replace_generic(obj, changes)")
        )
        body = []
        if not self.annotated and self.varied:
            body += [
                f"if obj.{LAYOUT_ATTR} is not _P:",
                "    return _replace_generic(obj, changes)",
            ]
        body += [
            "new = _new(_cls)",
            "try:",
            *indent(copy or ["pass"]),
            "except AttributeError:",
            f"    {on_missing}",
            "if changes:",
            # Unknown names go the slow way, which raises naming them.
            "    if not _field_names.issuperset(changes):",
            "        _apply_changes(new, changes, _P)",
            "    for name, value in changes.items():",
            "        _setattr(new, name, value)",
        ]
        if layout.static_names:
            body += [
                "    if not _static_names.isdisjoint(changes):",
                "        _check_statics(new, _P)",
            ]
        body += [
            "return new",
        ]
        return "def replace(obj, changes):\n" + "\n".join(indent(body)) + "\n"

    # -- the generic (slow) paths -------------------------------------------------------------

    def _flatten_generic(self, obj: object, backend: str | None) -> tuple[Any, ...]:
        layout = self.layout_of(obj)
        aux = (layout, *(getattr(obj, n) for n in layout.static_names))
        if backend:
            make_key = self._key_factories[backend]
            return tuple((make_key(n), getattr(obj, n)) for n in layout.child_names), aux
        children = tuple(getattr(obj, n) for n in layout.child_names)
        if backend == "":
            return children, aux, layout.child_names
        return children, aux

    def _layout_in(self, aux: Any) -> Layout:
        layout = aux[0] if type(aux) is tuple and aux else None
        if not isinstance(layout, Layout) or layout.cls is not self.spec.cls:
            raise TypeError(
                f"cannot unflatten {self.spec.cls.__qualname__} from aux data {aux!r}: it was not "
                f"made by flattening an instance of this class."
            )
        return layout

    def _unflatten_generic(self, aux: Any, children: Sequence[Any]) -> object:
        layout = self._layout_in(aux)
        obj: Any = object.__new__(self.spec.cls)
        statics = iter(aux[1:])
        child_iter = iter(children)
        for name, static in zip(layout.names, layout.static, strict=True):
            object.__setattr__(obj, name, next(statics) if static else next(child_iter))
        self._note(obj, layout)
        return obj

    def _replace_generic(self, obj: object, changes: dict[str, Any]) -> object:
        layout = self.layout_of(obj)
        new: Any = object.__new__(self.spec.cls)
        for name in layout.names:
            object.__setattr__(new, name, getattr(obj, name))
        self._apply_changes(new, changes, layout)
        if self.has_dict and layout is not self.primary:
            new.__dict__[LAYOUT_ATTR] = layout
        return new

    def _apply_changes(self, new: object, changes: dict[str, Any], layout: Layout) -> None:
        cls = self.spec.cls
        for name, value in changes.items():
            if name not in layout.names:
                raise TypeError(
                    f"replace(): {cls.__qualname__} has no field {name!r}; its fields are "
                    f"{layout.names}."
                )
            if name in layout.static_names:
                check_static_value(cls, name, value)
            object.__setattr__(new, name, value)

    def _check_statics(self, obj: object, layout: Layout) -> None:
        for name in layout.static_names:
            check_static_value(self.spec.cls, name, getattr(obj, name))

    def _missing_field(self, obj: object) -> None:
        """Name the field ``obj`` has no value for; return if it has them all (then the flatten
        or replace that called this re-raises the AttributeError it caught)."""
        assert self.primary is not None  # annotated classes have one from the start
        for name in self.primary.names:
            if not hasattr(obj, name):
                raise AttributeError(
                    f"{type(obj).__qualname__}.{name} is a field but this instance has no value "
                    f"for it, so it cannot be flattened. Set it in __init__ (or give the field a "
                    f"default)."
                ) from None


def _layout_key(spec: ClassSpec) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    assert spec.fields is not None
    return tuple(f.name for f in spec.fields), tuple(bool(f.static) for f in spec.fields)


def _holds(obj: object, instance_dict: dict[str, Any], name: str) -> bool:
    return name in instance_dict or hasattr(obj, name)


def _instances_have_dict(cls: type) -> bool:
    return bool(getattr(cls, "__dictoffset__", 0))


def _own_slots(klass: type) -> tuple[str, ...]:
    slots = klass.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _all_slots(cls: type) -> tuple[str, ...]:
    """Every slot of ``cls`` that holds a value (not ``__dict__``/``__weakref__``), base first."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        names.extend(s for s in _own_slots(klass) if s not in ("__dict__", "__weakref__"))
    return tuple(dict.fromkeys(names))


def _resolved(cls: type, name: str) -> Any:
    """What ``cls.<name>`` resolves to, as stored in the defining class's ``__dict__``."""
    return next(klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__)
