"""Subclasses that add fields: decorate them too, and every checker sees their __init__."""

from typing import assert_type

import jax

from pytreekit import field, fields, pytree_class

w = jax.random.normal(jax.random.key(0), (2,))


@pytree_class
class Parent:
    w: jax.Array
    n: int = field(static=True, default=1)


@pytree_class  # a subclass adding fields is decorated as well (its options are its own)
class Child(Parent):
    scale: float = 2.0


c = Child(w, 3, 4.0)
assert_type(c, Child)
assert_type(c.scale, float)
assert_type(c.n, int)
assert_type(Child(w, scale=0.5).w, jax.Array)
assert [f.name for f in fields(Child)] == ["w", "n", "scale"]
assert (c.n, c.scale) == (3, 4.0)


class Plain(Parent):  # a subclass adding no field needs no decorator: its __init__ is Parent's
    def norm(self) -> jax.Array:
        return (self.w**2).sum()


assert_type(Plain(w, 2).norm(), jax.Array)
