"""mypy --strict must accept this file."""

import jax
import jax.numpy as jnp

from pytreekit import field, fields, pytree_class, replace


@pytree_class
class Annotated:
    weights: jax.Array
    size: int = field(static=True, default=3)
    names: list[str] = field(default_factory=list)


@pytree_class(frozen=True, static=("rate",))
class Options:
    rate: float
    steps: int = 10


@pytree_class(static=("in_features",))
class OwnInit:
    def __init__(self, key: jax.Array, in_features: int) -> None:
        self.in_features = in_features
        self.weights = jax.random.normal(key, (in_features,))


a: Annotated = Annotated(jnp.ones(2))
b = Annotated(jnp.ones(2), 4, ["x"])
size: int = b.size
o = Options(0.1)
steps: int = o.steps
own = OwnInit(jax.random.PRNGKey(0), 3)
features: int = own.in_features
updated: Annotated = replace(a, size=5)
all_fields = fields(Annotated)
