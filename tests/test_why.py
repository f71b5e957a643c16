"""What the "Why pytreekit" page (docs/why.md) says of pytreekit and of the libraries it compares
itself with, checked: each test here is linked from the table cell it backs.

Each comparison builds the same small class in every style (pytreekit, Equinox, flax.struct,
``jax.tree_util.register_dataclass``, chex) and asserts what each does. tjax is not run: its
releases for this JAX need Python 3.12, and this suite runs on 3.11 too; the page says so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, require
from jax import export

from pytreekit import field, pytree_class, replace

eqx = pytest.importorskip("equinox")
struct = pytest.importorskip("flax.struct")
chex = pytest.importorskip("chex")

INIT_CALLS: list[str] = []


@pytree_class
class KitLinear:
    weight: jax.Array
    name: str = field(static=True, default="linear")

    def __post_init__(self) -> None:
        INIT_CALLS.append("pytreekit")


class EqxLinear(eqx.Module):
    weight: jax.Array
    name: str = eqx.field(static=True, default="linear")

    def __post_init__(self) -> None:
        INIT_CALLS.append("equinox")


@struct.dataclass
class FlaxLinear:
    weight: jax.Array
    name: str = struct.field(pytree_node=False, default="linear")

    def __post_init__(self) -> None:
        INIT_CALLS.append("flax.struct")


@dataclasses.dataclass
class JaxLinear:
    weight: jax.Array
    name: str = dataclasses.field(default="linear", metadata=dict(static=True))

    def __post_init__(self) -> None:
        INIT_CALLS.append("register_dataclass")


# Field lists given: JAX before 0.4.36 has no register_dataclass(cls) that reads the metadata.
jax.tree_util.register_dataclass(JaxLinear, data_fields=["weight"], meta_fields=["name"])


@chex.dataclass
class ChexLinear:
    weight: jax.Array
    name: str = "linear"

    def __post_init__(self) -> None:
        INIT_CALLS.append("chex")


@chex.dataclass
class ChexWeight:  # chex without the name, which would be a leaf jit refuses
    weight: jax.Array


STYLES: dict[str, Callable[..., Any]] = {
    "pytreekit": KitLinear,
    "equinox": EqxLinear,
    "flax.struct": FlaxLinear,
    "register_dataclass": JaxLinear,
    "chex": ChexLinear,
}


def build(style: str) -> Any:
    return STYLES[style](weight=jnp.ones(2))


@pytest.mark.parametrize(
    ("style", "calls_init"),
    [
        ("pytreekit", False),
        ("equinox", False),
        ("flax.struct", True),
        ("register_dataclass", True),
        ("chex", True),
    ],
)
def test_rebuilding_calls_init(style: str, calls_init: bool) -> None:
    """Unflatten (what jit, grad and tree_map do to every model) runs ``__init__`` and
    ``__post_init__`` again, with whatever JAX passes (tracers, ``object()``), or does not."""
    model = build(style)
    INIT_CALLS.clear()
    jax.tree_util.tree_map(lambda x: x + 1 if isinstance(x, jax.Array) else x, model)
    assert (style in INIT_CALLS) is calls_init


def _own_init_class(style: str) -> Any:
    """A class with its own ``__init__`` and no annotations, made a pytree in each style."""

    class Linear:
        def __init__(self, size: int) -> None:
            self.size = size
            self.weight = jnp.ones(size)

    if style == "pytreekit":
        return pytree_class(static=("size",))(Linear)
    if style == "equinox":
        return type("Linear", (eqx.Module,), dict(Linear.__dict__))
    if style == "flax.struct":
        return struct.dataclass(Linear)
    if style == "register_dataclass":
        return jax.tree_util.register_dataclass(
            dataclasses.dataclass(Linear), data_fields=[], meta_fields=[]
        )
    return chex.dataclass(Linear)


@pytest.mark.parametrize(
    ("style", "outcome"),
    [
        ("pytreekit", "one leaf"),
        ("equinox", "error"),
        ("flax.struct", "error"),
        ("register_dataclass", "no leaf"),
        ("chex", "error"),
    ],
)
def test_existing_class_without_annotations(style: str, outcome: str) -> None:
    """An existing class (its own ``__init__``, no annotations): are its arrays leaves? Where
    they are not, ``jax.grad`` and ``jit`` silently treat them as constants or drop them."""
    try:
        model = _own_init_class(style)(3)
        leaves = jax.tree_util.tree_leaves(model)
    except (AttributeError, TypeError, dataclasses.FrozenInstanceError):
        assert outcome == "error"
        return
    assert outcome == ("one leaf" if len(leaves) == 1 else "no leaf")


@pytest.mark.parametrize("style", list(STYLES))
def test_key_paths_name_the_attributes(style: str) -> None:
    """Every style's key paths name the field: ``.weight``."""
    leaves = jax.tree_util.tree_leaves_with_path(build(style))
    paths = [jax.tree_util.keystr(path) for path, leaf in leaves if isinstance(leaf, jax.Array)]
    assert paths == [".weight"]


@pytest.mark.parametrize(
    ("style", "static"),
    [
        ("pytreekit", True),
        ("equinox", True),
        ("flax.struct", True),
        ("register_dataclass", True),
        ("chex", False),
    ],
)
def test_static_fields(style: str, static: bool) -> None:
    """A field can hold a string (a size, a function) in the treedef, so ``jit`` takes the model
    as an argument; chex has no static fields: every field is a leaf, which ``jit`` refuses."""
    model = build(style)
    if static:
        assert jax.jit(lambda m: m.weight * 2)(model).tolist() == [2.0, 2.0]
    else:
        with pytest.raises(TypeError, match=r"abstract array|is not a valid JAX type"):
            jax.jit(lambda m: m.weight * 2)(model)


@pytest.mark.parametrize("style", list(STYLES))
def test_is_a_standard_library_dataclass(style: str) -> None:
    """``dataclasses.fields``, ``asdict`` and every tool that recognises dataclasses work."""
    model = build(style)
    assert dataclasses.is_dataclass(model)
    assert [f.name for f in dataclasses.fields(model)] == ["weight", "name"]


@pytest.mark.parametrize(
    ("style", "serializes"),
    [
        ("pytreekit", True),
        ("equinox", False),
        ("flax.struct", False),
        ("register_dataclass", False),
        ("chex", False),
    ],
)
def test_jax_export_serializes_without_a_registration(style: str, serializes: bool) -> None:
    """``jax.export``: a function taking the model serializes without a
    ``register_pytree_node_serialization`` call for the class."""
    model = ChexWeight(weight=jnp.ones(2)) if style == "chex" else build(style)
    exported = export.export(jax.jit(lambda m: m.weight * 2))(model)
    if serializes:
        assert export.deserialize(exported.serialize()).call(model).tolist() == [2.0, 2.0]
    else:
        with pytest.raises(
            ValueError, match=r"unregistered type .*register_pytree_node_serialization"
        ):
            exported.serialize()


@pytest.mark.parametrize(
    ("style", "update"),
    [
        ("pytreekit", lambda m: replace(m, weight=jnp.zeros(2))),
        ("equinox", lambda m: eqx.tree_at(lambda t: t.weight, m, jnp.zeros(2))),
        ("flax.struct", lambda m: m.replace(weight=jnp.zeros(2))),
        ("register_dataclass", lambda m: dataclasses.replace(m, weight=jnp.zeros(2))),
        ("chex", lambda m: m.replace(weight=jnp.zeros(2))),
    ],
)
def test_updated_copy(style: str, update: Callable[[Any], Any]) -> None:
    """Each style has a way to an updated copy; pytreekit's ``replace`` works on frozen and
    mutable classes alike and calls no ``__init__`` (tests/test_replace.py)."""
    model = build(style)
    updated = update(model)
    assert (updated.weight.tolist(), model.weight.tolist()) == ([0.0, 0.0], [1.0, 1.0])


@pytest.mark.parametrize(
    ("style", "registers"),
    [
        ("pytreekit", True),
        ("equinox", False),
        ("flax.struct", False),
        ("register_dataclass", False),
        ("chex", False),
    ],
)
def test_one_declaration_registers_with_optree_and_torch(style: str, registers: bool) -> None:
    """optree and ``torch.utils._pytree`` see the model's arrays, from the class's one
    declaration, or see the whole model as a single leaf (registered with JAX only)."""
    optree = require("optree")
    torch_pytree = require("torch.utils._pytree")
    if style == "pytreekit":

        @pytree_class(backends=("jax", "optree", "torch"))
        class Everywhere:
            weight: jax.Array
            name: str = field(static=True, default="linear")

        model = Everywhere(weight=jnp.ones(2))
    else:
        model = build(style)
    seen_by = {
        "optree": optree.tree_leaves(model, namespace="pytreekit"),
        "torch": torch_pytree.tree_leaves(model),
    }
    for library, leaves in seen_by.items():
        assert len(leaves) == 1, library
        assert leaves[0] is model.weight if registers else leaves[0] is model, library


def test_every_row_of_the_page_is_backed_for_every_library() -> None:
    """docs/why.md's table: each row links the test or benchmark behind it, and no cell is left
    uncompared (what is not compared is listed below the table, about pytreekit only)."""
    text = (ROOT / "docs" / "why.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "](" in line]
    assert len(rows) >= 9
    for row in rows:
        assert re.search(r"\]\((tests|benchmarks)/\w+\.py#\w+\)", row), row
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 6, row
        assert "not compared" not in row, row
