"""field() and fields(): declaration, order, metadata, and declaration errors."""

import dataclasses
import importlib.util
import inspect
import sys
from typing import Any

import jax
import pytest

import pytreekit
from pytreekit import MISSING, Field, field, fields, pytree_class


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


CLASSVAR_SPELLINGS = {
    "ClassVar[int]": "from typing import ClassVar",
    "typing.ClassVar[int]": "import typing",
    "t.ClassVar[int]": "import typing as t",
    "CV[int]": "from typing import ClassVar as CV",
    "ClassVar": "from typing import ClassVar",
    "ClassVar[int]  # not imported": "",  # dataclasses: a field (the name is nothing there)
}


@pytest.mark.parametrize("postponed", [True, False], ids=["postponed", "evaluated"])
@pytest.mark.parametrize("spelling", sorted(CLASSVAR_SPELLINGS))
def test_classvar_spellings_are_read_as_dataclasses_reads_them(
    tmp_path: Any, spelling: str, postponed: bool
) -> None:
    """A class whose only annotation is a ClassVar in some spelling, with its own ``__init__``:
    annotated (a dataclass) exactly when dataclasses finds a field in it."""
    annotation = spelling.split("  #")[0]
    if not postponed:
        if not CLASSVAR_SPELLINGS[spelling]:
            return  # evaluated, a name not imported is a NameError where the class is defined
        annotation = repr(annotation)  # a string annotation, postponed by hand
    source = "\n".join(
        [
            "from __future__ import annotations" if postponed else "",
            CLASSVAR_SPELLINGS[spelling],
            "class Counter:",
            f"    count: {annotation} = 0",
            "    def __init__(self, w):",
            "        self.w = w",
        ]
    )
    made = []
    for decorate in (dataclasses.dataclass, pytree_class):
        path = tmp_path / f"classvar_{decorate.__name__}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
            made.append(decorate(module.Counter))
        finally:
            del sys.modules[path.stem]
    reference, ours = made
    has_fields = bool(dataclasses.fields(reference))
    assert dataclasses.is_dataclass(ours) == has_fields
    if not has_fields:
        assert jax.tree_util.tree_leaves(ours(1.0)) == [1.0]
    else:  # the annotated path: the attribute its own __init__ sets is no field
        with pytest.raises(TypeError, match="'w', which is not a field"):
            ours(1.0)


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
        match=r"Holder: mutable default <class 'list'> for field items is not allowed: "
        r"use default_factory",
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


def test_field_repr_shows_the_dataclasses_attributes_and_pytreekits_own():
    f = field(static=True, default=3, converter=int)
    text = repr(f)
    assert text.startswith("pytreekit.Field(name=None,type=None,default=3,")
    assert text.endswith(",static=True,converter=<class 'int'>)")


def test_class_level_static_keeps_a_pytreekit_fields_converter_and_other_settings():
    @pytree_class(static=("size",))
    class Sized:
        weights: Any
        size: int = field(default=2, converter=int, repr=False)

    (weights_field, size_field) = fields(Sized)
    assert (weights_field.static, size_field.static) == (False, True)
    assert size_field.converter is int and size_field.repr is False
    sized = Sized(1.0, size="5")
    assert sized.size == 5
    assert jax.tree_util.tree_leaves(sized) == [1.0]
    assert "size" not in repr(sized)


def test_a_dataclasses_field_subclass_with_a_slot_left_unset_is_converted():
    class DocumentedField(dataclasses.Field):  # as a third-party library might subclass it
        __slots__ = ("doc_url",)

    def documented(**kwargs):
        params = inspect.signature(dataclasses.Field).parameters
        values = {"default": dataclasses.MISSING, "default_factory": dataclasses.MISSING}
        values |= {"init": True, "repr": True, "hash": None, "compare": True}
        values |= {"metadata": {"static": True}, "kw_only": dataclasses.MISSING}
        values |= {"doc": None}  # Python 3.14's parameter (dropped below on earlier ones)
        values |= kwargs
        return DocumentedField(**{k: v for k, v in values.items() if k in params})

    @pytree_class
    class WithThirdPartyField:
        weights: Any
        n: int = documented(default=4)

    (_, n_field) = fields(WithThirdPartyField)
    assert isinstance(n_field, Field) and n_field.static and n_field.default == 4
    assert not hasattr(n_field, "doc_url")
    assert jax.tree_util.tree_leaves(WithThirdPartyField(1.0)) == [1.0]


def test_field_made_directly_has_dataclasses_defaults_and_is_a_leaf():
    made, reference = Field(), dataclasses.field()
    for name in ("default", "default_factory", "init", "repr", "hash", "compare", "kw_only"):
        assert getattr(made, name) == getattr(reference, name), name
    assert dict(made.metadata) == {} and (made.static, made.converter) == (False, None)

    @pytree_class
    class Direct:
        weights: Any = Field()
        size: int = Field(static=True, default=2)

    a, b = Direct(1.0), Direct(2.0)
    assert jax.tree_util.tree_leaves(a) == [1.0]
    assert a != b and a == Direct(1.0)  # the leaf is compared
    assert repr(a).endswith("<locals>.Direct(weights=1.0, size=2)")


def test_a_subclass_making_an_inherited_field_static_leaves_the_bases_field_alone():
    @pytree_class
    class Base:
        x: int
        y: int = 0

    @pytree_class(static=("x",))
    class Sub(Base):
        pass

    assert [f.static for f in pytreekit.fields(Sub)] == [True, False]
    assert [f.static for f in pytreekit.fields(Base)] == [False, False]
    assert jax.tree_util.tree_leaves(Sub(1, 2)) == [2]
