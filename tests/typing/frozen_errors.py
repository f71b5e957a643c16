"""Assignments to frozen instances (mypy does not report `del`), and the own-__init__ form
checkers reject."""

from pytreekit import pytree_class, replace


@pytree_class(frozen=True)
class Options:
    rate: float
    steps: int = 10


o = Options(0.1)
o.rate = 0.2  # E: mypy[misc] pyright[reportAttributeAccessIssue]
del o.steps  # E: pyright[reportAttributeAccessIssue]
replace(o, rates=0.2)  # replace's changes are not checked: pytreekit raises TypeError at run time


# pytreekit lets a frozen class's own __init__ assign its fields; checkers do not (write
# object.__setattr__(self, "x", ...), as dataclasses requires).
@pytree_class(frozen=True)
class Doubled:
    x: float

    def __init__(self, x: float) -> None:
        self.x = 2 * x  # E: mypy[misc] pyright[reportAttributeAccessIssue]
