"""Subclasses: a decorated one is checked like any class; an undecorated one that adds fields is
seen with its parent's __init__ (PEP 681's decorator form does not reach it), the reverse of what
runs, which is why the README says to decorate it."""

import jax

from pytreekit import pytree_class

w = jax.random.normal(jax.random.key(0), (2,))


@pytree_class
class Parent:
    w: jax.Array


@pytree_class
class Child(Parent):
    scale: float = 2.0


Child(w, "big")  # E: mypy[arg-type] pyright[reportArgumentType]
Child(scale=1.0)  # E: mypy[call-arg] pyright[reportCallIssue]


class Undecorated(Parent):
    scale: float = 2.0


Undecorated(w, 0.5)  # E: mypy[call-arg] pyright[reportCallIssue]
