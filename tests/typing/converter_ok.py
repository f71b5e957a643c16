"""Converter fields: the field holds the converter's result; the default is of its input type."""

from typing import assert_type

from pytreekit import field, pytree_class


def to_int(value: str | int) -> int:
    return int(value)


@pytree_class
class Counter:
    n: int = field(converter=to_int)
    m: int = field(converter=to_int, default="7")


# Passing a str is right for pyright (the converter's input) but not for mypy (the annotation):
# converter_errors.py shows both. An int suits both.
c = Counter(3)
assert_type(c.n, int)
assert (c.n, c.m) == (3, 7)
d = Counter(4, m=5)
assert (d.n, d.m) == (4, 5)
