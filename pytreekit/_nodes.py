"""Flatten and unflatten functions for one class, generated from its layout.

A ``Layout`` is everything the functions depend on: the field names in order, which are static,
and where each value is stored. The code generated from it reads and writes those places
directly, so the hot path does no introspection and runs no user code: unflatten never calls
``__init__``, ``__post_init__``, converters or a custom ``__setattr__``, because JAX unflattens
with ``None``, ``object()`` sentinels and tracers.

These functions are registry-independent; the backend adapters hand them to jax, optree and
torch, each with its own key type for key paths.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ._codegen import compile_function, indent, retarget

if TYPE_CHECKING:
    from ._spec import ClassSpec

KeyFactory = Callable[[str], Any]


class Layout(NamedTuple):
    names: tuple[str, ...]
    static: tuple[bool, ...]
    slotted: frozenset[str]
    # Classes without annotations: fields are the attributes __init__ set. While every instance
    # sets the same ones, flatten reads them directly; once instances are seen to differ, flatten
    # first checks each instance's __dict__ against this layout (and takes the generic path if
    # it does not match).
    per_instance: bool = False

    @property
    def child_names(self) -> tuple[str, ...]:
        return tuple(n for n, s in zip(self.names, self.static, strict=True) if not s)

    @property
    def static_names(self) -> tuple[str, ...]:
        return tuple(n for n, s in zip(self.names, self.static, strict=True) if s)


class OtherLayout:
    """Aux data for an instance of an unannotated class whose attributes differ from the layout
    the class's code was generated for. Hashable and comparable, as treedef data must be."""

    __slots__ = ("names", "static_names", "static_values")

    def __init__(
        self, names: tuple[str, ...], static_names: tuple[str, ...], static_values: tuple[Any, ...]
    ) -> None:
        self.names = names
        self.static_names = static_names
        self.static_values = static_values

    def _key(self) -> tuple[Any, ...]:
        return (self.names, self.static_names, self.static_values)

    def __eq__(self, other: object) -> bool:
        return type(other) is OtherLayout and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        statics = dict(zip(self.static_names, self.static_values, strict=True))
        return f"OtherLayout(names={self.names}, static={statics})"


class NodeFunctions:
    """The flatten/unflatten functions registered for one class.

    The function objects are created once and stay the same for the life of the class (they are
    what the registries hold); ``specialise`` regenerates the code inside them for a layout.
    """

    def __init__(self, spec: ClassSpec) -> None:
        self.spec = spec
        self.layout: Layout | None = None
        self._key_factories: dict[str, KeyFactory] = {}
        self._namespace: dict[str, Any] = {
            "__builtins__": __builtins__,
            "_cls": spec.cls,
            "_new": object.__new__,
            "_OtherLayout": OtherLayout,
            "_discover": self._discover,
            "_flatten_other": self._flatten_other,
            "_unflatten_other": self._unflatten_other,
            "_missing_field": self._missing_field,
        }
        self.flatten = self._build("flatten", self._stub_source("flatten", "obj"))
        self.unflatten = self._build("unflatten", self._stub_source("unflatten", "aux, children"))
        self.flatten_with_names = self._build(
            "flatten_with_names", self._stub_source("flatten_with_names", "obj")
        )
        if spec.fields is not None:
            self.specialise(annotated_layout(spec))

    # -- public -------------------------------------------------------------------------------

    def flatten_with_keys(self, backend: str, make_key: KeyFactory) -> types.FunctionType:
        """The keyed flatten for one registry: ``((key, child), ...), aux`` with its key type."""
        name = f"flatten_with_keys_{backend}"
        if name not in self._namespace:
            self._key_factories[backend] = make_key
            if self.layout is None:
                self._build(name, self._stub_source(name, "obj"))
            else:
                self._install_keys(backend, self.layout)
                self._build(name, self._flatten_source(name, self.layout, backend))
        function: types.FunctionType = self._namespace[name]
        return function

    def observe(self, obj: object) -> None:
        """An instance of an unannotated class finished ``__init__``: learn or check the layout."""
        if self.layout is None:
            self._discover(obj)
        elif not self.layout.per_instance and sorted(self.spec.attribute_names(obj)) != sorted(
            self.layout.names
        ):
            self.specialise(self.layout._replace(per_instance=True))

    def reset(self, spec: ClassSpec) -> None:
        """Start again from a new spec (the class was decorated a second time)."""
        self.spec = spec
        if spec.fields is not None:
            self.specialise(annotated_layout(spec))
            return
        self.layout = None
        keyed = [f"flatten_with_keys_{backend}" for backend in self._key_factories]
        for name in ("flatten", "flatten_with_names", *keyed):
            self._build(name, self._stub_source(name, "obj"))
        self._build("unflatten", self._stub_source("unflatten", "aux, children"))

    def specialise(self, layout: Layout) -> None:
        """Generate every function of this class for ``layout``."""
        self.layout = layout
        for backend in self._key_factories:
            self._install_keys(backend, layout)
        for name in layout.slotted:
            self._namespace[f"_set_{name}"] = _resolved(self.spec.cls, name).__set__
        self._namespace["_child_names"] = layout.child_names
        self._build("flatten", self._flatten_source("flatten", layout, None))
        self._build("flatten_with_names", self._flatten_source("flatten_with_names", layout, ""))
        for backend in self._key_factories:
            name = f"flatten_with_keys_{backend}"
            self._build(name, self._flatten_source(name, layout, backend))
        self._build("unflatten", self._unflatten_source(layout))

    # -- code generation ----------------------------------------------------------------------

    def _install_keys(self, backend: str, layout: Layout) -> None:
        make_key = self._key_factories[backend]
        for index, name in enumerate(layout.child_names):
            self._namespace[f"_{backend}_k{index}"] = make_key(name)

    def _build(self, name: str, source: str) -> types.FunctionType:
        existing = self._namespace.get(name)
        function = compile_function(
            name, source, self._namespace, f"{self.spec.cls.__qualname__}.<{name}>"
        )
        if isinstance(existing, types.FunctionType):
            retarget(existing, function)
            self._namespace[name] = existing
            return existing
        return function

    @staticmethod
    def _stub_source(name: str, params: str) -> str:
        # Before an unannotated class's layout is known (an instance that never ran __init__,
        # such as an unpickled one): learn it from the instance, regenerate (which replaces this
        # very code), then run the real thing.
        if params == "obj":
            return f"def {name}(obj):\n    _discover(obj)\n    return {name}(obj)\n"
        return f"def {name}({params}):\n    return _unflatten_other(aux, children)\n"

    def _flatten_source(self, name: str, layout: Layout, backend: str | None) -> str:
        # Attribute loads are the fastest read on CPython; reading obj.__dict__ would also turn
        # the instance's compact attribute storage into a real dict. Only fields kept in __dict__
        # can vary beyond the layout (slots are fixed by the class, and a missing one raises
        # AttributeError), so only those need the per-instance check.
        check_dict = layout.per_instance and not layout.slotted

        def value(field: str) -> str:
            return f"d[{field!r}]" if check_dict else f"obj.{field}"

        if backend:
            children = [f"(_{backend}_k{i}, {value(n)})" for i, n in enumerate(layout.child_names)]
        else:
            children = [value(n) for n in layout.child_names]
        statics = [value(n) for n in layout.static_names]
        result = f"({''.join(c + ', ' for c in children)}), "
        result += f"({''.join(s + ', ' for s in statics)})" if statics else "None"
        if backend == "":
            result += ", _child_names"
        other = f"_flatten_other(obj, {backend!r})"
        if check_dict:
            body = [
                "d = obj.__dict__",
                f"if len(d) == {len(layout.names)}:",
                "    try:",
                f"        return {result}",
                "    except KeyError:",
                "        pass",
                f"return {other}",
            ]
        elif self.spec.fields is None:  # an attribute missing: this instance has its own layout
            body = ["try:", f"    return {result}", "except AttributeError:", f"    return {other}"]
        else:
            body = [
                "try:",
                f"    return {result}",
                "except AttributeError:",
                "    _missing_field(obj)",
                "    raise",
            ]
        return f"def {name}(obj):\n" + "\n".join(indent(body)) + "\n"

    def _unflatten_source(self, layout: Layout) -> str:
        # Plain attribute stores are fastest, but go through __setattr__, which frozen classes
        # (and some bases) override: those get their storage written directly.
        plain = _resolved(self.spec.cls, "__setattr__") is object.__dict__["__setattr__"]
        body: list[str] = []
        if self.spec.fields is None:
            body.append("if aux.__class__ is _OtherLayout:")
            body.append("    return _unflatten_other(aux, children)")
        body.append("obj = _new(_cls)")
        if not plain and len(layout.slotted) < len(layout.names):
            body.append("d = obj.__dict__")
        child_index = static_index = 0
        for name, static in zip(layout.names, layout.static, strict=True):
            if static:
                source = f"aux[{static_index}]"
                static_index += 1
            else:
                source = f"children[{child_index}]"
                child_index += 1
            if plain:
                body.append(f"obj.{name} = {source}")
            elif name in layout.slotted:
                body.append(f"_set_{name}(obj, {source})")
            else:
                body.append(f"d[{name!r}] = {source}")
        body.append("return obj")
        return "def unflatten(aux, children):\n" + "\n".join(indent(body)) + "\n"

    # -- the generic (slow) paths -------------------------------------------------------------

    def _discover(self, obj: object) -> None:
        spec = self.spec
        names = spec.attribute_names(obj)
        unknown = sorted(spec.static_names.difference(names))
        if unknown:
            raise TypeError(
                f"{spec.cls.__qualname__}: static={unknown!r} names no attribute that __init__ "
                f"set; the attributes are {names!r}. Check the spelling in "
                f"@pytree_class(static=...)."
            )
        layout = Layout(
            names=names,
            static=tuple(n in spec.static_names for n in names),
            slotted=frozenset(n for n in names if _is_slot(spec.cls, n)),
        )
        self.specialise(layout)

    def _flatten_other(self, obj: object, backend: str | None) -> tuple[Any, ...]:
        spec = self.spec
        names = spec.attribute_names(obj)
        layout = self.layout
        if layout is not None and sorted(names) == sorted(layout.names):
            # Same fields, but extra private attributes or another insertion order: same treedef.
            names = layout.names
            statics: Any = tuple(getattr(obj, n) for n in layout.static_names) or None
        else:
            static_names = tuple(n for n in names if n in spec.static_names)
            statics = OtherLayout(names, static_names, tuple(getattr(obj, n) for n in static_names))
        child_names = tuple(n for n in names if n not in spec.static_names)
        if backend:
            make_key = self._key_factories[backend]
            return tuple((make_key(n), getattr(obj, n)) for n in child_names), statics
        children = tuple(getattr(obj, n) for n in child_names)
        if backend == "":
            return children, statics, child_names
        return children, statics

    def _unflatten_other(self, aux: Any, children: Sequence[Any]) -> object:
        if not isinstance(aux, OtherLayout):  # pragma: no cover - aux always comes from flatten
            raise TypeError(f"cannot unflatten {self.spec.cls.__qualname__} from aux data {aux!r}")
        obj: Any = object.__new__(self.spec.cls)
        statics = dict(zip(aux.static_names, aux.static_values, strict=True))
        child_iter = iter(children)
        for name in aux.names:
            object.__setattr__(obj, name, statics[name] if name in statics else next(child_iter))
        return obj

    def _missing_field(self, obj: object) -> None:
        for name in self.layout.names if self.layout else ():
            if not hasattr(obj, name):
                raise AttributeError(
                    f"{type(obj).__qualname__}.{name} is a field but this instance has no value "
                    f"for it, so it cannot be flattened. Set it in __init__ (or give the field a "
                    f"default)."
                ) from None


def annotated_layout(spec: ClassSpec) -> Layout:
    assert spec.fields is not None
    names = tuple(f.name for f in spec.fields)
    return Layout(
        names=names,
        static=tuple(f.static for f in spec.fields),
        slotted=frozenset(n for n in names if _is_slot(spec.cls, n)),
    )


def _resolved(cls: type, name: str) -> Any:
    """What ``cls.<name>`` resolves to, as stored in the defining class's ``__dict__``."""
    return next(klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__)


def _is_slot(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return isinstance(klass.__dict__[name], types.MemberDescriptorType)
    return False
