"""Converter fields: pyright types __init__'s parameter by the converter's input; mypy, which has
no converter support for dataclass_transform, by the annotation."""

from pytreekit import field, pytree_class


def to_int(value: str) -> int:
    return int(value)


@pytree_class
class Counter:
    n: int = field(converter=to_int)


Counter("3")  # E: mypy[arg-type] pyright[none]
Counter(3)  # E: pyright[reportArgumentType]


@pytree_class
class Mismatch:
    name: str = field(converter=to_int)  # E: mypy[assignment] pyright[reportAssignmentType]
