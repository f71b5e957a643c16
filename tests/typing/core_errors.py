"""mypy --strict must report exactly the errors marked `# E: <code>` on their lines."""

import jax
import jax.numpy as jnp

from pytreekit import field, pytree_class


@pytree_class
class Annotated:
    weights: jax.Array
    size: int = field(static=True, default=3)


@pytree_class(frozen=True)
class Frozen:
    rate: float


@pytree_class(static=("in_features",))
class OwnInit:
    def __init__(self, in_features: int) -> None:
        self.in_features = in_features


Annotated(jnp.ones(2), size="three")  # E: arg-type
Annotated()  # E: call-arg
Annotated(jnp.ones(2), sizes=4)  # E: call-arg
Frozen(0.1).rate = 0.2  # E: misc
OwnInit("three")  # E: arg-type
bad_default: int = field(default="x")  # E: assignment
