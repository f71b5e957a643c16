"""The methods pytreekit puts on a class, and the one function that puts them there.

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
- the frozen ``__setattr__``/``__delattr__`` (``frozen``) and the ``__init__`` wrapper
  (``codegen``).

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
from typing import Any, Literal

import numpy as np

from .. import _markers as markers
from .._compat import (
    DATACLASS_EQ_FIELD_BY_FIELD,
    DATACLASSES_REPLACE,
    HAS_COPY_REPLACE,
    set_annotations,
)
from .._messages import looks_like_array
from .codegen import init_wrapper
from .fields import unhashable_error
from .frozen import frozen_delattr, frozen_setattr
from .layouts import Layout, LayoutTable
from .pickling import picklable, restored
from .spec import Options, own_spec

# -- what install() puts on a class, and when ---------------------------------------------------
#
#   method                     installed when                                 as
#   __init__                   the class has an __init__ a user wrote          the wrapper
#                              a generated one is offered (annotated), and    generated (_dataclass)
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
# __hash__, as dataclasses decides it (eq, frozen, explicitly defined in the body) -> action.
_HASH = {
    (False, False, False): "keep",
    (False, False, True): "keep",
    (False, True, False): "keep",
    (False, True, True): "keep",
    (True, False, False): "unhashable",
    (True, False, True): "keep",
    (True, True, False): "by value",
    (True, True, True): "keep",
}
_PICKLING = ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")
# What __getstate__ adds to the field values: the layout's names and static flags.
# Who wrote the __init__ a class runs (nearest_init).
InitKind = Literal["object", "generated", "wrapped", "user"]


def install(
    cls: type,
    options: Options,
    own: Mapping[str, Any],
    *,
    init: Callable[[], Callable[..., None]] | None = None,
    dataclass_methods: bool = False,
    automatic: bool = False,
    prove: Callable[[Callable[..., Any]], Layout | None] | None = None,
) -> None:
    """Put pytreekit's methods on ``cls`` by the table above. ``own``: the class body as the user
    wrote it. ``init``: makes the generated ``__init__`` (an annotated class), called when the
    table says so. ``dataclass_methods``: ``cls`` was a dataclass already, and keeps its
    ``__init__``; of the rest, only what dataclasses generated is replaced (``own`` lists the
    others). ``automatic``: a subclass made a pytree class by inheritance, which keeps the eq,
    repr and hash it inherits from a user's class (a mixin before the pytree base), as any
    subclass of a dataclass does; ``@pytree_class`` on it decides as ``@dataclass`` does."""
    if options.frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(
                    f"{cls.__qualname__} defines {name} and asks for frozen=True; pytreekit "
                    f"needs to own {name} to freeze instances. Remove one of the two."
                )
    if not dataclass_methods:
        # The __init__ a user wrote is wrapped: the class body's, or (classes without annotations)
        # one inherited from a class that is not a pytree class. An annotated class gets the
        # generated one instead of such a base's (a mixin's, a typing.Protocol's), unless the
        # nearest base __init__ is a user's that a pytree base wraps: a subclass that adds fields
        # but no __init__ keeps it (where dataclasses would generate one).
        user_init, kind = nearest_init(cls, own)
        if kind == "user" and (own.get("__init__") is not None or init is None):
            # prove: the layout every instance it builds provably has, if any (codegen.prove_init)
            proven = None if prove is None else prove(user_init)
            setattr(cls, "__init__", init_wrapper(cls, user_init, options.frozen, proven))
        elif init is not None and nearest_init(cls)[1] != "wrapped":
            setattr(cls, "__init__", init())
    else:
        # A dataclass's own __init__ (dataclasses', or one in its body) runs unchanged, checked
        # when it returns as a user's is: static values, bound methods, nothing but fields set.
        made = cls.__dict__.get("__init__")
        if made is not None and not getattr(made, markers.WRAPS_INIT, False):
            setattr(cls, "__init__", init_wrapper(cls, made, options.frozen))
    kept = {
        n for n in ("__repr__", "__eq__", "__hash__") if n in own or (automatic and _users(cls, n))
    }
    methods: dict[str, Callable[..., Any]] = {}
    if options.repr and "__repr__" not in kept:
        methods["__repr__"] = _repr_method(cls)
    if options.eq and "__eq__" not in kept:
        methods["__eq__"] = _eq_method(cls)
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    action = _HASH[options.eq, options.frozen, explicit_hash]
    if dataclass_methods:  # dataclasses decided; its generated hash becomes pytreekit's
        action = "by value" if "__hash__" not in own and cls.__dict__.get("__hash__") else "keep"
    if "__hash__" in kept and "__hash__" not in own:  # inherited from a user's class
        action = "keep"
    if action == "unhashable":
        setattr(cls, "__hash__", None)
    elif action == "by value":
        methods["__hash__"] = _hash_method(cls)
    if options.frozen:
        methods.update(__setattr__=_copy(frozen_setattr), __delattr__=_copy(frozen_delattr))
    if not _writes(cls, own, _PICKLING):
        methods["__getstate__"] = _copy(pytree_getstate)
    if not _writes(cls, own, _PICKLING[1:]):  # a state of its own is read by pytreekit's
        methods["__setstate__"] = _copy(pytree_setstate)
    replace = own.get("__replace__", DATACLASSES_REPLACE)
    if HAS_COPY_REPLACE and replace is DATACLASSES_REPLACE:  # pragma: Python 3.13+
        methods["__replace__"] = _copy(pytree_replace)
    for name, method in methods.items():
        # As dataclasses' methods: self unannotated.
        set_annotations(method, {k: v for k, v in method.__annotations__.items() if k != "self"})
        method.__name__ = name
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        method.__module__ = cls.__module__
        setattr(cls, name, method)


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
    if not (looks_like_array(a) and looks_like_array(b)):
        return False
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        # Tracers cannot become NumPy arrays: answer with a traced boolean, as JAX code expects.
        return (a == b).all()


def _truth(result: Any) -> Any:
    """The truth of a comparison's result that is not a ``bool`` (a NumPy or JAX boolean, an
    elementwise array, a user's truthy value): a Python bool, or a traced bool under a JAX
    transform."""
    if not looks_like_array(result):
        return bool(result)
    try:
        return bool(np.asarray(result).all())
    except Exception:
        return result.all()


def _compared_fields(a: Any, b: Any) -> tuple[str, ...] | bool | None:
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
    stack: list[tuple[Any, Any, bool]] = [(a, b, False)]
    traced = []
    while stack:
        a, b, fields = stack.pop()
        if a is b and not fields:
            continue
        if looks_like_array(a) or looks_like_array(b):
            if a is b:  # pragma: Python 3.13+ (two fields' values: equal, by pytreekit's rule)
                continue
            result = _arrays_equal(a, b)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if type(a) is not type(b) or len(a) != len(b):
                return False
            stack.extend((x, y, False) for x, y in zip(a, b, strict=True))
            continue
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            stack.extend((a[k], b[k], False) for k in a)
            continue
        else:
            names = _compared_fields(a, b)
            if names is False:
                return False
            if isinstance(names, tuple):
                if a is not b:  # an instance equals itself, as a dataclass says
                    by_field = DATACLASS_EQ_FIELD_BY_FIELD
                    stack.extend((getattr(a, n), getattr(b, n), by_field) for n in names)
                continue
            result = a == b
            if not isinstance(result, bool):
                result = _truth(result)
        if result is False:
            return False
        if result is not True:
            traced.append(result)
    if not traced:
        return True
    return functools.reduce(operator.and_, traced)


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
    if looks_like_array(value):
        return [_Text(f"{_dtype_name(value.dtype)}[{','.join(str(d) for d in value.shape)}]")]
    if type(value) is list:
        return [_Text("["), *_joined(value), _Text("]")]
    if type(value) is tuple:
        return [_Text("("), *_joined(value), _Text(",)" if len(value) == 1 else ")")]
    if type(value) is dict:
        items = [[_Text(f"{k!r}: "), v] for k, v in value.items()]
        return [_Text("{"), *_joined(items, flat=True), _Text("}")]
    if type(value) is functools.partial:  # its repr shows the function's memory address
        keywords = [[_Text(f"{k}="), v] for k, v in value.keywords.items()]
        arguments = [[item] for item in (value.func, *value.args)] + keywords
        return [_Text("functools.partial("), *_joined(arguments, flat=True), _Text(")")]
    if callable(value) and hasattr(value, "__qualname__") and not isinstance(value, type):
        return [_Text(f"<function {value.__qualname__}>")]
    owner: type | None = getattr(type(value).__repr__, markers.OWNER, None)
    if owner is None:
        return [_Text(repr(value))]
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
    layout = getattr(type(self), markers.SPEC).nodes.layout_of(self)
    state = {}
    for name in layout.names:
        try:
            state[name] = picklable(getattr(self, name))
        except AttributeError:
            continue  # an unset field stays unset
    state[markers.FIELDS] = (layout.names, layout.static)
    return state


def pytree_setstate(self: object, state: Any) -> None:
    """Write the fields to storage directly: no ``__init__``, no ``__setattr__``."""
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    layout_state = None
    for name, value in {**(dict_state or {}), **(slot_state or {})}.items():
        if name == markers.FIELDS:
            layout_state = value
        elif name != markers.LAYOUT:
            object.__setattr__(self, name, restored(value))
    table: LayoutTable = getattr(type(self), markers.SPEC).table
    if layout_state is not None:
        layout = table.intern(tuple(layout_state[0]), tuple(layout_state[1]))
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
