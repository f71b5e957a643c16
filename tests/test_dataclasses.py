"""Annotated pytree classes are standard-library dataclasses: one test per promise."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
import textwrap
import typing
from typing import ClassVar, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pytreekit
from pytreekit import field, pytree_class


def test_is_a_dataclass_and_the_dataclasses_functions_work():
    @pytree_class
    class Point:
        x: float
        y: float = field(static=True, default=0.0)

    p = Point(1.0, 2.0)
    assert dataclasses.is_dataclass(Point) and dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y"]
    assert dataclasses.asdict(p) == {"x": 1.0, "y": 2.0}
    assert dataclasses.astuple(p) == (1.0, 2.0)
    assert dataclasses.replace(p, x=3.0) == Point(3.0, 2.0)
    assert pytreekit.fields(Point) == dataclasses.fields(Point)
    assert all(isinstance(f, dataclasses.Field) for f in pytreekit.fields(Point))
    assert [f.static for f in pytreekit.fields(Point)] == [False, True]


def test_field_takes_every_dataclasses_field_parameter():
    @pytree_class
    class Config:
        a: int = field(default=1, repr=False, compare=False, hash=False, metadata={"u": "m"})
        b: list = field(default_factory=list, kw_only=True, init=True)

    a, b = pytreekit.fields(Config)
    assert (a.repr, a.compare, a.hash, a.metadata["u"]) == (False, False, False, "m")
    assert b.kw_only is True and b.default_factory is list
    assert str(inspect.signature(Config)) == "(a: 'int' = 1, *, b: 'list' = <factory>) -> None"
    assert Config(a=1) == Config(a=2)  # a is not compared
    assert repr(Config()).endswith("Config(b=[])")


def test_dataclasses_field_is_a_specifier_and_metadata_marks_static():
    @pytree_class
    class Holder:
        items: list = dataclasses.field(default_factory=list)
        size: int = dataclasses.field(default=2, metadata={"static": True})
        name: str = dataclasses.field(default="h", metadata={"pytree_node": False})

    h = Holder()
    assert h.items == [] and h.items is not Holder().items  # a factory, not a Field value
    assert [f.static for f in pytreekit.fields(Holder)] == [False, True, True]
    assert jax.tree_util.tree_structure(h) != jax.tree_util.tree_structure(Holder(size=3))


def test_kw_only_marker_initvar_classvar_and_match_args():
    @pytree_class
    class Scaled:
        x: float
        _: dataclasses.KW_ONLY
        scale: float = 1.0
        offset: dataclasses.InitVar[float] = 0.0
        count: ClassVar[int] = 0
        other: typing.ClassVar[str] = "c"

        def __post_init__(self, offset):
            self.x = self.x + offset

    s = Scaled(1.0, scale=2.0, offset=3.0)
    assert s.x == 4.0 and [f.name for f in pytreekit.fields(Scaled)] == ["x", "scale"]
    assert jax.tree_util.tree_leaves(s) == [4.0, 2.0]
    with pytest.raises(TypeError):
        Scaled(1.0, 2.0)  # scale is keyword-only
    assert Scaled.__match_args__ == ("x",)
    match s:
        case Scaled(x):
            assert x == 4.0


def test_descriptor_defaults_behave_as_in_dataclasses():
    class Default:
        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, obj, owner):
            return 5 if obj is None else obj.__dict__.get("_" + self.name, 5)

        def __set__(self, obj, value):
            obj.__dict__["_" + self.name] = value * 2

    @dataclasses.dataclass
    class Reference:
        n: Default = Default()  # noqa: RUF009 - the descriptor is the point

    @pytree_class
    class Ours:
        n: Default = Default()

    assert Ours().n == Reference().n and Ours(3).n == Reference(3).n == 6


def test_fields_of_every_pytree_base_in_dataclasses_order():
    @pytree_class
    class P:
        a: int = 1

    @pytree_class
    class Q:
        b: int = 2

    class R(P, Q):
        c: int = 3

    r = R(10, 20, 30)
    assert [f.name for f in dataclasses.fields(R)] == ["b", "a", "c"]  # as dataclasses orders
    assert (r.a, r.b, r.c) == (20, 10, 30)
    assert sorted(jax.tree_util.tree_leaves(r)) == [10, 20, 30]


def test_a_non_pytree_base_init_or_a_protocol_does_not_replace_the_generated_init():
    class Base:
        def __init__(self):
            self.seen = True

    class Shape(Protocol):
        def area(self) -> float: ...

    @pytree_class
    class FromBase(Base):
        x: float

    @pytree_class
    class Square(Shape):
        side: float

        def area(self) -> float:
            return self.side**2

    assert FromBase(1.0).x == 1.0
    assert Square(2.0).area() == 4.0 and jax.tree_util.tree_leaves(Square(2.0)) == [2.0]


def test_explicit_decoration_wins_over_the_automatic_subclass_registration():
    @pytree_class
    class Base:
        x: float = 0.0

    @pytree_class(kw_only=True, static=("n",))
    class Child(Base):
        n: int  # no default, after a default: fine with kw_only

    c = Child(n=2)
    assert str(inspect.signature(Child)) == "(x: 'float' = 0.0, *, n: 'int') -> None"
    assert jax.tree_util.tree_leaves(c) == [0.0]

    class Broken(Base):  # automatic set-up fails; reported when it is used
        n: int

    with pytest.raises(
        TypeError, match=r"Broken inherits from a pytree class.*non-default argument"
    ):
        Broken(n=1)


def test_frozen_inheritance_follows_dataclasses_naming_both_classes():
    @pytree_class
    class Mutable:
        x: int = 0

    with pytest.raises(TypeError, match=r"Frozen is frozen but its base .*Mutable is not frozen"):

        @pytree_class(frozen=True)
        class Frozen(Mutable):
            pass

    @pytree_class(frozen=True)
    class Root:
        x: int = 0

    class Sub(Root):  # subclasses of a frozen class are frozen (the parent's options)
        y: int = 1

    with pytest.raises(dataclasses.FrozenInstanceError):
        Sub().y = 2  # type: ignore[misc]
    assert hash(Sub()) == hash((0, 1))


def test_frozen_class_with_own_eq_gets_dataclasses_hash():
    @pytree_class(frozen=True)
    class Tagged:
        x: int

        def __eq__(self, other):
            return isinstance(other, Tagged)

    assert hash(Tagged(3)) == hash((3,))


def test_field_named_like_a_builtin():
    @pytree_class(frozen=True)
    class Record:
        id: int
        hash: int = 0
        object: int = 0

        def __post_init__(self):
            pass

    assert Record(3).id == 3 and hash(Record(3)) == hash((3, 0, 0))


def test_generated_methods_live_in_the_class_module(tmp_path):
    module = tmp_path / "future_model.py"
    module.write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            import jax
            from pytreekit import pytree_class

            @pytree_class(frozen=True)
            class Model:
                weights: jax.Array
                scale: float = 1.0
            """
        )
    )
    script = textwrap.dedent(
        """
        import typing, future_model
        M = future_model.Model
        for name in ("__init__", "__eq__", "__hash__", "__repr__"):
            method = getattr(M, name)
            assert method.__module__ == "future_model", (name, method.__module__)
            assert method.__qualname__ == "Model." + name, method.__qualname__
            typing.get_type_hints(method)
        hints = typing.get_type_hints(M.__init__)
        import jax
        assert hints["weights"] is jax.Array and hints["scale"] is float, hints
        """
    )
    subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, check=True, env={"JAX_PLATFORMS": "cpu"}
    )


def test_own_init_must_set_every_field_and_only_fields():
    @pytree_class
    class Unset:
        w: jax.Array
        b: jax.Array

        def __init__(self, n):
            self.w = jnp.ones(n)

    with pytest.raises(
        TypeError, match=r"Unset.__init__ returned without setting field 'b', which has no default"
    ):
        Unset(2)

    @pytree_class
    class Extra:
        w: jax.Array

        def __init__(self, n):
            self.w = jnp.ones(n)
            self.n = n

    with pytest.raises(
        TypeError,
        match=r"Extra.__init__ set attribute 'n', which is not a field.*Declare it in the class",
    ):
        Extra(2)

    @pytree_class
    class Filled:
        w: jax.Array
        history: list = field(default_factory=list)
        scale: float = 1.0

        def __init__(self, n):
            self.w = jnp.ones(n)

    f = Filled(2)
    assert f.history == [] and f.scale == 1.0


def test_a_dataclass_under_pytree_class_keeps_working():
    @pytree_class
    @dataclasses.dataclass
    class Params:
        w: jax.Array
        n: int = dataclasses.field(default=2, metadata={"static": True})
        extra: list = dataclasses.field(default_factory=list)

    p = Params(jnp.ones(2))
    assert p == Params(jnp.ones(2)) and p != Params(jnp.zeros(2))  # arrays compared as arrays
    assert repr(p).endswith("Params(w=f32[2], n=2, extra=[])")
    leaves, treedef = jax.tree_util.tree_flatten(p)
    assert len(leaves) == 1 and jax.tree_util.tree_unflatten(treedef, leaves) == p

    with pytest.raises(TypeError, match=r"Plain is already a dataclass.*frozen=True"):

        @pytree_class(frozen=True)
        @dataclasses.dataclass
        class Plain:
            x: int


def test_array_fields_compare_without_ambiguity():
    @pytree_class
    class Pair:
        a: jax.Array
        b: np.ndarray

    x = Pair(jnp.ones(3), np.zeros(2))
    assert x == Pair(jnp.ones(3), np.zeros(2)) and x != Pair(jnp.ones(3), np.ones(2))


@pytest.mark.parametrize(
    "define, message",
    [
        (
            lambda: pytree_class(typing.NamedTuple("Pt", [("x", int)])),
            r"Pt: it is a NamedTuple, which JAX already treats as a pytree",
        ),
        (
            lambda: pytree_class(
                jax.tree_util.register_dataclass(
                    dataclasses.dataclass(type("R", (), {"__annotations__": {"x": int}})),
                    data_fields=["x"],
                    meta_fields=[],
                )
            ),
            r"R: it is already registered with jax.tree_util",
        ),
    ],
)
def test_unsupported_classes_are_refused_and_left_unchanged(define, message):
    with pytest.raises(TypeError, match=message):
        define()


def test_failed_decoration_changes_nothing():
    class Linear:
        w: int
        b: int = 0

        def method(self):
            return 1

    before = dict(Linear.__dict__)
    with pytest.raises(TypeError, match=r"static=\['c'\] names no field"):
        pytree_class(Linear, static=("c",))
    assert dict(Linear.__dict__) == before
    assert not dataclasses.is_dataclass(Linear) and not pytreekit.is_pytree_class(Linear)
    pytree_class(Linear, static=("b",))  # and it can still be decorated
    assert jax.tree_util.tree_leaves(Linear(1, 2)) == [1]


def test_rebuild_runs_no_init_post_init_converter_or_setattr():
    calls = []

    @pytree_class(frozen=True)
    class Watched:
        x: jax.Array = field(converter=lambda v: calls.append("convert") or jnp.asarray(v))

        def __post_init__(self):
            calls.append("post_init")

    w = Watched(1.0)
    calls.clear()
    leaves, treedef = jax.tree_util.tree_flatten(w)
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    pytreekit.replace(w, x=jnp.ones(()))
    import copy

    assert copy.deepcopy(w) == copy.copy(rebuilt) == w
    assert calls == []


def test_converters_run_before_post_init_and_not_on_what_it_assigns():
    seen = []

    @pytree_class
    class Converted:
        x: jax.Array = field(converter=jnp.asarray)
        y: float = field(init=False, converter=jnp.asarray, default=0.0)

        def __post_init__(self):
            seen.append(type(self.x))
            self.y = 5.0  # assigned by __post_init__: not converted

    c = Converted([1.0])
    assert seen == [type(jnp.asarray(1.0))] and c.y == 5.0 and type(c.y) is float


def test_dataclass_options_pytree_class_does_not_take_come_from_a_dataclass_underneath():
    @pytree_class
    @dataclasses.dataclass(order=True, slots=True, frozen=True)
    class Version:
        major: int
        label: str = dataclasses.field(default="v", metadata={"static": True})

    v = Version(1)
    assert v < Version(2) and "__dict__" not in dir(v)
    leaves, treedef = jax.tree_util.tree_flatten(v)
    assert leaves == [1] and jax.tree_util.tree_unflatten(treedef, leaves) == v
    assert hash(v) == hash(Version(1))


def test_decorating_again_keeps_old_treedefs_working():
    @pytree_class
    class Model:
        w: jax.Array
        n: int = 2

    leaves, treedef = jax.tree_util.tree_flatten(Model(jnp.ones(2)))
    pytree_class(Model)  # the same fields and static flags
    assert jax.tree_util.tree_unflatten(treedef, leaves).n == 2
    pytree_class(Model, static=("n",))  # other static flags: the old treedef holds its layout
    old = jax.tree_util.tree_unflatten(treedef, leaves)
    assert (old.n, old.w.tolist()) == (2, [1.0, 1.0])
    assert [f.static for f in pytreekit.fields(Model)] == [False, True]
    assert [leaf.tolist() for leaf in jax.tree_util.tree_leaves(Model(jnp.ones(2)))] == [[1, 1]]


def test_a_subclass_without_init_adds_fields_and_keeps_the_bases_own_init():
    @pytree_class
    class Layer:
        w: jax.Array

        def __init__(self, size):
            self.w = jnp.zeros(size)

    class Scaled(Layer):
        scale: float = 2.0

    s = Scaled(3)  # Layer's __init__, not one generated for the fields (w, scale)
    assert list(inspect.signature(Scaled).parameters) == ["size"]
    assert s.w.shape == (3,) and s.scale == 2.0
    assert [f.name for f in dataclasses.fields(s)] == ["w", "scale"]
    assert len(jax.tree_util.tree_leaves(s)) == 2


def test_a_dataclass_under_pytree_class_keeps_its_own_repr_and_eq():
    @pytree_class
    @dataclasses.dataclass
    class Tolerant:
        x: float

        def __repr__(self):
            return f"~{self.x}"

        def __eq__(self, other):
            return isinstance(other, Tolerant) and abs(self.x - other.x) < 0.5

    assert repr(Tolerant(1.0)) == "~1.0"
    assert Tolerant(1.0) == Tolerant(1.2) and Tolerant(1.0) != Tolerant(2.0)
    assert jax.tree_util.tree_leaves(Tolerant(1.0)) == [1.0]


def test_a_misspelt_static_name_suggests_the_closest_field():
    class Layer:
        width: int
        depth: int

    with pytest.raises(TypeError, match=r"\.Layer: static=\['widht'\] .*Did you mean 'width'\?"):
        pytree_class(Layer, static=("widht",))
    with pytest.raises(TypeError, match=r"names no field; the fields are \('width', 'depth'\)\.$"):
        pytree_class(Layer, static=("zzz",))


def test_static_by_name_or_metadata_applies_to_field_specifiers_too():
    @pytree_class(static=("n",))
    class Sized:
        w: float = field(default=1.0)
        n: int = field(default=2)
        label: str = field(default="a", metadata={"static": True})

    assert [f.static for f in pytreekit.fields(Sized)] == [False, True, True]
    assert jax.tree_util.tree_leaves(Sized()) == [1.0]


def test_a_field_specifier_without_annotation_is_named_with_advice():
    class NoAnnotation:
        oops = field(static=True)

    with pytest.raises(
        TypeError, match=r"\.NoAnnotation: 'oops' .*no type annotation\. Annotate it"
    ):
        pytree_class(NoAnnotation)


@pytest.mark.parametrize("method", ["__setattr__", "__delattr__"])
def test_frozen_with_own_setattr_or_delattr_is_refused_with_advice(method):
    def own(self, *args):
        pass

    Custom = type("Custom", (), {"__annotations__": {"x": "int"}, method: own})
    with pytest.raises(TypeError, match=rf"^Custom: .*{method}.*remove yours, or drop frozen"):
        pytree_class(Custom, frozen=True)


def test_a_frozen_class_copies_through_its_own_setstate_or_pytreekits():
    import copy

    @pytree_class(frozen=True)
    class Versioned:
        x: int

        def __setstate__(self, state):
            object.__setattr__(self, "x", state["x"] + 100)  # e.g. migrates old pickles

    @pytree_class(frozen=True)
    class Slotted:
        __slots__ = ("x",)
        x: int

    assert copy.copy(Versioned(1)).x == 101
    assert copy.copy(Slotted(1)).x == 1 and copy.deepcopy(Slotted(2)).x == 2


def test_pytree_class_cannot_make_an_existing_dataclass_kw_only():
    with pytest.raises(TypeError) as error:

        @pytree_class(kw_only=True)
        @dataclasses.dataclass
        class Plain:
            x: int

    assert str(error.value).endswith(
        "Plain is already a dataclass, so @pytree_class cannot make it kw_only=True: "
        "pass kw_only=True to @dataclasses.dataclass instead."
    )

    @pytree_class(kw_only=True, frozen=True)
    @dataclasses.dataclass(kw_only=True, frozen=True)
    class Keyed:
        x: int

    assert Keyed(x=1).x == 1


def test_a_class_annotating_only_class_variables_keeps_its_own_init_and_field_rule():
    def __init__(self):
        self.w = jnp.ones(2)

    # Annotations as objects, not strings (this module postpones its own annotations).
    namespace = {"__annotations__": {"count": ClassVar[int]}, "count": 0, "__init__": __init__}
    Counter = pytree_class(type("Counter", (), namespace))
    assert not dataclasses.is_dataclass(Counter)
    assert [f.name for f in pytreekit.fields(Counter())] == ["w"]


def test_deleting_a_field_of_a_frozen_instance_is_refused():
    @pytree_class(frozen=True)
    class Point:
        x: float

    with pytest.raises(pytreekit.FrozenInstanceError, match=r"field 'x' of frozen .*\.Point "):
        del Point(1.0).x


def test_a_non_default_field_after_a_default_one_is_named_with_advice():
    with pytest.raises(TypeError) as error:

        @pytree_class
        class Bad:
            a: int = 0
            b: int

    assert str(error.value).endswith(
        "Bad: non-default argument 'b' follows default argument 'a'. Give it a default, move it "
        "before the fields with defaults, or make it keyword-only (field(kw_only=True), a "
        "`_: KW_ONLY` marker, or @pytree_class(kw_only=True))."
    )


@pytest.mark.parametrize("repr_", [True, False], ids=["repr", "no-repr"])
@pytest.mark.parametrize("eq", [True, False], ids=["eq", "no-eq"])
@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "mutable"])
def test_a_dataclass_below_keeps_its_repr_and_eq_choices_as_dataclasses_does(repr_, eq, frozen):
    # What @dataclass(repr=..., eq=...) decided stands under @pytree_class, for the class and
    # for a subclass made a pytree class by inheritance (which dataclasses' own subclass gets
    # from its base when it is not decorated itself).
    def made(pytree: bool) -> tuple[type, type]:
        @dataclasses.dataclass(repr=repr_, eq=eq, frozen=frozen)
        class Point:
            x: float
            y: float = 2.0

        cls = pytree_class(Point) if pytree else Point

        class Sub(cls):  # type: ignore[misc, valid-type]
            pass

        return cls, Sub

    def behaviour(cls: type) -> tuple[object, ...]:
        a, b = cls(1.0), cls(1.0)
        shown = repr(a)
        return (
            shown.startswith("<"),  # object's repr
            shown if not shown.startswith("<") else None,
            a == b,
            cls.__hash__ is object.__hash__,
            cls.__hash__ is None,
        )

    for ours, reference in zip(made(True), made(False), strict=True):
        assert behaviour(ours) == behaviour(reference), ours.__qualname__
