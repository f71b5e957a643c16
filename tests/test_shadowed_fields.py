"""A field counts only while the instance holds a value, also where a read of it is answered
without one: a class attribute or method of the same name (in the body, in a base, added before
the class is first used), a ``__getattr__``, an empty slot. Differential against twins registered
by hand that flatten what each instance holds (``vars(self)``, and the slots holding a value)."""

import ast
import contextlib
import copy
import itertools
import pickle

import jax
import pytest
from conftest import require, run_fresh

from pytreekit import fields, pytree_class, replace

tu = jax.tree_util

SHADOW = 7.0  # the class's value named like the field
DELEGATED = 100.0  # what __getattr__ answers


class Base:
    b = SHADOW


def _init(self, a, b=None):
    self.a = a
    if b is not None:
        self.b = b


def _method(self):
    return "method"


def _function():
    return "function"


def _delegate(self, name):
    if name.startswith("__"):
        raise AttributeError(name)
    return DELEGATED


class _Proven:
    b = SHADOW

    def __init__(self, a, b):
        self.a = a
        self.b = b


# What binds the name "b" (or answers any read) in each kind of class.
VARIANTS = {
    "body": {"b": SHADOW},
    "base": {},
    "late": {},  # b = SHADOW set on the class after decoration, before its first use
    "method": {"b": _method},
    "staticmethod": {"b": staticmethod(_function)},
    "getattr": {"__getattr__": _delegate},
    "slots_getattr": {"__getattr__": _delegate, "__slots__": ("a", "b")},
    "mixed_getattr": {"__getattr__": _delegate, "__slots__": ("a", "__dict__")},
    "proven": {},  # _Proven: a class attribute b, and an __init__ storing both on every path
}
# "same": b holds the very object the class binds (read as set only by the instance dict).
STATES = ("full", "same", "deleted", "never_set", "new")
_numbers = itertools.count()


def _held(obj):
    """What ``obj`` holds: each slot holding a value (read through its own member), then its
    dict's entries but dunders (pytreekit's layout marker among them)."""
    cls = type(obj)
    state = {}
    for klass in reversed(cls.__mro__):
        for slot in vars(klass).get("__slots__", ()):
            if slot != "__dict__":
                with contextlib.suppress(AttributeError):  # an empty slot
                    state[slot] = vars(klass)[slot].__get__(obj, cls)
    state.update((k, v) for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("__"))
    return state


def _rebuilt(cls, held):
    obj = object.__new__(cls)
    for name, value in held:
        object.__setattr__(obj, name, value)
    return obj


def _register_twin(cls):
    """``cls`` registered by hand: its nodes, and its copies and pickles, are what an instance
    holds (Python's own copy of a slot reads it with getattr, which a __getattr__ answers)."""

    def flatten_with_keys(obj):
        held = _held(obj)
        return tuple((tu.GetAttrKey(k), v) for k, v in held.items()), tuple(held)

    def flatten(obj):
        held = _held(obj)
        return tuple(held.values()), tuple(held)

    def unflatten(names, children):
        return _rebuilt(cls, zip(names, children, strict=True))

    cls.__reduce__ = lambda self: (_rebuilt, (cls, tuple(_held(self).items())))
    tu.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls


def _class(variant, twin):
    """A new class of ``variant``: decorated, or its hand-registered twin. Reachable by name in
    this module, so pickle finds it."""
    if variant == "proven":
        namespace = {k: v for k, v in vars(_Proven).items() if k not in ("__dict__", "__weakref__")}
    else:
        namespace = {"__init__": _init, **VARIANTS[variant]}
    name = f"{variant.title().replace('_', '')}{'Twin' if twin else ''}{next(_numbers)}"
    cls = type(name, (Base,) if variant == "base" else (), namespace)
    cls.__module__, cls.__qualname__ = __name__, name
    globals()[name] = cls
    made = _register_twin(cls) if twin else pytree_class(cls)
    if variant == "late":
        cls.b = SHADOW
    return made


def _instance(cls, state):
    if state == "full":
        return cls(1.0, 2.0)
    if state == "same":
        return cls(1.0, SHADOW)
    if state == "deleted":
        obj = cls(1.0, 2.0)
        del obj.b
        return obj
    if state == "never_set":
        return cls(1.0)
    obj = object.__new__(cls)  # "new": made without __init__, holding a only
    obj.a = 5.0
    return obj


def _observed(obj):
    paths = tu.tree_flatten_with_path(obj)[0]
    return {
        "names": [path[0].name for path, _ in paths],
        "leaves": [leaf for _, leaf in paths],
        "copy": _held(copy.copy(obj)),
        "deepcopy": _held(copy.deepcopy(obj)),
        "pickle": _held(pickle.loads(pickle.dumps(obj))),
        "tree_map": _held(tu.tree_map(lambda v: v * 10, obj)),
    }


CASES = [
    (variant, state, primed)
    for variant in VARIANTS
    for state in STATES
    for primed in (True, False)
    if not (variant == "proven" and state == "never_set")
]


@pytest.mark.parametrize(("variant", "state", "primed"), CASES)
def test_a_field_counts_only_while_the_instance_holds_a_value(variant, state, primed):
    """``primed``: an instance holding a and b was flattened first, so the class's generated code
    is written for the layout (a, b) and the instance under test takes its fast path."""
    observed = {}
    for twin in (False, True):
        cls = _class(variant, twin)
        if primed:
            tu.tree_leaves(cls(1.0, 2.0))
        obj = _instance(cls, state)
        observed[twin] = _observed(obj)
        if not twin:
            held = _held(obj)
            assert [f.name for f in fields(obj)] == list(held)
            assert _held(replace(obj, a=3.0)) == {**held, "a": 3.0}
            assert _held(obj) == held  # replace changed nothing of the original
    holds_b = state in ("full", "same")
    assert observed[False]["names"] == (["a", "b"] if holds_b else ["a"])
    if holds_b:
        assert observed[False]["leaves"] == [1.0, 2.0 if state == "full" else SHADOW]
    else:
        assert observed[False]["leaves"] == [observed[True]["leaves"][0]]
    assert observed[False] == observed[True]


@pytest.mark.parametrize("variant", ["body", "getattr", "slots_getattr"])
def test_instances_built_after_the_deleted_one_still_take_their_layout(variant):
    cls = _class(variant, False)
    first = cls(1.0, 2.0)
    tu.tree_leaves(first)
    del first.b
    assert tu.tree_leaves(first) == [1.0]
    first.b = 4.0  # holds a value again: a field again
    assert tu.tree_leaves(first) == [1.0, 4.0]
    assert tu.tree_leaves(cls(1.0, 2.0)) == [1.0, 2.0]
    assert tu.tree_leaves(cls(1.0)) == [1.0]


@pytest.mark.parametrize("variant", ["body", "base"])
def test_a_class_value_rebound_after_first_use_still_reads_as_unset(variant):
    """The class's value is read from the class each time: rebound (or deleted) after the first
    use, a field the instance does not hold is still unset."""
    cls = _class(variant, False)
    tu.tree_leaves(cls(1.0, 2.0))
    owner = Base if variant == "base" else cls
    obj = cls(1.0, 2.0)
    del obj.b
    try:
        owner.b = 8.0
        assert tu.tree_leaves(obj) == [1.0]
        assert tu.tree_leaves(cls(1.0, 8.0)) == [1.0, 8.0]
        del owner.b
        assert tu.tree_leaves(obj) == [1.0]
        assert tu.tree_leaves(cls(1.0, 2.0)) == [1.0, 2.0]
    finally:
        owner.b = SHADOW


def test_a_deleted_field_named_like_a_method_is_not_carried_as_the_old_instance_method():
    cls = _class("method", False)
    obj = cls(1.0, 2.0)
    tu.tree_leaves(obj)
    del obj.b
    rebuilt = tu.tree_map(lambda v: v, obj)
    assert "b" not in vars(rebuilt)
    assert rebuilt.b() == "method"  # the class's method, bound to the rebuilt instance
    assert rebuilt.b.__self__ is rebuilt


def test_the_proven_class_keeps_its_proof():
    cls = _class("proven", False)
    assert cls.__pytreekit_spec__.init_proof.startswith("proven")


# For the fresh process: classes it imports by name.
@pytree_class
class FreshBody:
    b = SHADOW
    __init__ = _init


@pytree_class
class FreshBase(Base):
    __init__ = _init


@pytree_class
class FreshGetattr:
    __init__ = _init
    __getattr__ = _delegate


@pytree_class
class FreshSlots:
    __slots__ = ("a", "b")
    __init__ = _init
    __getattr__ = _delegate


FRESH = """
import pickle, sys
import jax
from test_shadowed_fields import _held

pickled = pickle.loads(open(sys.argv[1], "rb").read())  # the class's first use
cls = type(pickled)
new = object.__new__(cls)
new.a = 5.0
out = []
for obj in (pickled, cls(1.0, 2.0), new, pickled):
    rebuilt = jax.tree_util.tree_map(lambda v: v * 10, obj)
    out.append((jax.tree_util.tree_leaves(obj), _held(rebuilt)))
print(repr(out))
"""


@pytest.mark.parametrize("cls", [FreshBody, FreshBase, FreshGetattr, FreshSlots])
def test_a_fresh_process_whose_first_use_is_an_unpickled_instance(cls, tmp_path):
    """The class is first used in a fresh process by unpickling an instance whose field was
    deleted (what binds the name is found there, from the class as imported); then an instance
    holding both, one made without ``__init__``, and the unpickled one again."""
    obj = cls(1.0, 2.0)
    del obj.b
    path = tmp_path / "obj.pkl"
    path.write_bytes(pickle.dumps(obj))
    out = ast.literal_eval(run_fresh(FRESH, path))
    assert out == [
        ([1.0], {"a": 10.0}),
        ([1.0, 2.0], {"a": 10.0, "b": 20.0}),
        ([5.0], {"a": 50.0}),
        ([1.0], {"a": 10.0}),
    ]


TRACED = """
import torch
import torch.utils._pytree as torch_pytree
import jax
from pytreekit import pytree_class
from test_shadowed_fields import _delegate, _init

both = {"backends": ("jax", "torch")}
Body = pytree_class(type("Body", (), {"b": None, "__init__": _init}), **both)
Getattr = pytree_class(type("Getattr", (), {"__getattr__": _delegate, "__init__": _init}), **both)
Slots = pytree_class(
    type("Slots", (), {"__slots__": ("a", "b"), "__getattr__": _delegate, "__init__": _init}),
    **both,
)
for cls in (Body, Getattr, Slots):
    outside = cls(torch.ones(2), torch.ones(2))
    torch_pytree.tree_leaves(outside), cls(1.0)  # outside: the class learns its layouts

    def build(x, cls=cls, outside=outside):
        made, partial = cls(x, x * 2), cls(x)  # the exact reads run as each is observed
        leaves = [*torch_pytree.tree_leaves(made), *torch_pytree.tree_leaves(outside)]
        return sum(leaf.sum() for leaf in leaves) + partial.a.sum()

    compiled = torch.compile(build, fullgraph=True, backend="eager")
    print(cls.__name__, compiled(torch.ones(2)).item(), jax.tree_util.tree_leaves(cls(1.0)))
    torch._dynamo.reset()
"""


def test_torch_compile_traces_the_classes_whose_reads_are_exact():
    """fullgraph makes any graph break an error: the tracer meets the exact reads (of an
    instance's dict, of a slot under a ``__getattr__``) as the instances it builds are observed
    and flattened."""
    require("torch")
    printed = run_fresh(TRACED).splitlines()
    assert printed == [f"{name} 12.0 [1.0]" for name in ("Body", "Getattr", "Slots")]
