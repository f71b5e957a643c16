"""linearize: primals that do not fit the function's parameters."""

import jax

from pytreekit import linearize

x = jax.random.normal(jax.random.key(0), (3,))


def scale(x: jax.Array, factor: float) -> jax.Array:
    return x * factor


linearize(scale, x)  # E: mypy[arg-type] pyright[reportArgumentType]
linearize(scale, x, "two")  # E: mypy[arg-type] pyright[reportArgumentType]
out, _ = linearize(scale, x, 2.0)
wrong: str = out  # E: mypy[assignment] pyright[reportAssignmentType]
