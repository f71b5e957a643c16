"""The wire format of static data, as data: the magic, the aux format number, how deep values
nest, and each tag with what it holds, how many parts follow it, and whether it is plain data.

Static data is ``MAGIC`` then ASCII JSON. Strings, finite floats, ints, bools and ``None`` are
JSON's own; a JSON object is a dict whose keys are all strings (or an object's fields); every
other value is an array whose first element is a tag of ``TAGS``. The reader checks each tag's
arity and plainness here, before the tag's own decoder runs.
"""

from __future__ import annotations

from typing import NamedTuple

MAGIC = b"PTK1"
MAGIC_TEXT = MAGIC.decode("ascii")
# The aux data an artifact stores per node: (FORMAT, "module:qualname" of the class written,
# field names, static flags, static values), as static data or pickled for a class opted in.
# 3 (pytreekit 0.3): the same without the class; 2: format 3 pickled; 1 (pytreekit 0.2): (1, field
# names or None for an annotated class, static names, static values) pickled.
FORMAT = 4
# How deeply values may nest, at both ends: deeper data is refused before Python's recursion
# limit is near, and a value that contains itself is refused at export.
MAX_DEPTH = 100


class Tag(NamedTuple):
    """What one tag holds (as errors name it), how many parts follow it (``None``: any number),
    and whether it is plain data: what may stand in a ``functools.partial``'s arguments and in a
    registered codec's data, where no reference may."""

    holds: str
    parts: int | None
    plain: bool


TAGS: dict[str, Tag] = {
    "t": Tag("a tuple", None, True),  # ["t", *items]
    "l": Tag("a list", None, True),  # ["l", *items]
    "d": Tag("a dict with a key that is not a string", None, True),  # ["d", k, v, ...], in order
    "s": Tag("a frozenset", None, True),  # ["s", *items], sorted by their text
    "b": Tag("bytes", 1, True),  # ["b", base64]
    "f": Tag("a float that is not finite", 1, True),  # ["f", "nan" | "inf" | "-inf"]
    "c": Tag("a complex number", 2, True),  # ["c", real, imag]
    "i": Tag("an int of more digits than str() converts", 1, True),  # ["i", hexadecimal]
    "u": Tag("a string holding a surrogate", 1, True),  # ["u", [code points]]
    "dt": Tag("a NumPy dtype", 1, True),  # ["dt", dtype.str or an ml_dtypes name]
    "td": Tag("a torch dtype", 1, True),  # ["td", "float32"]
    "dv": Tag("a torch device", 1, True),  # ["dv", "cuda:0"]
    "r": Tag("a function", 1, False),  # ["r", "module:qualname"]
    "k": Tag("a class", 1, False),  # ["k", "module:qualname"]
    "e": Tag("an enum member", 2, False),  # ["e", class, member name]
    "n": Tag("a NamedTuple", None, False),  # ["n", class, *items]
    "dc": Tag("a frozen dataclass", 2, False),  # ["dc", class, {fields}]
    "p": Tag("a pytree class instance", 2, False),  # ["p", class, {what __getstate__ gives}]
    "fp": Tag("a functools.partial", 3, False),  # ["fp", function, ["t", *args], {keywords}]
    "x": Tag("a value of a registered codec", 2, False),  # ["x", "module:qualname", data]
}
