"""field() and fields(): declaration, order, metadata, and declaration errors."""

import jax
import pytest

import pytreekit
from pytreekit import MISSING, field, fields, pytree_class


def test_fields_in_declaration_order_base_first():
    @pytree_class
    class Base:
        a: int = field(static=True, metadata={"unit": "m"})
        b: jax.Array = None  # type: ignore[assignment]

    class Child(Base):
        c: float = 1.0
        a: int = field(static=True, default=4)  # redeclared: keeps its place

    names = [(f.name, f.static) for f in fields(Child)]
    assert names == [("a", True), ("b", False), ("c", False)]
    a = fields(Base)[0]
    assert a.metadata["unit"] == "m" and a.default is MISSING
    assert fields(Child)[0].default == 4
    assert fields(Child(1)) == fields(Child)


def test_classvar_is_not_a_field():
    from typing import ClassVar

    @pytree_class
    class WithClassVar:
        count: ClassVar[int] = 0
        x: int = 1

    assert [f.name for f in fields(WithClassVar)] == ["x"]


def test_field_defaults_become_class_attributes():
    @pytree_class
    class Defaults:
        y: int = field(static=True)
        x: int = field(default=3)

    assert Defaults.x == 3
    assert not hasattr(Defaults, "y")


def test_field_without_annotation_is_named():
    with pytest.raises(
        TypeError, match=r"NoAnnotation: 'oops' is a field but has no type annotation. Annotate it"
    ):

        @pytree_class
        class NoAnnotation:
            oops = field(static=True)


def test_mutable_default_is_refused():
    with pytest.raises(
        ValueError,
        match=r"Holder: mutable default <class 'list'> for field items is not allowed: use default_factory",
    ):

        @pytree_class
        class Holder:
            items: list = []  # noqa: RUF012


def test_field_argument_errors():
    with pytest.raises(ValueError, match="not both"):
        field(default=1, default_factory=list)
    with pytest.raises(TypeError, match="default_factory"):
        field(default_factory=3)  # type: ignore[call-overload]


def test_fields_of_unannotated_instances_are_discovered():
    @pytree_class(static=("n",))
    class Discovered:
        def __init__(self):
            self.n = 2
            self.w = jax.numpy.ones(2)
            self.__cache = {}  # private: not a field

    d = Discovered()
    assert [(f.name, f.static) for f in fields(d)] == [("n", True), ("w", False)]
    with pytest.raises(TypeError, match=r"fields\(.*Discovered\).*call fields\(\) on an instance"):
        fields(Discovered)


def test_fields_and_is_pytree_class_on_other_objects():
    class Plain:
        pass

    assert not pytreekit.is_pytree_class(Plain) and not pytreekit.is_pytree_class(3)
    with pytest.raises(TypeError, match=r"fields\(\) expects a @pytree_class.*Plain"):
        fields(Plain)
