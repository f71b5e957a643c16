"""Annotations read as dataclasses reads them, on each Python.

Python 3.14 defers annotations (PEP 649/749): a class may name one defined below it, or itself,
and dataclasses reads such annotations in annotationlib's FORWARDREF format without failing. Each
case here is a module, loaded twice from the same source: once decorated with
``dataclasses.dataclass``, once with ``pytree_class``. Both must decorate or fail alike, and agree
on what dataclasses defines (fields, their types, the docstring, the signature, the generated
``__init__``'s annotations in every format). Before 3.14 the same sources fail alike (a name not
defined yet is a ``NameError`` where the class is defined) or are strings.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import pytest
from _versions import (
    ANNOTATION_FORMATS,
    needs_deferred_annotations,
    needs_make_dataclass_decorator,
)
from conftest import require

import pytreekit

DECORATORS = {"dataclass": "dataclasses.dataclass", "pytree": "pytreekit.pytree_class"}

PRELUDE = """
import dataclasses
import typing
from typing import ClassVar

import pytreekit
"""

# Each case: a module defining C (decorated with DECORATE), and what it needs.
CASES = {
    "annotated fields": """
@DECORATE
class C:
    x: int
    items: list[int] = dataclasses.field(default_factory=list)
    label: "str" = "c"
    seed: dataclasses.InitVar[int] = 0
    count: ClassVar[int] = 0

    def __post_init__(self, seed):
        self.seeded = seed
""",
    "field annotated with a class defined below": """
@DECORATE
class C:
    x: Later
    n: int = 0


class Later:
    pass
""",
    "class referring to itself": """
@DECORATE
class C:
    value: int
    next: C | None = None
""",
    "string annotation of a class defined below": """
@DECORATE
class C:
    x: "Later"
    items: list[Later] = dataclasses.field(default_factory=list)


class Later:
    pass
""",
    "ClassVar and InitVar of a class defined below": """
@DECORATE
class C:
    x: int
    registry: ClassVar[Later] = None
    seed: dataclasses.InitVar[Later] = None

    def __post_init__(self, seed):
        self.seeded = seed is not None


class Later:
    pass
""",
    "a name never defined": """
@DECORATE
class C:
    x: Undefined
""",
    "inherits a field annotated with a class defined below": """
@DECORATE
class Base:
    x: Later


@DECORATE
class C(Base):
    y: Later2 = None


class Later:
    pass


class Later2:
    pass
""",
}


def load(name: str, source: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module ``name`` made of ``source`` (imported as Python imports a file), or the
    exception its import raised."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # what the reference raises too, compared below
        return error
    return module


def text(value: Any, module: ModuleType) -> str:
    """``value``'s repr with its module's name taken out (the two modules differ by name)."""
    return repr(value).replace(module.__name__, "M")


def described(module: ModuleType) -> dict[str, Any]:
    """What dataclasses defines about ``module.C``, as text."""
    cls = module.C
    description: dict[str, Any] = {
        "fields": [(f.name, text(f.type, module)) for f in dataclasses.fields(cls)],
        "doc": text(cls.__doc__, module),
        "signature": text(inspect.signature(cls), module),
        "__init__ type hints": text(typing.get_type_hints(cls.__init__), module),
    }
    for name, format in ANNOTATION_FORMATS.items():
        annotations = inspect.get_annotations(cls.__init__, **format)
        description[f"__init__ annotations ({name})"] = text(annotations, module)
    return description


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("future", [False, True], ids=["deferred", "postponed"])
def test_decorates_exactly_when_dataclasses_does_and_agrees_with_it(
    case: str, future: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    header = "from __future__ import annotations\n" if future else ""
    outcomes = {}
    for kind, decorator in DECORATORS.items():
        source = header + PRELUDE + CASES[case].replace("DECORATE", decorator)
        name = f"annotations_{kind}_{abs(hash((case, future)))}"
        outcomes[kind] = load(name, source, tmp_path, monkeypatch)
    reference, ours = outcomes["dataclass"], outcomes["pytree"]
    if isinstance(reference, Exception):
        assert type(ours) is type(reference) and str(ours) == str(reference)
        return
    assert not isinstance(ours, Exception), f"dataclasses decorates it; pytree_class: {ours!r}"
    if case == "a name never defined":  # decorated; its annotation fails when evaluated
        assert [f.name for f in pytreekit.fields(ours.C)] == ["x"]
        with pytest.raises(NameError, match="Undefined"):
            typing.get_type_hints(ours.C.__init__)
        with pytest.raises(NameError, match="Undefined"):
            typing.get_type_hints(reference.C.__init__)
        return
    assert described(ours) == described(reference)
    assert pytreekit.is_pytree_class(ours.C)


def _to_float(value: int) -> float:
    return float(value)


def test_a_converter_fields_parameter_is_what_the_converter_takes_in_every_format():
    @pytreekit.pytree_class
    class Converted:
        n: float = pytreekit.field(converter=_to_float, default=1)
        plain: float = 0.5

    for name, format in ANNOTATION_FORMATS.items():
        annotations = inspect.get_annotations(Converted.__init__, **format)
        # This module's own annotations are strings (postponed); the converter's is evaluated.
        expected = {"n": int, "plain": "float", "return": None}
        if name == "STRING":
            expected = {"n": "int", "plain": "float", "return": "None"}
        assert annotations == expected, name


@needs_deferred_annotations
def test_a_field_of_a_class_defined_below_works_as_a_pytree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        PRELUDE
        + """
import jax
import jax.numpy as jnp


@pytreekit.pytree_class
class Model:
    layer: Layer
    scale: float = pytreekit.field(static=True, default=2.0)

    def __call__(self, x):
        return self.scale * self.layer(x)


@pytreekit.pytree_class
class Layer:
    w: jax.Array

    def __call__(self, x):
        return self.w * x


model = Model(Layer(jnp.ones(2)))
"""
    )
    module = load("annotations_pytree_model", source, tmp_path, monkeypatch)
    assert not isinstance(module, Exception), module
    model = module.Model(module.Layer(jax.numpy.ones(2)))
    grads = jax.grad(lambda m: m(3.0).sum())(model)
    assert type(grads.layer) is module.Layer and grads.layer.w.tolist() == [6.0, 6.0]
    assert typing.get_type_hints(module.Model)["layer"] is module.Layer


_CHECKED = """
import jax
from beartype import beartype
from jaxtyping import Array, Float, jaxtyped


@DECORATE
class C:
    head: Head
    weight: Float[Array, "n n"]
    steps: int = 1


class Head:
    pass


# Checked once every name is defined, as a deferred annotation allows.
C.__init__ = jaxtyped(typechecker=beartype)(C.__init__)
"""


@needs_deferred_annotations
def test_beartype_and_jaxtyping_check_a_generated_init_naming_a_class_defined_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("beartype")
    require("jaxtyping")
    for kind, decorator in DECORATORS.items():
        source = PRELUDE + _CHECKED.replace("DECORATE", decorator)
        module = load(f"annotations_checked_{kind}", source, tmp_path, monkeypatch)
        assert not isinstance(module, Exception), (kind, module)
        made = module.C(module.Head(), jax.numpy.eye(2), 3)
        assert made.steps == 3, kind
        with pytest.raises(Exception, match=r"C\.__init__(.|\n)*parameter 'head'") as info:
            module.C(object(), jax.numpy.eye(2))
        assert type(info.value).__name__ == "TypeCheckError", kind
        with pytest.raises(Exception, match=r"C\.__init__"):
            module.C(module.Head(), jax.numpy.eye(2, dtype=jax.numpy.int32))  # not floating


_OWN_INIT = """
import jax.numpy as jnp


class Plain:
    def __init__(self, config: Config, scale: float = 1.0) -> None:
        self.config = config
        self.w = jnp.ones(config.size) * scale


@pytreekit.pytree_class(static=("config",))
class Model:
    def __init__(self, config: Config, scale: float = 1.0) -> None:
        self.config = config
        self.w = jnp.ones(config.size) * scale


@pytreekit.pytree_class
class Annotated:
    w: jax.Array
    config: Config = pytreekit.field(static=True)

    def __init__(self, config: Config) -> None:
        self.config = config
        self.w = jnp.zeros(config.size)


@dataclasses.dataclass(frozen=True)
class Config:
    size: int
"""


@needs_deferred_annotations
def test_a_users_own_init_annotated_with_a_class_defined_below_decorates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load(
        "annotations_own_init", PRELUDE + "import jax\n" + _OWN_INIT, tmp_path, monkeypatch
    )
    assert not isinstance(module, Exception), module
    config = module.Config(2)
    model, annotated = module.Model(config, 3.0), module.Annotated(config)
    assert jax.tree_util.tree_leaves(model)[0].tolist() == [3.0, 3.0]
    assert jax.tree_util.tree_leaves(annotated)[0].tolist() == [0.0, 0.0]
    assert jax.tree_util.tree_structure(model) == jax.tree_util.tree_structure(
        module.Model(module.Config(2))
    )
    # The wrapped __init__ shows the user's own signature and annotations, in every format, as
    # the same __init__ of an undecorated class does.
    for cls in (module.Model, module.Annotated):
        assert str(inspect.signature(cls)) == str(inspect.signature(module.Plain)).replace(
            ", scale: float = 1.0", "" if cls is module.Annotated else ", scale: float = 1.0"
        )
    for format in ANNOTATION_FORMATS.values():
        expected = inspect.get_annotations(module.Plain.__init__, **format)
        assert inspect.get_annotations(module.Model.__init__, **format) == expected
    assert typing.get_type_hints(module.Annotated.__init__)["config"] is module.Config


_CUSTOM = """
import jax
import jax.numpy as jnp


@jax.custom_jvp
def reference(x: Later) -> Later:
    return 2.0 * x


@reference.defjvp
def reference_jvp(primals, tangents):
    return 2.0 * primals[0], 3.0 * tangents[0]


@pytreekit.pytree_class
class Model:
    w: jax.Array

    @pytreekit.custom_jvp_method
    def jvp(self, x: Later) -> Later:
        return self.w * x

    @jvp.defjvp
    def _jvp(primals, tangents):
        (self, x), (_, dx) = primals, tangents
        return self.w * x, 3.0 * dx

    @pytreekit.custom_vjp_method
    def vjp(self, x: Later) -> Later:
        return self.w * x

    @pytreekit.custom_gradient_method
    def gradient(self, x: Later) -> Later:
        return self.w * x, lambda g: (None, 3.0 * g)


def forward(self, x):
    return self.w * x, None


def backward(_, g):
    return None, 3.0 * g


Model.vjp.defvjp(forward, backward)


class Later:
    pass
"""


@needs_deferred_annotations
def test_custom_derivative_methods_annotated_with_a_class_defined_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # jax.custom_jvp takes such a function; its methods' counterparts take them too.
    module = load("annotations_custom", PRELUDE + _CUSTOM, tmp_path, monkeypatch)
    assert not isinstance(module, Exception), module
    model = module.Model(jax.numpy.asarray(2.0))
    expected = jax.grad(module.reference)(1.5)
    for name in ("jvp", "vjp", "gradient"):
        method = getattr(model, name)
        assert float(method(1.5)) == float(module.reference(1.5)), name
        assert float(jax.grad(method)(1.5)) == float(expected) == 3.0, name


# -- dataclasses.make_dataclass(..., decorator=pytree_class) ------------------------------------


def test_dataclasses_arguments_are_accepted_at_their_defaults_and_refused_otherwise():
    @pytreekit.pytree_class(init=True, order=False, unsafe_hash=False, match_args=True)
    class Point:
        x: float
        y: float = 0.0

    assert Point(1.0).y == 0.0 and Point.__match_args__ == ("x", "y")
    for name, value in [("order", True), ("slots", True), ("init", False), ("unsafe_hash", True)]:

        class Refused:
            x: float

        with pytest.raises(TypeError, match=rf"pytree_class\({name}={value}\)"):
            pytreekit.pytree_class(Refused, **{name: value})
        assert not pytreekit.is_pytree_class(Refused) and "__init__" not in vars(Refused)


@pytreekit.pytree_class
class _PytreeBase:
    base: float


@dataclasses.dataclass
class _DataclassBase:
    base: float


@needs_make_dataclass_decorator
@pytest.mark.parametrize("with_base", [False, True], ids=["no-base", "base"])
def test_make_dataclass_with_pytree_class_as_its_decorator_agrees_with_dataclasses(
    with_base: bool,
) -> None:
    specs = [("x", int), "untyped", ("items", list, dataclasses.field(default_factory=list))]
    made = {}
    for kind, decorator, base in [
        ("dataclass", dataclasses.dataclass, _DataclassBase),
        ("pytree", pytreekit.pytree_class, _PytreeBase),
    ]:
        bases = (base,) if with_base else ()
        made[kind] = dataclasses.make_dataclass("Made", specs, bases=bases, decorator=decorator)
    reference, ours = made["dataclass"], made["pytree"]
    assert [(f.name, f.type) for f in dataclasses.fields(ours)] == [
        (f.name, f.type) for f in dataclasses.fields(reference)
    ]
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    for format in ANNOTATION_FORMATS.values():
        expected = inspect.get_annotations(reference.__init__, **format)
        assert inspect.get_annotations(ours.__init__, **format) == expected
    arguments = (1.0, 2, "u") if with_base else (2, "u")
    made_one = ours(*arguments)
    assert made_one.x == 2 and made_one.items == [] and pytreekit.is_pytree_class(made_one)
    assert len(jax.tree_util.tree_leaves(made_one)) == len(arguments)
    # The fields are required, as dataclasses makes them (the automatic set-up of a subclass of
    # a pytree class ran before make_dataclass gave the class its annotations).
    for cls in (reference, ours):
        with pytest.raises(TypeError, match="untyped"):
            cls(*arguments[:-1])


@needs_make_dataclass_decorator
def test_make_dataclass_refuses_what_pytree_class_does_not_support():
    with pytest.raises(TypeError, match=r"pytree_class\(order=True\)"):
        dataclasses.make_dataclass(
            "Ordered", [("x", int)], order=True, decorator=pytreekit.pytree_class
        )


def test_annotations_given_to_a_subclass_after_its_automatic_set_up_are_its_fields():
    made = {}
    for kind, decorator, base in [
        ("dataclass", dataclasses.dataclass, _DataclassBase),
        ("pytree", pytreekit.pytree_class, _PytreeBase),
    ]:
        cls = type("Given", (base,), {"__module__": __name__})  # set up with the base's field
        cls.__annotations__ = {"extra": int}
        made[kind] = decorator(cls)
    reference, ours = made["dataclass"], made["pytree"]
    assert [f.name for f in pytreekit.fields(ours)] == ["base", "extra"]
    assert str(inspect.signature(ours)) == str(inspect.signature(reference))
    assert jax.tree_util.tree_leaves(ours(1.0, 2)) == [1.0, 2]
    for cls in (reference, ours):
        with pytest.raises(TypeError, match="extra"):
            cls(1.0)


# -- classes pickled by value --------------------------------------------------------------------

_SENDER = """
import sys

import cloudpickle
import jax
import jax.numpy as jnp

import pytreekit


class Head:
    def __eq__(self, other):
        return type(other).__name__ == "Head"

    def __hash__(self):
        return 0


@pytreekit.pytree_class(frozen=True)
class Sent:
    w: jax.Array
    head: Head = pytreekit.field(static=True, doc="the head")


@pytreekit.pytree_class(static=("tail",))
class SentOwnInit:
    def __init__(self, tail: Tail, w: jax.Array) -> None:
        self.tail = tail
        self.w = w


class Tail(Head):
    pass


sent = (Sent(jnp.ones(2), Head()), SentOwnInit(Tail(), jnp.ones(3)))
sys.stdout.buffer.write(cloudpickle.dumps(sent))
"""


@needs_deferred_annotations
def test_classes_pickled_by_value_arrive_registered_once_with_their_annotations(
    tmp_path: Path,
) -> None:
    require("cloudpickle")
    import pickle
    import subprocess

    script = tmp_path / "sender.py"
    script.write_text(_SENDER)
    root = Path(__file__).resolve().parent.parent
    sent = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        env={"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(root)},
        timeout=120,
        check=False,
    )
    assert sent.returncode == 0, sent.stderr.decode()
    annotated, own_init = pickle.loads(sent.stdout)
    again = pickle.loads(sent.stdout)  # the same classes again: registered once
    assert type(again[0]) is type(annotated) and type(again[1]) is type(own_init)
    for arrived in (annotated, own_init):
        leaves, treedef = jax.tree_util.tree_flatten(arrived)
        assert type(jax.tree_util.tree_unflatten(treedef, leaves)) is type(arrived)
    fields = pytreekit.fields(type(annotated))
    assert [(f.name, f.static, f.doc) for f in fields] == [
        ("w", False, None),
        ("head", True, "the head"),
    ]
    head, tail = type(annotated.head), type(own_init.tail)
    assert typing.get_type_hints(type(annotated))["head"] is head
    assert typing.get_type_hints(type(annotated).__init__)["head"] is head
    # A user's own __init__ annotated with a class defined below it (deferred on 3.14).
    assert typing.get_type_hints(type(own_init).__init__)["tail"] is tail
