"""What users trip over in the features of their classes: cached properties, mixins, how options
are spelt, metadata objects, dataclasses stacked under the decorator. Each compared with the
reference where one exists (a hand-registered class, ``dataclasses``)."""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import sys
import warnings
import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import require

import pytreekit
from pytreekit import pytree_class

# -- a functools.cached_property read while __init__ runs (item 1) -----------------------------


class _Normed:
    """A layer that validates its weights by reading a cached norm in __init__."""

    def __init__(self, w):
        self.w = w
        if not self.norm > 0:
            raise ValueError("zero weights")

    @functools.cached_property
    def norm(self):
        return jnp.sqrt(jnp.sum(self.w**2))

    def __call__(self, x):
        return self.w @ x / self.norm


class HandNormed(_Normed):
    pass


jax.tree_util.register_pytree_node(
    HandNormed,
    lambda n: ((n.w,), None),
    lambda aux, children: _rebuilt(HandNormed, *children),
)


def _rebuilt(cls, w):
    obj = object.__new__(cls)
    obj.w = w
    return obj


@pytree_class
class KitNormed(_Normed):
    pass


@pytree_class
class AnnotatedNormed(_Normed):
    w: jax.Array


@pytest.mark.parametrize("cls", [KitNormed, AnnotatedNormed])
def test_a_cached_property_read_in_init_is_not_a_field_and_is_recomputed(cls):
    w, x = jnp.array([3.0, 4.0]), jnp.array([1.0, 2.0])
    hand, kit = HandNormed(w), cls(w)
    assert [f.name for f in pytreekit.fields(kit)] == ["w"]
    assert len(jax.tree_util.tree_leaves(kit)) == 1
    # The gradient through the norm, as the hand-registered class gives it.
    expected = jax.grad(lambda m: m(x))(hand).w
    np.testing.assert_allclose(jax.grad(lambda m: m(x))(kit).w, expected, rtol=1e-6)
    np.testing.assert_allclose(expected, [-0.064, 0.048], atol=1e-6)
    # A copy JAX or replace makes computes the norm of its own weights, never carries the old.
    doubled = jax.tree_util.tree_map(lambda a: 2 * a, kit)
    assert float(doubled.norm) == pytest.approx(10.0)
    assert float(pytreekit.replace(kit, w=jnp.array([0.0, 1.0])).norm) == pytest.approx(1.0)


def test_a_function_at_class_level_is_a_default_an_instance_may_override():
    # Not a descriptor that caches: an instance's own value is a field, as before.
    @pytree_class(static=("act",))
    class Layer:
        act = staticmethod(jnp.tanh)

        def __init__(self, w, act=None):
            self.w = w
            if act is not None:
                self.act = act

    layer = Layer(jnp.ones(2), jax.nn.relu)
    assert [f.name for f in pytreekit.fields(layer)] == ["w", "act"]
    assert jax.tree_util.tree_map(lambda a: a, layer).act is jax.nn.relu


# -- a mixin's dunders on a subclass (item 2) --------------------------------------------------


class _EqMixin:
    def __eq__(self, other):
        return "mixin eq"


class _ReprMixin:
    def __repr__(self):
        return "mixin repr"


class _HashMixin:
    def __hash__(self):
        return 42


_MIXINS = {"eq": _EqMixin, "repr": _ReprMixin, "hash": _HashMixin}


def _which(cls: type) -> dict[str, Any]:
    """Which method each of eq, repr, hash is on an instance: the mixin's, or another."""
    a, b = cls(), cls()
    try:
        hashed = hash(a) == 42
    except TypeError:
        hashed = "unhashable"
    return {"eq": (a == b) == "mixin eq", "repr": repr(a) == "mixin repr", "hash": hashed}


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("first", [True, False], ids=["mixin-first", "base-first"])
@pytest.mark.parametrize(
    "dunders",
    [c for n in range(1, 4) for c in itertools.combinations(_MIXINS, n)],
    ids="+".join,
)
def test_a_mixins_dunders_are_kept_as_dataclasses_keeps_them(frozen, first, dunders):
    mixin = type("Mixin", tuple(_MIXINS[d] for d in dunders), {})

    @pytree_class(frozen=frozen)
    class Base:
        x: float = 1.0

    @dataclasses.dataclass(frozen=frozen)
    class DataBase:
        x: float = 1.0

    def bases(base: type) -> tuple[type, ...]:
        return (mixin, base) if first else (base, mixin)

    # By inheritance: pytreekit sets the subclass up; a subclass of a dataclass is left alone.
    inherited = type("Sub", bases(Base), {"__module__": __name__})
    plain = type("Sub", bases(DataBase), {"__module__": __name__})
    assert _which(inherited) == _which(plain)
    # Decorated explicitly: as @dataclass decides, from the class's own body.
    decorated = pytree_class(frozen=frozen)(type("Sub", bases(Base), {"__module__": __name__}))
    dataclass = dataclasses.dataclass(frozen=frozen)(type("Sub", bases(DataBase), {}))
    assert _which(decorated) == _which(dataclass)


# -- how options are spelt (items 3 and 10) --------------------------------------------------------


@pytest.mark.parametrize("value", [1, np.True_, np.int64(1)])
def test_a_flag_given_as_a_value_equal_to_true_is_taken_as_dataclasses_takes_it(value):
    @pytree_class(frozen=value)
    class Point:
        x: float = 1.0

    @dataclasses.dataclass(frozen=value)
    class Reference:
        x: float = 1.0

    with pytest.raises(dataclasses.FrozenInstanceError):
        Point().x = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        Reference().x = 2.0
    assert pytreekit.fields(pytree_class(type("F", (), {"__annotations__": {"y": int}})))
    assert pytreekit.field(static=value).static is True


@pytest.mark.parametrize("value", ["False", None, [True], 2, jnp.ones(2)])
def test_a_flag_that_is_not_a_truth_value_is_refused_naming_it(value):
    with pytest.raises(TypeError, match=r"pytree_class\(frozen=\.\.\.\) takes True or False, got"):
        pytree_class(frozen=value)
    with pytest.raises(TypeError, match=r"field\(init=\.\.\.\) takes True or False, got"):
        pytreekit.field(init=value)


# -- metadata of any mapping-like object (item 11) -----------------------------------------------


class _NameSpace:
    """Like the metadata object CPython's own dataclasses tests use: no get, and a missing key is
    an AttributeError, not a KeyError."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __getitem__(self, item):
        return getattr(self, item)

    def __len__(self):
        return len(self.__dict__)


@pytest.mark.parametrize("make_field", [dataclasses.field, pytreekit.field])
def test_metadata_whose_missing_keys_raise_attribute_error_is_accepted(make_field):
    @pytree_class
    class Model:
        w: float = make_field(default=1.0, metadata=_NameSpace(unit="m"))

    @dataclasses.dataclass
    class Reference:
        w: float = dataclasses.field(default=1.0, metadata=_NameSpace(unit="m"))

    assert pytreekit.fields(Model)[0].metadata["unit"] == "m"
    assert dataclasses.fields(Reference)[0].metadata["unit"] == "m"
    assert pytreekit.fields(Model)[0].static is False


# -- dataclasses under the decorator, and Field's repr (item 12) ---------------------------------


def test_a_frozen_dataclass_without_fields_becomes_a_frozen_pytree_class():
    @pytree_class(frozen=True)
    @dataclasses.dataclass(frozen=True)
    class Empty:
        pass

    @dataclasses.dataclass(frozen=True)
    class Reference:
        pass

    assert Empty() == Empty() and hash(Empty()) == hash(Reference())
    assert jax.tree_util.tree_leaves(Empty()) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        Empty().x = 1


def test_a_dataclass_under_an_explicit_decorator_on_a_subclass_keeps_its_options():
    @pytree_class
    class Base:
        x: int = 1

    @pytree_class
    @dataclasses.dataclass(order=True, repr=False)
    class Sub(Base):  # set up by inheritance first, then the two decorators
        y: int = 2

    @dataclasses.dataclass
    class DataBase:
        x: int = 1

    @dataclasses.dataclass(order=True, repr=False)
    class Reference(DataBase):
        y: int = 2

    assert (Sub(1, 2) < Sub(1, 3)) == (Reference(1, 2) < Reference(1, 3)) is True
    assert jax.tree_util.tree_leaves(Sub(1, 2)) == [1, 2]


@pytest.mark.skipif(
    sys.version_info < (3, 12), reason="dataclasses records match_args from Python 3.12"
)
def test_match_args_false_under_an_explicit_decorator_on_a_subclass_is_kept():
    @pytree_class
    class Base:
        x: int = 1

    @pytree_class
    @dataclasses.dataclass(match_args=False)
    class Sub(Base):
        y: int = 2

    @dataclasses.dataclass
    class DataBase:
        x: int = 1

    @dataclasses.dataclass(match_args=False)
    class Reference(DataBase):
        y: int = 2

    assert Sub.__dict__.get("__match_args__") == Reference.__dict__.get("__match_args__") is None


def test_a_field_whose_type_is_the_field_itself_shows_type_as_dataclasses_does():
    reference, ours = dataclasses.field(), pytreekit.field()
    for f in (reference, ours):
        f.name, f.type = "id", f
    assert ",type=...," in repr(reference)
    assert ",type=...," in repr(ours) and repr(ours).startswith("pytreekit.Field(name='id',")


# -- classes are freed once their registrations are undone (item 9) -------------------------------


def test_a_class_whose_registrations_are_undone_is_freed():
    optree = require("optree")

    def make() -> weakref.ref[type]:
        @pytree_class(backends=("optree",))
        class Local:
            def __init__(self):
                self.w = jnp.ones(2)

        obj = Local()
        assert optree.tree_leaves(obj, namespace="pytreekit")[0].shape == (2,)
        optree.unregister_pytree_node(Local, namespace="pytreekit")
        return weakref.ref(Local)

    ref = make()
    gc.collect()
    assert ref() is None


# -- messages (item 13) ----------------------------------------------------------------------------


def test_a_partial_in_a_repr_shows_its_function_by_name():
    @pytree_class(static=("act",))
    class Layer:
        def __init__(self):
            self.act = functools.partial(jax.nn.leaky_relu, negative_slope=0.2)

    assert repr(Layer()).endswith(
        ".Layer(act=functools.partial(<function leaky_relu>, negative_slope=0.2))"
    )


def test_the_warning_for_a_plain_override_points_at_it_once():
    @pytree_class
    class Base:
        @pytreekit.custom_jvp_method
        def f(self, x):
            return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")

        @pytree_class(repr=False)  # set up by inheritance, then decorated: one warning
        class Sub(Base):
            def f(self, x):  # the line the warning names
                return 2 * x

    lines = [w for w in caught if "overrides" in str(w.message)]
    assert len(lines) == 1
    assert lines[0].filename == __file__
    assert lines[0].lineno == Sub.f.__code__.co_firstlineno
