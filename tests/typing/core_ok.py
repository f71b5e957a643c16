"""Generated and kept __init__ signatures, field types, the functional API: clean everywhere."""

import copy
from typing import Any, Generic, TypeVar, assert_type

import jax

from pytreekit import Field, field, fields, is_pytree_class, pytree_class, replace

T = TypeVar("T")
KEY = jax.random.key(0)
w = jax.random.normal(KEY, (2,))


@pytree_class
class Annotated:
    weights: jax.Array
    size: int = field(static=True, default=3)
    names: list[str] = field(default_factory=list[str])
    steps: int = field(init=False, default=0)


a = Annotated(w)
assert_type(a, Annotated)
b = Annotated(w, 4, ["x"])
c = Annotated(weights=w, names=["y"], size=5)
assert_type(b.size, int)
assert_type(c.names, list[str])
assert_type(a.steps, int)
assert (b.size, c.names, a.steps, a.names) == (4, ["y"], 0, [])


@pytree_class(kw_only=True)
class KeywordOnly:
    rate: float
    steps: int = 10


k = KeywordOnly(rate=0.1)
assert_type(k.rate, float)
assert (k.rate, k.steps) == (0.1, 10)


@pytree_class(static=("in_features",))
class OwnInit:
    weights: jax.Array
    in_features: int

    def __init__(self, key: jax.Array, in_features: int) -> None:
        self.in_features = in_features
        self.weights = jax.random.normal(key, (in_features,))


own = OwnInit(KEY, 3)
assert_type(own.in_features, int)
assert own.weights.shape == (3,)


@pytree_class(static=("activation",))
class Unannotated:
    def __init__(self, scale: float, activation: str = "tanh") -> None:
        self.scale = scale
        self.activation = activation


u = Unannotated(2.0, activation="relu")
assert_type(u.scale, float)
assert_type(u.activation, str)


@pytree_class
class Box(Generic[T]):
    value: T


assert_type(Box(w), Box[jax.Array])
assert_type(Box[int](3).value, int)


updated = replace(a, size=5)
assert_type(updated, Annotated)
assert updated.size == 5
assert_type(copy.copy(a), Annotated)
all_fields = fields(Annotated)
assert_type(all_fields, tuple[Field, ...])
assert [f.name for f in all_fields] == ["weights", "size", "names", "steps"]
assert_type(is_pytree_class(a), bool)
assert_type(a == b, bool)


class ThirdParty:
    def __init__(self, scale: float) -> None:
        self.scale = scale


registered: type[ThirdParty] = pytree_class(ThirdParty)
decorate = pytree_class(static=("scale",))
leaves: list[Any] = jax.tree_util.tree_leaves(ThirdParty(1.0))
assert leaves == [1.0]
