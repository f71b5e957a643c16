"""A subclass of a pytree class is set up when it is created, before its own decorators run: a
``@dataclasses.dataclass`` below it that decides otherwise (or annotations given since, as
Python 3.14's ``make_dataclass`` gives them) is refused at the class's first use, every use,
until it is decorated explicitly; a plain ``@dataclass`` that decides the same keeps working, as
over a dataclass base."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import jax
import pytest

import pytreekit
from pytreekit import pytree_class
from tests._versions import DEFERRED_ANNOTATIONS, PYTHON, needs_make_dataclass_decorator


def _bases() -> dict[str, type]:
    @pytree_class
    class Base:
        a: float = 0.0

    @dataclasses.dataclass
    class RBase:
        a: float = 0.0

    return {"pytree": Base, "dataclass": RBase}


def _sub(base: type, options: dict[str, Any], namespace: dict[str, Any] | None = None) -> type:
    body = {"__annotations__": {"x": float}, "x": 1.0, "__module__": __name__}
    made = type("Sub", (base,), {**body, **(namespace or {})})
    return dataclasses.dataclass(**options)(made)


def _parameters(cls: type) -> list[tuple[str, object, bool]]:
    """``cls``'s ``__init__`` parameters: name, default, keyword-only."""
    return [
        (p.name, p.default, p.kind is inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(cls).parameters.values()
    ]


def _refused(use: Any, *names: str) -> str:
    with pytest.raises(TypeError) as error:
        use()
    message = str(error.value)
    assert "Sub inherits from a pytree class" in message
    for name in names:
        assert name in message, (name, message)
    return message


def test_a_plain_dataclass_over_an_automatic_subclass_works_as_over_a_dataclass_base():
    made = {}
    for kind, base in _bases().items():

        @dataclasses.dataclass
        class Sub(base):  # type: ignore[misc, valid-type]
            x: float = 1.0
            _: dataclasses.KW_ONLY
            y: int = 2

        made[kind] = Sub
    ours, reference = made["pytree"], made["dataclass"]
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert ours.__match_args__ == reference.__match_args__
    assert [(f.name, f.kw_only, f.default) for f in dataclasses.fields(ours)] == [
        (f.name, f.kw_only, f.default) for f in dataclasses.fields(reference)
    ]
    for cls in (ours, reference):
        instance = cls(3.0, 4.0, y=5)
        assert (instance.a, instance.x, instance.y) == (3.0, 4.0, 5)
        assert repr(instance).endswith("Sub(a=3.0, x=4.0, y=5)")
    leaves, treedef = jax.tree_util.tree_flatten(ours(3.0, 4.0, y=5))
    assert leaves == [3.0, 4.0, 5]
    again = jax.tree_util.tree_unflatten(treedef, [v + 1 for v in leaves])
    assert (again.a, again.x, again.y) == (4.0, 5.0, 6)


def test_a_plain_dataclass_keeps_fields_written_with_field_specifiers():
    # The set-up replaced the specifiers by their defaults, so dataclasses reads those fields
    # otherwise below it: what pytreekit made of them as written stands, as before.
    @dataclasses.dataclass
    class Sub(_bases()["pytree"]):  # type: ignore[misc]
        y: float = pytreekit.field(static=True, default=1.0)
        z: float = dataclasses.field(default=2.0, kw_only=True)

    assert _parameters(Sub) == [("a", 0.0, False), ("y", 1.0, False), ("z", 2.0, True)]
    leaves, treedef = jax.tree_util.tree_flatten(Sub(3.0, z=4.0))
    assert leaves == [3.0, 4.0]
    assert jax.tree_util.tree_unflatten(treedef, leaves) == Sub(3.0, z=4.0)


_OPTIONS = [
    pytest.param({"kw_only": True}, id="kw_only"),
    pytest.param({"init": False}, id="init"),
    pytest.param({"repr": False}, id="repr"),
    pytest.param({"eq": False}, id="eq"),
    pytest.param(
        {"match_args": False},
        id="match_args",
        marks=pytest.mark.skipif(
            PYTHON < (3, 12),
            reason="Python 3.11's dataclasses record no match_args: an automatic subclass "
            "cannot tell @dataclass(match_args=False) from @dataclass (documented)",
        ),
    ),
]


@pytest.mark.parametrize("options", _OPTIONS)
def test_dataclass_options_the_set_up_did_not_apply_are_refused_at_every_use(
    options: dict[str, bool],
) -> None:
    cls = _sub(_bases()["pytree"], options)
    (option,) = options
    instance = cls(a=1.0) if options.get("init") is False else cls(1.0, x=2.0)
    refused = _refused(lambda: jax.tree_util.tree_leaves(instance), option)
    assert "put @pytreekit.pytree_class above the @dataclasses.dataclass on Sub" in refused
    # Refused again (the class stays unused), its repr too.
    _refused(lambda: jax.tree_util.tree_leaves(instance), option)
    _refused(lambda: repr(instance), option)
    _refused(lambda: jax.tree_util.tree_leaves(object.__new__(cls)), option)


@pytest.mark.parametrize("options", _OPTIONS)
def test_pytree_class_above_the_dataclass_does_what_a_dataclass_base_does(
    options: dict[str, bool],
) -> None:
    ours = pytree_class(_sub(_bases()["pytree"], options))
    reference = _sub(_bases()["dataclass"], options)
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert getattr(ours, "__match_args__", None) == getattr(reference, "__match_args__", None)
    instance = ours(a=1.0) if options.get("init") is False else ours(1.0, x=2.0)
    assert jax.tree_util.tree_leaves(instance) == [
        1.0,
        1.0 if options.get("init") is False else 2.0,
    ]
    # And decorating the refused class afterwards, as the message says, gives the same.
    refused = _sub(_bases()["pytree"], options)
    with pytest.raises(TypeError):
        jax.tree_util.tree_leaves(object.__new__(refused))
    pytree_class(refused)
    assert str(inspect.signature(refused)) == str(inspect.signature(reference))


def test_a_keyword_only_field_without_default_asked_below_is_named_and_follows_above():
    # The set-up fails (x without default after a), before @dataclass(kw_only=True) fixes it.
    cls = _sub(_bases()["pytree"], {"kw_only": True}, {"x": dataclasses.MISSING})
    del cls.x
    message = _refused(lambda: cls(x=1.0), "non-default argument 'x'", "pytree_class above")
    assert "@dataclasses.dataclass on Sub" in message
    ours = pytree_class(_sub(_bases()["pytree"], {"kw_only": True}, {"x": dataclasses.MISSING}))
    reference = _sub(_bases()["dataclass"], {"kw_only": True}, {"x": dataclasses.MISSING})
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert _parameters(ours) == [("a", 0.0, False), ("x", inspect.Parameter.empty, True)]
    assert jax.tree_util.tree_leaves(ours(x=1.0)) == [0.0, 1.0]


def _extra_in_place(cls: type) -> type:
    """A class decorator adding a field (as some libraries' do) to the annotations dict (this
    module's annotations are strings: a dict on every Python)."""
    cls.__dict__["__annotations__"]["extra"] = float  # noqa: RUF063 - the dict, in place
    return cls


def _extra_assigned(cls: type) -> type:
    """The same, assigning new annotations."""
    cls.__annotations__ = {**cls.__annotations__, "extra": float}
    return cls


@pytest.mark.parametrize("_with_extra", [_extra_in_place, _extra_assigned])
def test_a_field_added_since_the_set_up_is_refused_and_follows_pytree_class_above(
    _with_extra: Any,
) -> None:
    @pytree_class
    class Base:
        a: float

    @dataclasses.dataclass
    @_with_extra
    class Sub(Base):
        x: float

    _refused(lambda: jax.tree_util.tree_leaves(Sub(1.0, 2.0)), "['extra']", "pytree_class above")

    @pytree_class
    @dataclasses.dataclass
    @_with_extra
    class Fixed(Base):
        x: float

    empty = inspect.Parameter.empty
    assert _parameters(Fixed) == [("a", empty, False), ("x", empty, False), ("extra", empty, False)]
    assert jax.tree_util.tree_leaves(Fixed(1.0, 2.0, 3.0)) == [1.0, 2.0, 3.0]


@pytest.mark.skipif(
    DEFERRED_ANNOTATIONS,
    reason="from Python 3.14 on make_dataclass gives the class its annotations after creating it",
)
def test_make_dataclass_with_a_pytree_base_makes_what_it_makes_with_a_dataclass_base():
    made = {
        kind: dataclasses.make_dataclass("Sub", [("x", float, 2.0)], bases=(base,))
        for kind, base in _bases().items()
    }
    ours, reference = made["pytree"], made["dataclass"]
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert jax.tree_util.tree_leaves(ours(1.0, 5.0)) == [1.0, 5.0]


@pytest.mark.skipif(
    not DEFERRED_ANNOTATIONS,
    reason="before Python 3.14 make_dataclass creates the class with its annotations",
)
@pytest.mark.parametrize(
    "spec",
    [("x", float), ("x", float, 2.0), ("x", float, dataclasses.field(default=2.0))],
    ids=["required", "default", "field"],
)
def test_make_dataclass_with_a_pytree_base_and_its_default_decorator_is_refused(
    spec: tuple[Any, ...],
) -> None:
    @pytree_class
    class Base:
        a: float

    cls = dataclasses.make_dataclass("Sub", [spec], bases=(Base,))
    # The set-up's __init__ takes no x (it was set up without it); using an instance is refused.
    try:
        instance = cls(1.0)
    except TypeError as error:  # the set-up failed (a field(...) without its annotation yet)
        assert "decorator=pytreekit.pytree_class" in str(error)
        return
    for _ in range(2):
        _refused(lambda: jax.tree_util.tree_leaves(instance), "['x']", "decorator=pytreekit")


@needs_make_dataclass_decorator
def test_make_dataclass_with_a_pytree_base_and_pytree_class_as_decorator_works():
    make: Any = dataclasses.make_dataclass  # decorator=: Python 3.14's
    cls = make("Sub", [("x", float, 2.0)], bases=(_bases()["pytree"],), decorator=pytree_class)
    reference = dataclasses.make_dataclass(
        "Sub", [("x", float, 2.0)], bases=(_bases()["dataclass"],)
    )
    assert str(inspect.signature(cls)) == str(inspect.signature(reference))
    assert jax.tree_util.tree_leaves(cls(1.0, 5.0)) == [1.0, 5.0]


def test_a_plain_dataclass_under_a_keyword_only_parent_is_refused_and_follows_above():
    # The set-up gives the subclass its parent's kw_only=True; dataclasses makes its own field
    # positional (a dataclass base's kw_only is its own).
    @pytree_class(kw_only=True)
    class Base:
        a: float = 0.0

    @dataclasses.dataclass(kw_only=True)
    class RBase:
        a: float = 0.0

    @dataclasses.dataclass
    class Sub(Base):
        x: float = 1.0

    _refused(lambda: jax.tree_util.tree_leaves(Sub()), "the kw_only of fields ['x']")

    @pytree_class
    @dataclasses.dataclass
    class Ours(Base):
        x: float = 1.0

    @dataclasses.dataclass
    class Reference(RBase):
        x: float = 1.0

    assert _parameters(Ours) == _parameters(Reference) == [("x", 1.0, False), ("a", 0.0, True)]
    assert jax.tree_util.tree_leaves(Ours(2.0, a=3.0)) == [3.0, 2.0]


def test_a_plain_dataclass_with_every_own_field_after_a_kw_only_marker_works():
    made = {}
    for kind, base in _bases().items():

        @dataclasses.dataclass
        class Sub(base):  # type: ignore[misc, valid-type]
            _: dataclasses.KW_ONLY
            x: float = 1.0

        made[kind] = Sub
    assert _parameters(made["pytree"]) == _parameters(made["dataclass"])
    assert jax.tree_util.tree_leaves(made["pytree"](2.0, x=3.0)) == [2.0, 3.0]
