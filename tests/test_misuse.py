"""Misuse of the public API, table-driven: every wrong argument gets an error of the reference's
type whose message names the function, the culprit argument (and class and field where there is
one) and what was given; the failed call changes nothing.

One ``Misuse`` row per wrong use, grouped by function below. ``test_every_parameter_has_a_row``
checks that each parameter of each function in the table has at least one row, so a new
parameter cannot go unchecked. Functions whose rows are still to come are listed in
``ROWS_TO_COME``; append their rows in a section of their own and take them off that list.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pytreekit
from pytreekit import (
    combine,
    custom_gradient_method,
    custom_jvp_method,
    custom_vjp_method,
    field,
    fields,
    is_array,
    is_inexact_array,
    is_pytree_class,
    linearize,
    partition,
    pickle_static_fields,
    pytree_class,
    register_backend,
    register_static_codec,
    replace,
)


class Misuse(NamedTuple):
    id: str
    function: Callable[..., Any]
    param: str  # the parameter the row gets wrong, as inspect.signature names it
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    error: type[BaseException]
    match: str  # must appear in the message (re.search): it names the culprit
    xfail: str | None = None  # why the row fails today (strict: it must fail until fixed)


class OddInput(NamedTuple):
    """A predicate given something unusual: it answers, it does not raise (as
    ``dataclasses.is_dataclass`` does)."""

    id: str
    function: Callable[..., Any]
    param: str
    arg: Any
    expected: bool


# -- the classes and values the rows use ----------------------------------------------------------


@pytree_class
class Annotated:
    weights: Any
    name: str = field(static=True, default="a")


@pytree_class(static=("size",))
class Unannotated:
    def __init__(self, weights, size=2):
        self.weights = weights
        self.size = size


class Plain:
    def __init__(self):
        self.weights = 1.0


class HasDtype:
    """Looks like an array to duck typing; is not one."""

    dtype = np.float32
    shape = (2,)


TREE = {"w": jnp.ones(2), "b": (jnp.zeros(1), 3)}
_, JVP_FN = linearize(lambda p, x: p["w"] * x, {"w": jnp.ones(2), "tag": "t"}, jnp.ones(2))


def _jvp_fn(*tangents):
    return JVP_FN(*tangents)


_jvp_fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("tangents", inspect.Parameter.VAR_POSITIONAL)]
)

# -- partition, combine ---------------------------------------------------------------------------

ROWS_FILTERS = [
    Misuse(
        "partition-spec-leaf-not-bool-or-callable",
        partition,
        "filter_spec",
        (TREE, {"w": True, "b": 1}),
        {},
        TypeError,
        r"partition\(\): filter_spec\['b'\] is 1 \(int\), but the leaves of filter_spec must be "
        r"Python bools or predicates .* Use True or False for a whole subtree, or a predicate\.",
    ),
    Misuse(
        "partition-spec-none",
        partition,
        "filter_spec",
        (TREE, None),
        {},
        TypeError,
        r"partition\(\): filter_spec is None \(NoneType\)",
    ),
    Misuse(
        "partition-spec-numpy-bool",
        partition,
        "filter_spec",
        (TREE, np.True_),
        {},
        TypeError,
        rf"partition\(\): filter_spec is {re.escape(repr(np.True_))} \(numpy\.bool_?\), but .* "
        r"Convert it with "
        r"bool\(\.\.\.\)\.",
    ),
    Misuse(
        "partition-spec-missing-key",
        partition,
        "filter_spec",
        (TREE, {"w": True}),
        {},
        ValueError,
        r"partition\(\): filter_spec must be a bool, a predicate, or a tree prefix of tree .*; "
        r"at tree, filter_spec has a dict node PyTreeDef\(\{'w': \*\}\) where tree has a dict "
        r"node PyTreeDef\(\{'b': \*, 'w': \*\}\)",
    ),
    Misuse(
        "partition-spec-wrong-type-deeper",
        partition,
        "filter_spec",
        (TREE, {"w": True, "b": [True, True]}),
        {},
        ValueError,
        r"partition\(\): .* at tree\['b'\], filter_spec has a list node PyTreeDef\(\[\*, \*\]\) "
        r"where tree has a tuple node PyTreeDef\(\(\*, \*\)\)",
    ),
    Misuse(
        "partition-spec-deeper-than-tree",
        partition,
        "filter_spec",
        ({"w": 1.0}, {"w": {"x": True}}),
        {},
        ValueError,
        r"partition\(\): .* at tree\['w'\], filter_spec has a dict node .* where tree has a leaf "
        r"\(float\)",
    ),
    Misuse(
        "partition-tree-shorter-than-spec",
        partition,
        "tree",
        ([1.0, 2.0, 3.0], [True, False]),
        {},
        ValueError,
        r"partition\(\): .* at tree, filter_spec has a list node PyTreeDef\(\[\*, \*\]\) where "
        r"tree has a list node PyTreeDef\(\[\*, \*, \*\]\)",
    ),
    Misuse(
        "partition-tree-other-pytree-class",
        partition,
        "tree",
        (Unannotated(jnp.ones(2)), Annotated(True)),
        {},
        ValueError,
        r"partition\(\): .* at tree, filter_spec has a Annotated node .* where tree has a "
        r"Unannotated node",
    ),
    Misuse(
        "partition-is-leaf-not-callable",
        partition,
        "is_leaf",
        (TREE, True),
        {"is_leaf": 3},
        TypeError,
        r"partition\(\): is_leaf must be None or a function of a subtree returning a bool, got "
        r"3 \(int\)",
    ),
    Misuse(
        "combine-no-trees",
        combine,
        "trees",
        (),
        {},
        TypeError,
        r"combine\(\) needs at least one tree, got none",
    ),
    Misuse(
        "combine-other-keys",
        combine,
        "trees",
        ({"a": 1}, {"b": 2}),
        {},
        ValueError,
        r"combine\(\): every tree must have the structure of the first .*; at trees\[1\], "
        r"trees\[0\] has a dict node PyTreeDef\(\{'a': \*\}\) where trees\[1\] has a dict node "
        r"PyTreeDef\(\{'b': \*\}\)",
    ),
    Misuse(
        "combine-third-tree-differs-deep",
        combine,
        "trees",
        ({"a": (1, None)}, {"a": (None, 2)}, {"a": [None, None]}),
        {},
        ValueError,
        r"combine\(\): .* at trees\[2\]\['a'\], trees\[0\] has a tuple node .* where "
        r"trees\[2\] has a list node",
    ),
    Misuse(
        "combine-none-in-a-later-tree-for-a-subtree",
        combine,
        "trees",
        ({"a": (1, 2)}, {"a": None}),
        {},
        ValueError,
        r"combine\(\): .* at trees\[1\]\['a'\], trees\[0\] has a tuple node .* where "
        r"trees\[1\] has None",
    ),
    Misuse(
        "combine-leaf-for-a-subtree",
        combine,
        "trees",
        ({"a": (1, 2)}, {"a": 3}),
        {},
        ValueError,
        r"combine\(\): .* at trees\[1\]\['a'\], trees\[0\] has a tuple node .* where "
        r"trees\[1\] has a leaf \(int\)",
    ),
    Misuse(
        "combine-is-leaf-not-callable",
        combine,
        "is_leaf",
        ({"a": 1},),
        {"is_leaf": "yes"},
        TypeError,
        r"combine\(\): is_leaf must be None or a function .*, got 'yes' \(str\)",
    ),
]

# -- linearize and the jvp_fn it returns ----------------------------------------------------------

ROWS_LINEARIZE = [
    Misuse(
        "linearize-fn-not-callable",
        linearize,
        "fn",
        (3, jnp.ones(2)),
        {},
        TypeError,
        r"linearize\(\): fn must be callable .*, got 3 \(int\)",
    ),
    Misuse(
        "linearize-fn-a-string",
        linearize,
        "fn",
        ("sin", jnp.ones(2)),
        {},
        TypeError,
        r"linearize\(\): fn must be callable .*, got 'sin' \(str\)",
    ),
    Misuse(
        "linearize-primal-not-a-jax-type",
        linearize,
        "primals",
        (lambda x: x * 2, None),
        {},
        TypeError,
        r"(can't multiply sequence|unsupported operand)",  # fn's own error: primals reach fn
    ),
    Misuse(
        "jvp-fn-too-few-tangents",
        _jvp_fn,
        "tangents",
        (None,),
        {},
        TypeError,
        r"linearize\(\): jvp_fn takes one tangent per primal \(2\), got 1",
    ),
    Misuse(
        "jvp-fn-tangent-of-other-structure",
        _jvp_fn,
        "tangents",
        ({"w": jnp.ones(2)}, None),
        {},
        TypeError,
        r"linearize\(\): the tangent for primal 0 does not have its structure: expected "
        r"PyTreeDef\(\{'tag': \*, 'w': \*\}\), got PyTreeDef\(\{'w': \*\}\)",
    ),
    Misuse(
        "jvp-fn-tangent-of-other-shape",
        _jvp_fn,
        "tangents",
        ({"w": jnp.ones(3), "tag": None}, None),
        {},
        ValueError,
        r"linearize\(\): jvp_fn got a tangent of float32\[3\] for primal 0 at \['w'\], which is "
        r"float32\[2\]; a tangent must have its primal's shape and dtype",
    ),
    Misuse(
        "jvp-fn-tangent-of-other-dtype",
        _jvp_fn,
        "tangents",
        (None, jnp.arange(2)),
        {},
        ValueError,
        r"jvp_fn got a tangent of int32\[2\] for primal 1, which is float32\[2\]",
    ),
    Misuse(
        "jvp-fn-tangent-not-an-array",
        _jvp_fn,
        "tangents",
        (None, "dx"),
        {},
        TypeError,
        r"jvp_fn got a tangent of 'dx' \(str\), not an array, for primal 1, which is float32\[2\]",
    ),
]

# -- replace, fields, register_backend ------------------------------------------------------------

ROWS_CLASSES = [
    Misuse(
        "replace-not-a-pytree-class-instance",
        replace,
        "obj",
        (Plain(),),
        {"weights": 2.0},
        TypeError,
        r"replace\(\) expects an instance of a @pytree_class class, got an instance of Plain; "
        r"decorate it",
    ),
    Misuse(
        "replace-a-number",
        replace,
        "obj",
        (3,),
        {},
        TypeError,
        r"replace\(\) expects .*, got an instance of int",
    ),
    Misuse(
        "replace-unknown-field-annotated",
        replace,
        "changes",
        (Annotated(1.0),),
        {"weight": 2.0},
        TypeError,
        r"replace\(\): Annotated has no field 'weight'; its fields are \('weights', 'name'\)",
    ),
    Misuse(
        "replace-unknown-field-unannotated",
        replace,
        "changes",
        (Unannotated(1.0),),
        {"bias": 2.0},
        TypeError,
        r"replace\(\): Unannotated has no field 'bias'; its fields are \('weights', 'size'\)",
    ),
    Misuse(
        "replace-unhashable-static-annotated",
        replace,
        "changes",
        (Annotated(1.0),),
        {"name": ["a"]},
        TypeError,
        r"Annotated\.name is a static field, so its value must be hashable .* it holds a list",
    ),
    Misuse(
        "replace-unhashable-static-unannotated",
        replace,
        "changes",
        (Unannotated(1.0),),
        {"size": np.ones(2)},
        TypeError,
        r"Unannotated\.size is a static field, so its value must be hashable",
    ),
    Misuse(
        "fields-a-number",
        fields,
        "class_or_instance",
        (3,),
        {},
        TypeError,
        r"fields\(\) expects a @pytree_class class or instance, got an instance of int",
    ),
    Misuse(
        "fields-none",
        fields,
        "class_or_instance",
        (None,),
        {},
        TypeError,
        r"fields\(\) expects .*, got an instance of NoneType",
    ),
    Misuse(
        "fields-plain-class",
        fields,
        "class_or_instance",
        (Plain,),
        {},
        TypeError,
        r"fields\(\) expects .*, got class Plain; decorate it with @pytreekit.pytree_class",
    ),
    Misuse(
        "fields-unannotated-class",
        fields,
        "class_or_instance",
        (Unannotated,),
        {},
        TypeError,
        r"fields\(Unannotated\): this class has no field annotations, .* call fields\(\) on an "
        r"instance instead",
    ),
    Misuse(
        "register-backend-plain-class",
        register_backend,
        "cls",
        (Plain, "torch"),
        {},
        TypeError,
        r"register_backend\(\) expects a @pytree_class class or instance, got class Plain",
    ),
    Misuse(
        "register-backend-an-instance",
        register_backend,
        "cls",
        (Annotated(1.0), "optree"),
        {},
        TypeError,
        r"register_backend\(\) takes a class, got an instance of Annotated",
    ),
    Misuse(
        "register-backend-unknown-name",
        register_backend,
        "backend",
        (Annotated, "tensorflow"),
        {},
        ValueError,
        r"Annotated: unknown pytree backend 'tensorflow'; choose from \('jax', 'optree', "
        r"'torch'\)",
    ),
    Misuse(
        "register-backend-not-a-string",
        register_backend,
        "backend",
        (Annotated, None),
        {},
        ValueError,
        r"Annotated: unknown pytree backend None; choose from",
    ),
]

# -- field ----------------------------------------------------------------------------------------


def _field_flag(param: str, value: Any, accepted: str) -> Misuse:
    # dataclasses.field accepts any value for its flags; a wrong one is a silent misconfiguration.
    return Misuse(
        f"field-{param.replace('_', '-')}-not-a-bool",
        field,
        param,
        (),
        {param: value},
        TypeError,
        rf"field\({param}=\.\.\.\) takes {accepted}, got {value!r}",
    )


ROWS_FIELD = [
    Misuse(
        "field-doc-not-a-string",
        field,
        "doc",
        (),
        {"doc": 3},
        TypeError,
        r"field\(doc=\.\.\.\) takes the field's docstring \(a str\) or None, got 3",
    ),
    Misuse(
        "field-static-a-string",
        field,
        "static",
        (),
        {"static": "False"},
        TypeError,
        r"field\(static=\.\.\.\) takes True or False, got 'False'",
    ),
    Misuse(
        "field-static-none",
        field,
        "static",
        (),
        {"static": None},
        TypeError,
        r"field\(static=\.\.\.\) takes True or False, got None",
    ),
    Misuse(
        "field-default-and-default-factory",
        field,
        "default",
        (),
        {"default": 0, "default_factory": list},
        ValueError,
        r"field\(\) takes default= or default_factory=, not both: keep default= for an immutable "
        r"value, default_factory= for a function",
    ),
    Misuse(
        "field-default-factory-not-callable",
        field,
        "default_factory",
        (),
        {"default_factory": []},
        TypeError,
        r"field\(default_factory=\.\.\.\) must be callable .*, got \[\]",
    ),
    Misuse(
        "field-converter-not-callable",
        field,
        "converter",
        (),
        {"converter": "float"},
        TypeError,
        r"field\(converter=\.\.\.\) must be callable .*, got 'float'",
    ),
    Misuse(
        "field-metadata-not-a-mapping",
        field,
        "metadata",
        (),
        {"metadata": 3},
        TypeError,
        r"field\(metadata=\.\.\.\) .*mapping.*, got 3",
    ),
    _field_flag("init", "no", "True or False"),
    _field_flag("repr", "no", "True or False"),
    _field_flag("compare", 2, "True or False"),  # 0 and 1 are flags (argparse, configs)
    _field_flag("kw_only", "yes", "True or False"),
    _field_flag("hash", "no", "True, False or None"),
]

# -- custom_jvp_method, custom_vjp_method, custom_gradient_method ---------------------------------


def _method(self, x):
    return x


def _custom_method_rows(decorator: Callable[..., Any]) -> list[Misuse]:
    name = decorator.__name__
    return [
        Misuse(
            f"{name}-not-callable",
            decorator,
            "fn",
            (3,),
            {},
            TypeError,
            rf"{name} decorates a function \(a method\), got 3",
        ),
        Misuse(
            f"{name}-staticmethod",
            decorator,
            "fn",
            (staticmethod(_method),),
            {},
            TypeError,
            rf"{name} cannot wrap a staticmethod: .* Put @{name} on a plain method",
        ),
        Misuse(
            f"{name}-no-self",
            decorator,
            "fn",
            (lambda: 1.0,),
            {},
            TypeError,
            rf"{name} .*<lambda>: the function takes no parameters, but the first one is the "
            rf"instance \(self\)",
        ),
        Misuse(
            f"{name}-keyword-only-parameter",
            decorator,
            "fn",
            (lambda self, *, x: x,),
            {},
            TypeError,
            rf"{name} .*<lambda>: parameter 'x' is keyword-only; .* use ordinary parameters",
        ),
        Misuse(
            f"{name}-twice",
            decorator,
            "fn",
            (decorator(_method),),
            {},
            TypeError,
            rf"{name}: _method is already a {name}; decorate it once",
        ),
        Misuse(
            f"{name}-a-builtin-class",
            decorator,
            "fn",
            (int,),
            {},
            TypeError,
            rf"{name} .*int",
        ),
        Misuse(
            f"{name}-nondiff-self-not-a-bool",
            decorator,
            "nondiff_self",
            (_method,),
            {"nondiff_self": "yes"},
            TypeError,
            rf"{name}\(nondiff_self=\.\.\.\) takes True or False, got 'yes'",
        ),
        Misuse(
            f"{name}-nondiff-self-not-a-bool-up-front",
            decorator,
            "nondiff_self",
            (),
            {"nondiff_self": "yes"},
            TypeError,
            rf"{name}\(nondiff_self=\.\.\.\) takes True or False, got 'yes'",
        ),
    ]


ROWS_CUSTOM_METHODS = [
    *_custom_method_rows(custom_jvp_method),
    *_custom_method_rows(custom_vjp_method),
    *_custom_method_rows(custom_gradient_method),
]


class WithCodec:
    """Registered once below: a second registration is refused."""


register_static_codec(WithCodec, lambda value: 0, lambda data: WithCodec())

ROWS_CODECS = [
    Misuse(
        "register-static-codec-not-a-class",
        register_static_codec,
        "cls",
        (3, str, str),
        {},
        TypeError,
        r"register_static_codec\(cls=\.\.\.\) takes the class .*, got 3",
    ),
    Misuse(
        "register-static-codec-built-in-kind",
        register_static_codec,
        "cls",
        (int, str, str),
        {},
        TypeError,
        r"register_static_codec\(cls=\.\.\.\): static data stores int values itself",
    ),
    Misuse(
        "register-static-codec-twice",
        register_static_codec,
        "cls",
        (WithCodec, str, str),
        {},
        ValueError,
        r"register_static_codec\(cls=\.\.\.\): WithCodec has a codec already",
    ),
    Misuse(
        "register-static-codec-encode-not-callable",
        register_static_codec,
        "encode",
        (Plain, "x", str),
        {},
        TypeError,
        r"register_static_codec\(encode=\.\.\.\) for Plain must be callable, got 'x'",
    ),
    Misuse(
        "register-static-codec-decode-not-callable",
        register_static_codec,
        "decode",
        (Plain, str, None),
        {},
        TypeError,
        r"register_static_codec\(decode=\.\.\.\) for Plain must be callable, got None",
    ),
]

ROWS_ARTIFACTS = [
    Misuse(
        "pickle-static-fields-not-a-pytree-class",
        pickle_static_fields,
        "cls",
        (Plain,),
        {},
        TypeError,
        r"pickle_static_fields\(\) expects a @pytree_class class or instance, got class Plain",
    ),
    Misuse(
        "pickle-static-fields-an-instance",
        pickle_static_fields,
        "cls",
        (Unannotated(1.0),),
        {},
        TypeError,
        r"pickle_static_fields\(\) takes a class, got an instance of Unannotated",
    ),
]

# Issue 33: the references artifacts may name.
ROWS_REFERENCES = [
    Misuse(
        "add-safe-references-a-string",
        pytreekit.add_safe_references,
        "references",
        ("os.system",),
        {},
        TypeError,
        r"add_safe_references\(\.\.\.\) takes a list of functions and classes, got str",
    ),
    Misuse(
        "artifact-references-not-bytes",
        pytreekit.artifact_references,
        "artifact",
        (3,),
        {},
        TypeError,
        r"artifact_references\(\) takes the bytes of an artifact or a treespec's text, got int",
    ),
]

# -- rows to come: pytree_class's (the lead's issue 8 rewrite). Add a ROWS_<GROUP> list above,
# append it to ROWS, and take the name off this set.
ROWS_TO_COME = {"pytree_class"}

ROWS = [
    *ROWS_FILTERS,
    *ROWS_LINEARIZE,
    *ROWS_CLASSES,
    *ROWS_FIELD,
    *ROWS_CUSTOM_METHODS,
    *ROWS_CODECS,
    *ROWS_ARTIFACTS,
    *ROWS_REFERENCES,
]

ODD_INPUTS = [
    OddInput("is-array-python-float", is_array, "x", 1.0, False),
    OddInput("is-array-list-of-arrays", is_array, "x", [jnp.ones(1)], False),
    OddInput("is-array-duck-typed", is_array, "x", HasDtype(), False),
    OddInput("is-array-shape-dtype-struct", is_array, "x", jax.ShapeDtypeStruct((2,), "f4"), False),
    OddInput("is-array-none", is_array, "x", None, False),
    OddInput("is-array-numpy-bool-scalar", is_array, "x", np.True_, True),
    OddInput("is-inexact-duck-typed", is_inexact_array, "x", HasDtype(), False),
    OddInput("is-inexact-object-array", is_inexact_array, "x", np.array([None]), False),
    OddInput("is-inexact-bool-array", is_inexact_array, "x", np.ones(2, bool), False),
    OddInput("is-inexact-python-complex", is_inexact_array, "x", 1j, False),
    OddInput("is-inexact-float0", is_inexact_array, "x", np.zeros((), jax.dtypes.float0), False),
    OddInput("is-inexact-bfloat16", is_inexact_array, "x", jnp.ones(1, jnp.bfloat16), True),
    OddInput("is-pytree-class-none", is_pytree_class, "class_or_instance", None, False),
    OddInput("is-pytree-class-number", is_pytree_class, "class_or_instance", 3, False),
    OddInput("is-pytree-class-type", is_pytree_class, "class_or_instance", type, False),
    OddInput("is-pytree-class-plain-class", is_pytree_class, "class_or_instance", Plain, False),
    OddInput("is-pytree-class-instance", is_pytree_class, "class_or_instance", Plain(), False),
    OddInput(
        "is-pytree-class-its-spec",
        is_pytree_class,
        "class_or_instance",
        Annotated.__pytreekit_spec__,
        False,
    ),
    OddInput("is-pytree-class-decorated", is_pytree_class, "class_or_instance", Unannotated, True),
]


def _snapshot(value: Any) -> Any:
    """What a failed call must leave as it was: structure, leaves (by identity) and, for
    instances, the attribute dict."""
    leaves, treedef = jax.tree_util.tree_flatten(value)
    attributes = {k: id(v) for k, v in getattr(value, "__dict__", {}).items()}
    return treedef, [id(leaf) for leaf in leaves], attributes


def _with_marks(row: Misuse) -> Any:
    marks = [] if row.xfail is None else [pytest.mark.xfail(strict=True, reason=row.xfail)]
    return pytest.param(row, marks=marks, id=row.id)


@pytest.mark.parametrize("row", [_with_marks(row) for row in ROWS])
def test_misuse_is_refused_with_a_message_naming_the_culprit(row):
    before = [_snapshot(v) for v in (*row.args, *row.kwargs.values())]
    with pytest.raises(row.error) as info:
        row.function(*row.args, **row.kwargs)
    message = str(info.value)
    assert re.search(row.match, message, re.DOTALL), f"{message!r} does not match {row.match!r}"
    assert [_snapshot(v) for v in (*row.args, *row.kwargs.values())] == before


@pytest.mark.parametrize("row", ODD_INPUTS, ids=[row.id for row in ODD_INPUTS])
def test_predicates_answer_odd_inputs_without_raising(row):
    assert row.function(row.arg) is row.expected


def _parameters(function):
    return set(inspect.signature(function).parameters)


def test_every_parameter_has_a_row():
    covered: dict[Callable[..., Any], set[str]] = {}
    for row in [*ROWS, *ODD_INPUTS]:
        covered.setdefault(row.function, set()).add(row.param)
    for function, params in covered.items():
        assert params == _parameters(function), function.__name__
    public = {  # a function without parameters (a context manager) has no argument to get wrong
        name
        for name in pytreekit.__all__
        if inspect.isfunction(getattr(pytreekit, name))
        and name not in ROWS_TO_COME
        and _parameters(getattr(pytreekit, name))
    }
    assert public == {function.__name__ for function in covered} - {"_jvp_fn"}


def test_messages_name_the_function_or_the_class():
    # A row's regex could be loosened by accident: each message starts with the function's name
    # or names the class the misuse concerns.
    for row in ROWS:
        if row.function is _jvp_fn or "fn(*primals)" in row.match or row.param == "primals":
            continue
        names = {row.function.__name__, *(type(a).__name__ for a in row.args)}
        names |= {a.__name__ for a in row.args if isinstance(a, type)}
        assert any(name in row.match for name in names), row.id


# -- jax.jit(model): JAX's own error, explained in the README -------------------------------------


@pytree_class
class Scale:
    def __init__(self, weights):
        self.weights = weights

    def __call__(self, x):
        return self.weights * x


def test_jit_of_a_mutable_instance_is_jaxs_unhashable_error_and_the_readme_fixes_work():
    import equinox as eqx

    model, x = Scale(jnp.arange(3.0)), jnp.ones(3)
    with pytest.raises(TypeError, match=r"^unhashable type: 'Scale'"):
        jax.jit(model)(x)
    with pytest.raises(
        ValueError, match=r"(?s)Non-hashable static arguments .*unhashable type: 'Scale'"
    ):
        jax.jit(lambda m, x: m(x), static_argnums=0)(model, x)
    expected = np.arange(3.0)
    np.testing.assert_array_equal(jax.jit(Scale.__call__)(model, x), expected)
    np.testing.assert_array_equal(jax.jit(lambda m, x: m(x))(model, x), expected)
    np.testing.assert_array_equal(eqx.filter_jit(model)(x), expected)
    # The model is an argument, not a constant: new weights are used without retracing.
    traces = []

    @jax.jit
    def apply(m, x):
        traces.append(None)
        return m(x)

    apply(model, x)
    np.testing.assert_array_equal(apply(Scale(jnp.full(3, 2.0, jnp.float32)), x), np.full(3, 2.0))
    assert len(traces) == 1


def test_jit_of_a_frozen_instance_holding_an_array_names_the_field():
    @pytree_class(frozen=True)
    class Frozen:
        weights: Any

        def __call__(self, x):
            return self.weights * x

    with pytest.raises(
        TypeError,
        match=r"Frozen instances are hashable only when the fields they compare are, but field "
        r"'weights' holds an array .* pass it to the jitted function as an argument",
    ):
        jax.jit(Frozen(jnp.ones(2)))(jnp.ones(2))
