"""Wrong calls of generated and kept __init__s, wrong defaults and decorator arguments."""

import jax

from pytreekit import field, pytree_class

w = jax.random.normal(jax.random.key(0), (2,))


@pytree_class
class Annotated:
    weights: jax.Array
    size: int = field(static=True, default=3)
    steps: int = field(init=False, default=0)


@pytree_class(kw_only=True)
class KeywordOnly:
    rate: float


@pytree_class(static=("in_features",))
class OwnInit:
    def __init__(self, in_features: int) -> None:
        self.in_features = in_features


Annotated(w, size="three")  # E: mypy[arg-type] pyright[reportArgumentType]
Annotated()  # E: mypy[call-arg] pyright[reportCallIssue]
Annotated(w, sizes=4)  # E: mypy[call-arg] pyright[reportCallIssue]
Annotated(w, 4, 5)  # E: mypy[call-arg] pyright[reportCallIssue]
Annotated(w, steps=1)  # E: mypy[call-arg] pyright[reportCallIssue]
KeywordOnly(0.1)  # E: mypy[call-arg] pyright[reportCallIssue]
OwnInit("three")  # E: mypy[arg-type] pyright[reportArgumentType]
OwnInit(3).in_features.upper()  # E: mypy[attr-defined] pyright[reportAttributeAccessIssue]
bad_default: int = field(default="x")  # E: mypy[assignment] pyright[reportAssignmentType]
pytree_class(static=3)  # E: mypy[call-overload] pyright[reportArgumentType]


# As for dataclasses.field: pyright's strict mode infers list[Unknown] from a bare `list` (write
# default_factory=list[str]); basedpyright infers from the annotation.
# fmt: off
@pytree_class
class Factory:
    names: list[str] = field(default_factory=list)  # E: pyright-strict[reportUnknownVariableType] basedpyright[none]
# fmt: on
