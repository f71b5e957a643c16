"""frozen=True: assignment and deletion raise and name the field; __init__ may still assign."""

import copy
import pickle

import jax
import jax.numpy as jnp
import pytest

import pytreekit
from pytreekit import FrozenInstanceError, field, pytree_class


@pytree_class(frozen=True)
class Point:
    x: jax.Array
    label: str = field(static=True, default="p")


@pytree_class(frozen=True, static=("n",))
class OwnInit:
    def __init__(self, n):
        self.n = n
        self.w = jnp.zeros(n)
        self.w = self.w + 1  # reassignment inside __init__ is fine


class OwnInitChild(OwnInit):
    def __init__(self, n):
        super().__init__(n)
        self.extra = jnp.ones(1)  # still initialising after super().__init__ returns


def test_assignment_and_deletion_raise_naming_the_field():
    p = Point(jnp.ones(2))
    with pytest.raises(
        FrozenInstanceError, match=r"field 'x' of frozen Point.*replace\(obj, x="
    ) as e:
        p.x = jnp.zeros(2)  # type: ignore[misc]
    assert isinstance(e.value, AttributeError)
    with pytest.raises(FrozenInstanceError, match=r"delete field 'label' of frozen Point"):
        del p.label  # type: ignore[misc]
    assert pytreekit.replace(p, label="q").label == "q"


@pytest.mark.parametrize("make", [lambda: Point(jnp.ones(2)), lambda: OwnInit(2)])
def test_a_new_attribute_is_refused_with_advice_that_works(make):
    obj = make()
    with pytest.raises(FrozenInstanceError) as refused:
        obj.cache = 2.0
    said = str(refused.value)
    assert "'cache'" in said and "not a field" in said and "cached_property" in said
    assert "replace(" not in said  # replace() refuses a name that is no field
    with pytest.raises(TypeError, match="no field 'cache'"):
        pytreekit.replace(obj, cache=2.0)
    field_name = "x" if isinstance(obj, Point) else "w"
    with pytest.raises(FrozenInstanceError, match=rf"replace\(obj, {field_name}="):
        setattr(obj, field_name, 1.0)


def test_own_init_may_assign_then_instance_is_frozen():
    o = OwnInit(3)
    assert float(o.w.sum()) == 3.0
    with pytest.raises(FrozenInstanceError, match="field 'w' of frozen OwnInit"):
        o.w = jnp.zeros(3)
    child = OwnInitChild(2)
    assert child.extra.shape == (1,) and len(jax.tree_util.tree_leaves(child)) == 2
    with pytest.raises(FrozenInstanceError):
        child.extra = 1


def test_post_init_may_assign_in_frozen_classes():
    @pytree_class(frozen=True)
    class Normalised:
        x: jax.Array
        norm: jax.Array = field(init=False)

        def __post_init__(self):
            self.norm = jnp.linalg.norm(self.x)

    assert float(Normalised(jnp.array([3.0, 4.0])).norm) == 5.0


def test_frozen_instances_copy_pickle_and_rebuild():
    p = Point(jnp.ones(2))
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p) == p and copy.copy(p) == p
    assert jax.jit(lambda p: p)(p) == p


def test_frozen_is_inherited_by_subclasses():
    class Point3(Point):
        z: jax.Array = None  # type: ignore[assignment]

    p = Point3(jnp.ones(1), "a", jnp.ones(1))
    with pytest.raises(FrozenInstanceError):
        p.z = 1


def test_a_frozen_dataclass_hierarchy_under_a_pytree_base_imports():
    # The subclass is set up automatically (the subclass hook) before its own @dataclass runs:
    # that @dataclass(frozen=True) writes the frozen methods, which the set-up left to inherit.
    import dataclasses

    @pytree_class(frozen=True)
    @dataclasses.dataclass(frozen=True)
    class Base:
        x: int

    @dataclasses.dataclass(frozen=True)
    class Child(Base):
        y: int

    @pytree_class(frozen=True)
    @dataclasses.dataclass(frozen=True)
    class Explicit(Base):
        y: int

    class Automatic(Base):  # keeps Base's __init__, as a subclass of a user's __init__ does
        y: int = 2

    for cls in (Child, Explicit, Automatic):
        instance = cls(1, 2) if cls is not Automatic else cls(1)
        assert jax.tree_util.tree_leaves(instance) == [1, 2]
        assert jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda v: v + 1, instance)) == [
            2,
            3,
        ]
        with pytest.raises(dataclasses.FrozenInstanceError):
            instance.x = 5  # type: ignore[misc]
    assert "__setattr__" not in vars(Automatic)  # Base's, inherited
    assert Explicit.__setattr__.__qualname__.endswith("Explicit.__setattr__")
    with pytest.raises(FrozenInstanceError, match=r"field 'y' of frozen .*Automatic instance"):
        Automatic(1).y = 3  # type: ignore[misc]


def test_an_automatic_subclass_owns_the_frozen_methods_when_a_mixin_defines_its_own():
    class Loud:
        def __setattr__(self, name, value):  # nearer than the pytree base's frozen one
            raise AssertionError("never called on a frozen pytree instance")

    class Child(Loud, Point):
        pass

    assert "__setattr__" in vars(Child) and "__delattr__" in vars(Child)
    with pytest.raises(FrozenInstanceError):
        Child(jnp.ones(1)).x = 1  # type: ignore[misc]


def test_frozen_with_own_setattr_is_refused():
    with pytest.raises(
        TypeError,
        match=r"Custom: Cannot overwrite attribute __setattr__ in class Custom. "
        r"frozen=True needs to own __setattr__",
    ):

        @pytree_class(frozen=True)
        class Custom:
            x: int

            def __setattr__(self, name, value):
                object.__setattr__(self, name, value)


def test_not_frozen_allows_assignment():
    @pytree_class
    class Mutable:
        x: int

    m = Mutable(1)
    m.x = 2
    assert m.x == 2


@pytree_class(frozen=True)
class Slotted:
    __slots__ = ("x", "n")
    x: jax.Array
    n: int


def test_frozen_instances_with_slots_copy_and_pickle():
    s = Slotted(jnp.arange(2.0), 3)
    for other in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(other) is Slotted and other == s and other.n == 3
        assert not hasattr(other, "__dict__")
        with pytest.raises(FrozenInstanceError, match="field 'n' of frozen Slotted"):
            other.n = 4  # type: ignore[misc]


def test_a_frozen_class_keeps_its_own_setstate():
    @pytree_class(frozen=True)
    class Versioned:
        x: int

        def __setstate__(self, state):
            object.__setattr__(self, "x", state["x"] + 100)  # e.g. migrates old pickles

    assert copy.copy(Versioned(1)).x == 101
