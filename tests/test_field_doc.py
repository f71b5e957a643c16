"""field(doc=...): Python 3.14's field docstring, accepted and kept on every supported Python.

On 3.14 it is dataclasses' own (``Field.doc``, shown in the field's repr); before, pytreekit keeps
it in the field's metadata under ``"doc"``, where ``Field.doc`` reads it.
"""

import copy
import dataclasses

import jax
import jax.numpy as jnp
import pytest
from _versions import DATACLASSES_FIELD_DOC, needs_dataclasses_field_doc

from pytreekit import Field, field, fields, pytree_class


@pytree_class
class Documented:
    w: jax.Array = field(doc="the weights")
    n: int = field(static=True, default=2, doc="the size")
    bias: float = 0.0


@pytree_class
class DocumentedSub(Documented):
    extra: float = field(default=1.0, doc="one more")


def test_doc_is_kept_through_decoration_and_inheritance():
    expected = ["the weights", "the size", None]
    assert [f.doc for f in fields(Documented)] == expected
    assert [f.doc for f in fields(DocumentedSub)] == [*expected, "one more"]
    assert [f.doc for f in dataclasses.fields(DocumentedSub)] == [*expected, "one more"]
    # Nothing else changes: the static field is static, the leaves are the arrays.
    assert [f.static for f in fields(Documented)] == [False, True, False]
    model = Documented(jnp.ones(2))
    assert jax.tree_util.tree_leaves(model)[0].tolist() == [1.0, 1.0] and model.n == 2


def test_doc_round_trips_through_copy_and_repr():
    declared = field(static=True, default=3, doc="kept")
    copied = copy.copy(declared)
    assert isinstance(copied, Field) and copied.doc == "kept" and copied.static
    assert "doc='kept'" in repr(declared)
    assert Field(doc="direct").doc == "direct" and field().doc is None


def test_a_doc_that_is_not_a_string_is_refused():
    with pytest.raises(TypeError, match=r"field\(doc=\.\.\.\).*got 3"):
        field(doc=3)  # type: ignore[call-overload]


@needs_dataclasses_field_doc
def test_doc_is_dataclasses_own_on_python_3_14():
    @dataclasses.dataclass
    class Reference:
        w: int = dataclasses.field(default=1, doc="w documented")
        v: int = dataclasses.field(default=2, doc="v documented")
        plain: int = 3

    @pytree_class
    class Ours:
        w: int = field(default=1, doc="w documented")
        v: int = dataclasses.field(default=2, doc="v documented")  # type: ignore[call-arg]
        plain: int = 3

    reference, ours = dataclasses.fields(Reference), dataclasses.fields(Ours)
    assert [f.doc for f in ours] == [f.doc for f in reference]
    assert [dict(f.metadata) for f in ours] == [dict(f.metadata) for f in reference] == [{}] * 3
    # The field's repr shows it where dataclasses' does.
    shown = repr(reference[0]).split("doc=")[1].split(",")[0]
    assert repr(ours[0]).split("doc=")[1].split(",")[0] == shown == "'w documented'"


@pytest.mark.skipif(DATACLASSES_FIELD_DOC, reason="Python 3.14 keeps doc on the field itself")
def test_before_python_3_14_doc_is_kept_in_the_metadata():
    assert dict(field(doc="d").metadata) == {"doc": "d"}
    merged = field(doc="d", static=True, metadata={"unit": "m"})
    assert dict(merged.metadata) == {"unit": "m", "static": True, "doc": "d"}

    # The idiom for documenting a field before 3.14 reads the same.
    @pytree_class
    class Idiom:
        x: int = dataclasses.field(metadata={"doc": "by metadata"})

    assert fields(Idiom)[0].doc == "by metadata"
