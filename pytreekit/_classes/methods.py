"""The methods pytreekit puts on a class: which, decided by ``plan`` (one table), installed by
``apply``.

The same methods serve every class; the fields they cover are the ``compared``, ``hashed`` and
``shown`` names of a layout (for an annotated class, its one layout, as dataclasses chooses them;
otherwise the instance's own):

- ``__eq__``: same class, equal fields, arrays compared as arrays (a Python bool, or a traced one
  under a JAX transformation); nested instances and containers are walked with a stack, so
  nesting as deep as JAX flattens compares without a ``RecursionError``. Fields are compared as
  the running Python's dataclasses compare them (from 3.13, a value identical in both is
  compared too: a NaN makes them unequal).
- ``__hash__``: the hash of the hashed fields' values (as dataclasses hashes), an unhashable one
  named.
- ``__repr__``: arrays summarised as ``f32[3,2]``, walked with a stack too.
- ``__getstate__``/``__setstate__``: copy and pickle carry the fields (and the layout they form),
  never run ``__init__`` or ``__setattr__``, and store functions pickle cannot (``jnp.tanh``) by
  name.
- the frozen ``__setattr__``/``__delattr__`` (``frozen``); the ``__init__`` (generated:
  ``dataclass``; the wrapper: ``codegen``) is made by the decorator and installed here.

Each class gets its own copy of each method, named as the class's (``Model.__eq__``), as
dataclasses writes them.
"""

# No postponed annotations: these functions become methods of user classes, and checkers such as
# beartype resolve a method's string annotations in the class's module, not in pytreekit.

import functools
import operator
import reprlib
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from .. import _markers as markers
from .._compat import (
    DATACLASS_EQ_FIELD_BY_FIELD,
    DATACLASSES_REPLACE,
    HAS_COPY_REPLACE,
    called_by_torch_restricted_unpickler,
    comparison_depth,
    signature,
    unannotate_self,
)
from .._messages import looks_like_array, unhashable_error
from .frozen import frozen_delattr, frozen_setattr
from .layouts import Layout, LayoutTable, as_read
from .pickling import picklable, restored
from .spec import Options, own_spec

# -- what a class gets, and when: plan() decides from the class, apply() installs ----------------
#
#   method                     installed when                                 as
#   __init__                   the class has an __init__ a user wrote          the wrapper
#                              a generated one is offered (annotated), and    generated (dataclass)
#                                the nearest is not a pytree base's wrapped one
#   __repr__                   repr=True, none in the class body              _repr_method
#   __eq__                     eq=True, none in the class body                _eq_method
#   __hash__                   _HASH[eq, frozen, the body defines __hash__]   see _HASH
#   __setattr__, __delattr__   frozen=True (a body defining them is refused)  frozen_*
#   __getstate__               no pickling method written in the class line   pytree_getstate
#   __setstate__               none written, nor __reduce__(_ex)              pytree_setstate
#   __replace__                Python 3.13+ (copy.replace), none in the       pytree_replace
#                                class body but dataclasses'
#
# __hash__, as dataclasses decides it (eq, frozen, explicitly defined in the body) -> action;
# every other combination keeps what the class has.
_HASH = {(True, False, False): "unhashable", (True, True, False): "by value"}
_PICKLING = ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")
# Who wrote the __init__ a class runs (nearest_init).
InitKind = Literal["object", "generated", "wrapped", "user"]
# What becomes of a class's __init__: "generate" (the annotated class's own), "wrap" (a user's,
# checked when it returns; "wrap made": a dataclass's, not classified), "keep".
InitStep = Literal["generate", "wrap", "wrap made", "keep"]


class Plan(NamedTuple):
    """What ``apply`` installs: the ``__init__`` step (``wrapped``: the ``__init__`` to wrap),
    the methods by name, whether the class becomes unhashable, whether it is given the
    docstring dataclasses would write, and the methods it inherits instead of its own."""

    init: InitStep
    wrapped: Callable[..., Any] | None
    methods: tuple[str, ...]
    unhashable: bool
    document: bool
    inherited: tuple[str, ...] = ()


def plan(
    cls: type,
    options: Options,
    own: Mapping[str, Any],
    *,
    annotated: bool,
    dataclass_methods: bool = False,
    automatic: bool = False,
) -> Plan:
    """What to put on ``cls`` by the table above; nothing is changed. ``own``: the class body as
    the user wrote it. ``annotated``: a generated ``__init__`` is offered. ``dataclass_methods``:
    ``cls`` was a dataclass already, and keeps its ``__init__``; of the rest, only what
    dataclasses generated is replaced (``own`` lists the others). ``automatic``: a subclass made
    a pytree class by inheritance, which keeps the eq, repr and hash it inherits from a user's
    class (a mixin before the pytree base), as any subclass of a dataclass does; ``@pytree_class``
    on it decides as ``@dataclass`` does."""
    for name in ("__setattr__", "__delattr__") if options.frozen else ():
        if name in own:
            raise TypeError(
                f"{cls.__qualname__} defines {name} and asks for frozen=True; pytreekit "
                f"needs to own {name} to freeze instances. Remove one of the two."
            )
    init, wrapped = _init_step(cls, own, annotated, dataclass_methods)
    kept = _kept(cls, own, automatic)
    hashing = _hash_action(cls, options, own, dataclass_methods, "__hash__" in kept)
    # An automatic subclass inherits the frozen methods, and leaves its namespace free for a
    # @dataclass(frozen=True) of its own still to run (which refuses to overwrite them).
    inherited = _FROZEN if automatic and options.frozen and _inherits_frozen(cls) else ()
    wanted = {
        "__repr__": options.repr and "__repr__" not in kept,
        "__eq__": options.eq and "__eq__" not in kept,
        "__hash__": hashing == "by value",
        "__setattr__": options.frozen and not inherited,
        "__delattr__": options.frozen and not inherited,
        "__getstate__": not _writes(cls, own, _PICKLING),
        # A state of its own is read by pytreekit's __setstate__.
        "__setstate__": not _writes(cls, own, _PICKLING[1:]),
        "__replace__": _replace_wanted(own),
    }
    methods = tuple(name for name, wanted_ in wanted.items() if wanted_)
    document = annotated and not dataclass_methods
    return Plan(init, wrapped, methods, hashing == "unhashable", document, inherited)


_FROZEN = ("__setattr__", "__delattr__")


def _replace_wanted(own: Mapping[str, Any]) -> bool:
    """``copy.replace`` (3.13) is pytreekit's, unless the class writes its own."""
    return HAS_COPY_REPLACE and own.get("__replace__", DATACLASSES_REPLACE) is DATACLASSES_REPLACE


def _inherits_frozen(cls: type) -> bool:
    """Whether the bases' nearest ``__setattr__`` and ``__delattr__`` are pytreekit's frozen
    ones."""
    for name, code in zip(_FROZEN, (frozen_setattr.__code__, frozen_delattr.__code__), strict=True):
        method = next((vars(k)[name] for k in cls.__mro__[1:] if name in vars(k)), None)
        if getattr(method, "__code__", None) is not code:
            return False
    return True


def _kept(cls: type, own: Mapping[str, Any], automatic: bool) -> set[str]:
    """The eq, repr and hash the class has of its own, or inherits from a user's class."""
    names = ("__repr__", "__eq__", "__hash__")
    return {n for n in names if n in own or (automatic and _users(cls, n))}


def _init_step(
    cls: type, own: Mapping[str, Any], annotated: bool, dataclass_methods: bool
) -> tuple[InitStep, Callable[..., Any] | None]:
    if dataclass_methods:
        # A dataclass's own __init__ (dataclasses', or one in its body) runs unchanged, checked
        # when it returns as a user's is: static values, bound methods, nothing but fields set.
        made = cls.__dict__.get("__init__")
        if made is not None and not getattr(made, markers.WRAPS_INIT, False):
            return "wrap made", made
        return "keep", None
    # The __init__ a user wrote is wrapped: the class body's, or (classes without annotations)
    # one inherited from a class that is not a pytree class. An annotated class gets the
    # generated one instead of such a base's (a mixin's, a typing.Protocol's), unless the
    # nearest base __init__ is a user's that a pytree base wraps: a subclass that adds fields
    # but no __init__ keeps it (where dataclasses would generate one).
    user_init, kind = nearest_init(cls, own)
    if kind == "user" and (own.get("__init__") is not None or not annotated):
        return "wrap", user_init
    if annotated and nearest_init(cls)[1] != "wrapped":
        return "generate", None
    return "keep", None


def _hash_action(
    cls: type, options: Options, own: Mapping[str, Any], dataclass_methods: bool, kept: bool
) -> str:
    if dataclass_methods:  # dataclasses decided; its generated hash becomes pytreekit's
        action = "by value" if "__hash__" not in own and cls.__dict__.get("__hash__") else "keep"
    else:
        explicit = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        action = _HASH.get((options.eq, options.frozen, explicit), "keep")
    if kept and "__hash__" not in own:  # inherited from a user's class
        return "keep"
    return action


def apply(cls: type, plan: Plan, init: Callable[..., Any] | None) -> None:
    """Install what ``plan`` says on ``cls``; ``init``: its new ``__init__`` (generated, or the
    wrapper), if any."""
    if init is not None:
        setattr(cls, "__init__", init)
    if plan.unhashable:
        setattr(cls, "__hash__", None)
    for name in plan.inherited:  # dataclasses wrote its own (frozen dataclass bases)
        if name in cls.__dict__:
            delattr(cls, name)
    methods = {name: _MAKERS[name](cls) for name in plan.methods}
    unannotate_self(methods.values())  # as dataclasses' methods: self unannotated
    for name, method in methods.items():
        method.__name__ = name
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        method.__module__ = cls.__module__
        setattr(cls, name, method)
    if plan.document and not cls.__doc__:  # the one dataclasses would write: name and signature
        try:
            text = str(signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        setattr(cls, "__doc__", cls.__name__ + text)


def nearest_init(
    cls: type, own: Mapping[str, Any] | None = None
) -> tuple[Callable[..., Any], InitKind]:
    """The ``__init__`` that ``cls`` runs: the one in ``own`` (its body as written; ``None``: look
    in the bases only), else the nearest one its bases define (``object``'s at the latest); and
    who wrote it: ``"object"``, ``"generated"`` (pytreekit, for an annotated class),
    ``"wrapped"`` (a user, and a pytree class wraps it already: ``codegen.init_wrapper``) or
    ``"user"`` (a user, not wrapped yet)."""
    init = None if own is None else own.get("__init__")
    if init is None:
        init = next(k.__dict__["__init__"] for k in cls.__mro__[1:] if "__init__" in k.__dict__)
    if init is object.__init__:
        return init, "object"
    if getattr(init, markers.WRAPS_INIT, False):
        return init, "wrapped"
    if getattr(init, markers.GENERATED, False):
        return init, "generated"
    return init, "user"


def _users(cls: type, name: str) -> bool:
    """Whether ``cls`` inherits ``name`` from a user's class (or a dataclass's method), not from
    pytreekit (which marks its methods, or made a pytree base unhashable) or ``object``."""
    for klass in cls.__mro__[1:-1]:
        if name in klass.__dict__:
            value = klass.__dict__[name]
            if getattr(value, markers.OWNER, None) is not None:
                return False
            spec = own_spec(klass)
            return not (
                value is None and spec is not None and spec.as_written.get(name, 0) is not None
            )
    return False


def _writes(cls: type, own: Mapping[str, Any], names: tuple[str, ...]) -> bool:
    """Whether the class line (``own`` and the bases) has one of these methods a user wrote."""
    for name in names:
        if name in own:
            return True
        for klass in cls.__mro__[1:-1]:  # not object
            method = klass.__dict__.get(name)
            if method is not None:
                if not getattr(method, markers.STATE, False):
                    return True
                break
    return False


def _copy(function: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of one of pytreekit's functions, to be named as a method of one class."""
    assert isinstance(function, types.FunctionType)
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__)
    copy.__doc__ = function.__doc__
    copy.__dict__.update(function.__dict__)
    copy.__annotations__ = dict(function.__annotations__)
    return copy


def _layout(owner: type, obj: object) -> Layout:
    """The layout whose fields a method that ``owner`` defines covers for ``obj``: ``owner``'s
    own for an annotated class (as dataclasses' methods use the fields of the class that
    generated them), the one ``obj`` holds otherwise."""
    layout: Layout = getattr(owner, markers.SPEC).nodes.layout_of(obj)
    return layout


# -- __eq__ -------------------------------------------------------------------------------------


def _arrays_equal(a: Any, b: Any) -> Any:
    if a is b:  # pragma: Python 3.13+ (two fields' values: equal, by pytreekit's rule)
        return True
    if not (looks_like_array(a) and looks_like_array(b)):
        return False
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        # Tracers cannot become NumPy arrays (nor can typed PRNG keys): a traced boolean, as JAX
        # code expects, or a Python bool where the answer is concrete.
        return _concrete((a == b).all())


def _concrete(result: Any) -> Any:
    """``result`` as a Python bool, unless it is traced (a tracer refuses ``bool``)."""
    try:
        return bool(result)
    except Exception:
        return result


def _truth(result: Any) -> Any:
    """The truth of a comparison's result (a bool, a NumPy or JAX boolean, an elementwise array,
    a user's truthy value): a Python bool, or a traced bool under a JAX transform."""
    if result is True or result is False:
        return result
    if not looks_like_array(result):
        return bool(result)
    try:
        return bool(np.asarray(result).all())
    except Exception:
        return _concrete(result.all())


def _compared_fields(a: Any, b: Any) -> tuple[str, ...] | Literal[False] | None:
    """The fields pytreekit's ``__eq__`` compares for ``a == b``; ``False`` when it answers
    ``False`` at once (instances holding different fields); ``None`` when it is not pytreekit's
    ``__eq__`` that decides (another class, a user's)."""
    if a.__class__ is not b.__class__:
        return None
    owner: type | None = getattr(type(a).__eq__, markers.OWNER, None)
    if owner is None:
        return None
    layout, other = _layout(owner, a), _layout(owner, b)
    if layout is not other and set(layout.compared) != set(other.compared):
        return False
    return layout.compared


def _all_equal(a: Any, b: Any) -> Any:
    """Whether ``a == b`` as pytreekit compares: a Python bool, or a traced bool under a JAX
    transform. Each pair on the stack says whether it is two fields' values, which the running
    Python's dataclasses compare even when identical (``DATACLASS_EQ_FIELD_BY_FIELD``), but
    for arrays (pytreekit's rule) and instances (equal to themselves)."""
    stack: list[tuple[Any, Any, bool, int]] = [(a, b, False, 0)]
    traced = []
    limit = comparison_depth()
    while stack:
        a, b, fields, depth = stack.pop()
        if a is b and not fields:
            continue
        if depth > limit:  # two instances holding themselves: Python's == raises so too
            raise RecursionError("maximum recursion depth exceeded in comparison")
        result = _pair_equal(a, b, stack, depth + 1)
        if result is False:
            return False
        if result is not True:
            traced.append(result)
    if not traced:
        return True
    return functools.reduce(operator.and_, traced)


def _pair_equal(a: Any, b: Any, stack: list[tuple[Any, Any, bool, int]], depth: int) -> Any:
    """Whether ``a == b``; ``True`` also where the pairs that decide it went on ``stack``, at
    ``depth``."""
    if looks_like_array(a) or looks_like_array(b):
        return _arrays_equal(a, b)
    parts = _parts(a, b)
    if parts is None:
        return _truth(a == b)
    if parts is not False:
        stack.extend((x, y, fields, depth) for x, y, fields in parts)
        return True
    return False


def _parts(a: Any, b: Any) -> list[tuple[Any, Any, bool]] | Literal[False] | None:
    """The pairs that decide ``a == b``: the items of two lists or tuples, the values of two
    dicts, the compared fields of two instances pytreekit's ``__eq__`` compares; ``False``:
    unequal at once; ``None``: none of these, ``==`` decides."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        same = type(a) is type(b) and len(a) == len(b)
        return [(x, y, False) for x, y in zip(a, b, strict=True)] if same else False
    if isinstance(a, dict) and isinstance(b, dict):
        return [(a[k], b[k], False) for k in a] if a.keys() == b.keys() else False
    return _field_pairs(a, b)


def _field_pairs(a: Any, b: Any) -> list[tuple[Any, Any, bool]] | Literal[False] | None:
    names = _compared_fields(a, b)
    if not isinstance(names, tuple):
        return names
    if a is b:  # pragma: Python 3.13+ (an instance equals itself, as a dataclass says)
        return []
    return [(getattr(a, n), getattr(b, n), DATACLASS_EQ_FIELD_BY_FIELD) for n in names]


def _eq_method(owner: type) -> Callable[[object, object], Any]:
    def __eq__(self: object, other: object) -> Any:
        """Same type, equal compared fields (arrays compared as arrays)."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _all_equal(self, other)

    setattr(__eq__, markers.OWNER, owner)
    return __eq__


# -- __hash__ -----------------------------------------------------------------------------------


def _hash_method(owner: type) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        """The hash of the hashed fields' values; an unhashable one is named."""
        layout = _layout(owner, self)
        names, values = layout.hashed, layout.hashed_values(self)
        try:
            return hash(values)
        except TypeError:
            for name, value in zip(names, values, strict=True):
                try:
                    hash(value)
                except TypeError:
                    raise unhashable_error(type(self), name, value, "hash") from None
            raise

    setattr(__hash__, markers.OWNER, owner)
    return __hash__


# -- __repr__ -----------------------------------------------------------------------------------


def _repr_method(owner: type) -> Callable[[object], str]:
    def __repr__(self: object) -> str:
        """The class and its shown fields, arrays as ``f32[3,2]``."""
        return summarise(self)

    guarded: Any = reprlib.recursive_repr()(__repr__)
    setattr(guarded, markers.OWNER, owner)
    return guarded  # type: ignore[no-any-return]


def _dtype_name(dtype: Any) -> str:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if dt.kind in "fiuc":
        return f"{dt.kind}{dt.itemsize * 8}"
    if dt.kind == "b":
        return "bool"
    return str(dt.name)


class _Text(str):
    """Output of ``summarise``'s walk, as opposed to a value still to summarise."""


class _Leave(int):
    """Marks the end of an instance in ``summarise``'s walk (its id)."""


def summarise(value: Any) -> str:
    """A short repr: arrays as ``f32[3,2]``, containers and pytree instances element-wise,
    anything else by ``repr``. An instance met again inside itself shows as ``...``."""
    out: list[str] = []
    inside: set[int] = set()
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Text:
            out.append(item)
            continue
        if type(item) is _Leave:
            inside.discard(item)
            continue
        stack.extend(reversed(_expand(item, inside)))
    return "".join(out)


def _expand(value: Any, inside: set[int]) -> list[Any]:
    """``value`` as text and values still to summarise, in order."""
    # A pytree instance shows its fields even if it has a shape and a dtype (a parameter class).
    owner: type | None = getattr(type(value).__repr__, markers.OWNER, None)
    if owner is not None:
        return _instance(value, owner, inside)
    # Only a tuple is a shape: a ``__getattr__`` that answers every name is no array.
    if looks_like_array(value) and isinstance(value.shape, tuple):
        return [_Text(f"{_dtype_name(value.dtype)}[{','.join(str(d) for d in value.shape)}]")]
    container = _CONTAINERS.get(type(value))
    if container is not None:
        return container(value)
    if callable(value) and hasattr(value, "__qualname__") and not isinstance(value, type):
        return [_Text(f"<function {value.__qualname__}>")]
    return [_Text(repr(value))]


def _instance(value: Any, owner: type, inside: set[int]) -> list[Any]:
    """An instance whose ``__repr__`` is pytreekit's: its shown fields."""
    if id(value) in inside:
        return [_Text("...")]
    inside.add(id(value))
    parts = []
    for name in _layout(owner, value).shown:
        try:
            parts.append([_Text(f"{name}="), getattr(value, name)])
        except AttributeError:
            parts.append([_Text(f"{name}=<unset>")])
    return [
        _Text(f"{type(value).__qualname__}("),
        *_joined(parts, flat=True),
        _Text(")"),
        _Leave(id(value)),
    ]


def _partial(value: functools.partial[Any]) -> list[Any]:
    # Its repr shows the function's memory address.
    keywords = [[_Text(f"{k}="), v] for k, v in value.keywords.items()]
    arguments = [[item] for item in (value.func, *value.args)] + keywords
    return [_Text("functools.partial("), *_joined(arguments, flat=True), _Text(")")]


# Containers summarised element-wise, by exact type.
_CONTAINERS: dict[type, Callable[[Any], list[Any]]] = {
    list: lambda value: [_Text("["), *_joined(value), _Text("]")],
    tuple: lambda value: [_Text("("), *_joined(value), _Text(",)" if len(value) == 1 else ")")],
    dict: lambda value: [
        _Text("{"),
        *_joined([[_Text(f"{k!r}: "), v] for k, v in value.items()], flat=True),
        _Text("}"),
    ],
    functools.partial: _partial,
}


def _joined(items: Sequence[Any], flat: bool = False) -> list[Any]:
    result: list[Any] = []
    for index, item in enumerate(items):
        if index:
            result.append(_Text(", "))
        if flat:
            result.extend(item)
        else:
            result.append(item)
    return result


# -- copy and pickle ----------------------------------------------------------------------------


def pytree_getstate(self: object) -> dict[str, Any]:
    """The fields, by name, and the layout they form (names and static flags)."""
    spec = getattr(type(self), markers.SPEC)
    layout = spec.nodes.layout_of(self)
    read = spec.table.current_shadows().read  # past a __getattribute__: the values as stored
    state = {}
    for name in layout.names:
        try:
            state[name] = picklable(read(self, name))
        except AttributeError:
            continue  # an unset field stays unset
    state[markers.FIELDS] = (layout.names, layout.static)
    return state


def _unchecked(cls: type, state: Any) -> None:
    raise TypeError(
        f"torch.load(weights_only=True) cannot restore a {cls.__qualname__}: the check of its "
        f"state is not installed (import pytreekit, not only pytreekit._classes)."
    )


# What a state from torch's weights-only unpickler must pass before anything is written: the
# artifacts wing installs its check (``restricted_state_check``), as it reads jax.export's aux
# data; until then every such state is refused. Plain pickle runs code anyway, and pickles written
# before may hold values their declaration does not admit: they load unchecked.
_restricted_check: list[Callable[[type, Any], None]] = [_unchecked]


def restricted_state_check(check: Callable[[type, Any], None]) -> None:
    """Install ``check(cls, state)``: it raises for a state torch's weights-only unpickler gives
    ``__setstate__`` that loading must refuse, and records the layout it names."""
    _restricted_check[0] = check


def pytree_setstate(self: object, state: Any) -> None:
    """Write the fields to storage directly: no ``__init__``, no ``__setattr__``. A state from
    torch's weights-only unpickler is checked first (``restricted_state_check``)."""
    if called_by_torch_restricted_unpickler():
        _restricted_check[0](type(self), state)
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    layout_state = None
    items: dict[str, Any] = {**(dict_state or {}), **(slot_state or {})}
    names = as_read(list(items))
    for name, value in items.items():
        if name == markers.FIELDS:
            layout_state = value
        elif name != markers.LAYOUT:
            object.__setattr__(self, names.get(name, name), restored(value))
    table: LayoutTable = getattr(type(self), markers.SPEC).table
    if layout_state is not None:
        fields = tuple(names.get(str(name), str(name)) for name in layout_state[0])
        layout = table.intern(fields, tuple(layout_state[1]))
    elif isinstance((dict_state or {}).get(markers.LAYOUT), Layout):  # pickled by pytreekit 0.2.0
        layout = dict_state[markers.LAYOUT]
    else:
        return
    table.note(self, layout)


# -- copy.replace -------------------------------------------------------------------------------


def pytree_replace(self: object, /, **changes: Any) -> object:  # pragma: Python 3.13+
    """A copy with ``changes`` applied, made as ``pytreekit.replace`` makes it: without
    ``__init__``, static values checked, an unknown name named (``copy.replace``)."""
    spec = own_spec(type(self))
    assert spec is not None
    return spec.nodes.replace(self, changes)


setattr(pytree_getstate, markers.STATE, True)
setattr(pytree_setstate, markers.STATE, True)

# How apply() makes each method for a class.
_MAKERS: dict[str, Callable[[type], Callable[..., Any]]] = {
    "__repr__": _repr_method,
    "__eq__": _eq_method,
    "__hash__": _hash_method,
    "__setattr__": lambda cls: _copy(frozen_setattr),
    "__delattr__": lambda cls: _copy(frozen_delattr),
    "__getstate__": lambda cls: _copy(pytree_getstate),
    "__setstate__": lambda cls: _copy(pytree_setstate),
    "__replace__": lambda cls: _copy(pytree_replace),
}
