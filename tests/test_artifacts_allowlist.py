"""Issue 33, in one process: which references loading resolves (the default list, by identity),
how a user extends it (``add_safe_references``, ``safe_references``, audited first with
``artifact_references``), the pickle permission as a token, the strict reader, the checks made
before a class learns a layout, and a fuzz test of whole aux data."""

from __future__ import annotations

import abc
import asyncio
import collections.abc
import contextvars
import dataclasses
import enum
import functools
import gc
import json
import math
import numbers
import operator
import os
import pickle
import sys
import threading
import types
import typing
import weakref

import artifact_fixtures as af
import export_fixtures as ef
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from conftest import require, run_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytreekit
from pytreekit import _markers as markers
from pytreekit._artifacts.export import dump_aux, load_aux
from pytreekit._artifacts.static_data import (
    MAGIC,
    MAX_LEARNED_LAYOUTS,
    MAX_LEARNED_NAMES,
    LoadedNaN,
    StaticDataError,
    UnencodableError,
    _added,
    _hash_safe_types,
    _learned_encoders,
    admits_value,
    declared_types,
    dumps,
    is_safe_reference,
    loads,
)
from pytreekit._compat import export_registries as _export_registries
from pytreekit._messages import type_name
from pytreekit._names import MISSING, public_name


def _raw(tree: object) -> bytes:
    return MAGIC + json.dumps(tree, separators=(",", ":")).encode("ascii")


# -- the default list ---------------------------------------------------------------------------

SAFE = [
    jax.nn.relu,
    jax.nn.gelu,
    jax.nn.softmax,
    jnp.tanh,
    jnp.add,
    jnp.exp,
    np.add,
    np.tanh,
    math.exp,
    math.sqrt,
    operator.add,
    operator.mul,
    abs,
    round,
    float,
    int,
    type(None),
    jnp.float32,
    np.float32,
    ml_dtypes.bfloat16,
]
UNSAFE = [
    os.system,
    exec,
    eval,
    open,
    print,
    getattr,
    max,
    min,
    sorted,
    map,
    functools.reduce,
    operator.methodcaller,
    operator.attrgetter,
    jax.lax.cond,
    jax.lax.scan,
    jax.lax.while_loop,
    jax.debug.callback,
    jax.pure_callback,
    jnp.vectorize,
    np.load,
    np.save,
    pickle.loads,
]


def _id(value: object) -> str:
    return (
        f"{getattr(value, '__module__', None)}.{getattr(value, '__name__', type(value).__name__)}"
    )


@pytest.mark.parametrize("value", SAFE, ids=_id)
def test_leaf_numeric_functions_and_types_are_safe_and_round_trip(value):
    assert is_safe_reference(value)
    assert loads(dumps(value)) is value


@pytest.mark.parametrize(
    ("func", "keyword"),
    [(np.nan_to_num, "copy"), (np.median, "overwrite_input"), (np.add, "out"), (jnp.tanh, "out")],
)
def test_a_partial_telling_a_default_function_to_write_into_its_arguments_is_refused(func, keyword):
    """``partial(F.relu, inplace=True)``, ``partial(np.nan_to_num, copy=False)``: the default
    list holds functions that only compute; with these keywords they write into what the model
    hands them. Refused at write and at load; allowed once the user adds the function."""
    value = functools.partial(func, **{keyword: False})
    with pytest.raises(UnencodableError, match=f"with {keyword}= may write into"):
        dumps(value)
    plain = dumps(functools.partial(func))
    edited = plain.replace(b",{}]", b',{"' + keyword.encode() + b'":false}]')
    assert edited != plain
    with pytest.raises(StaticDataError, match=f"with {keyword}= may write into"):
        loads(edited)
    pytreekit.add_safe_references([func])
    try:
        assert loads(dumps(value)) == value
    finally:
        _added.pop(id(func))


@pytest.mark.parametrize("value", UNSAFE, ids=_id)
def test_io_and_higher_order_functions_are_refused_at_write_and_load(value):
    assert not is_safe_reference(value)
    with pytest.raises(UnencodableError) as refused:
        dumps(value)
    if public_name(value) is None:
        # Some JAX releases keep it under no public name (jax.lax.cond on 0.4.35 is a wrapped
        # private _cond): then no artifact can name it at all, which the refusal says.
        assert "stored by module and name" in str(refused.value)
        return
    assert "add_safe_references([" in str(refused.value)
    with pytreekit.safe_references([value]):
        data = dumps(value)
        assert loads(data) is value
    with pytest.raises(StaticDataError, match=r"not on the list .*add_safe_references\(\["):
        loads(data)


def test_torch_elementwise_functions_dtypes_and_devices_round_trip():
    torch = require("torch")
    for value in (torch.tanh, torch.relu, torch.sigmoid, torch.exp, torch.nn.functional.gelu):
        assert is_safe_reference(value) and loads(dumps(value)) is value
    for value in (torch.float32, torch.bfloat16, torch.int8):
        assert loads(dumps(value)) is value
    assert loads(dumps(torch.device("cpu"))) == torch.device("cpu")
    assert loads(dumps(torch.device("cuda:1"))) == torch.device("cuda:1")
    for value in (torch.load, torch.save, torch.compile):
        assert not is_safe_reference(value)
    with pytest.raises(StaticDataError, match="not a torch device"):
        loads(_raw(["dv", "cpu; import os"]))


def test_a_reference_resolves_by_identity_not_by_name():
    """A private module's name for jax.nn.relu loads it; a module's ``tanh`` that is os.system
    does not."""
    private = jax.nn.relu.__module__ if hasattr(jax.nn.relu, "__module__") else None
    if private and private != "jax.nn":
        assert loads(_raw(["r", f"{private}:relu"])) is jax.nn.relu
    module = types.ModuleType("impostor_numpy")
    module.tanh = os.system  # type: ignore[attr-defined]
    sys.modules["impostor_numpy"] = module
    try:
        with pytest.raises(StaticDataError, match="'impostor_numpy:tanh', which is not on the"):
            loads(_raw(["r", "impostor_numpy:tanh"]))
    finally:
        del sys.modules["impostor_numpy"]


def test_the_issues_listed_kinds_round_trip():
    for value in (10**5000, -(10**4400), type(None), "\ud83d\ude00", "a\ud800b", "😀"):
        back = loads(dumps(value))
        assert type(back) is type(value) and back == value
        assert len(back) == len(value) if isinstance(value, str) else True
    pytreekit.add_safe_references([dict.fromkeys])
    assert loads(dumps(dict.fromkeys)) == dict.fromkeys
    with pytest.raises(UnencodableError, match=r"functools.partial\(str.upper, 'abc'\)"):
        dumps("abc".upper)
    with pytreekit.safe_references([str.upper]):
        assert loads(dumps(functools.partial(str.upper, "abc")))() == "ABC"


def test_loaded_nan_and_partial_compare_equal_to_the_callers():
    nan = loads(dumps(float("nan")))
    assert type(nan) is LoadedNaN and nan == float("nan") and float("nan") == nan
    assert (1, nan) == (1, math.nan) and nan != 0.0 and (nan == 0.0) is False
    assert type(pickle.loads(pickle.dumps(nan))) is float
    made = functools.partial(jax.nn.leaky_relu, negative_slope=0.5)
    back = loads(dumps(made))
    assert back == made and made == back and hash(back) == hash(loads(dumps(made)))
    assert back != functools.partial(jax.nn.leaky_relu, negative_slope=0.25)
    plain = pickle.loads(pickle.dumps(loads(dumps(functools.partial(math.pow, 2.0)))))
    assert type(plain) is functools.partial and plain(3.0) == 8.0


# -- extending the list -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "match"),
    [("os.system", "takes a list"), ([os], "never a module"), ([3], "got 3")],
    ids=["a-string", "a-module", "not-callable"],
)
def test_add_safe_references_takes_functions_and_classes(argument, match):
    with pytest.raises(TypeError, match=match):
        pytreekit.add_safe_references(argument)
    with pytest.raises(TypeError, match=match):
        pytreekit.safe_references(argument)


def test_a_safe_references_scope_dies_at_its_exit_also_in_tasks_and_copied_contexts():
    data = _raw(["r", "posix:system"])
    copied: list[contextvars.Context] = []

    async def load_later() -> object:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return loads(data)

    async def main() -> None:
        scope = pytreekit.safe_references([os.system])
        with scope:
            assert loads(data) is os.system
            copied.append(contextvars.copy_context())
            task = asyncio.ensure_future(load_later())
        with pytest.raises(StaticDataError, match="not on the list"):
            await task
        with pytest.raises(RuntimeError, match="entered once"), scope:
            pass

    asyncio.run(main())
    with pytest.raises(StaticDataError, match="not on the list"):
        copied[0].run(loads, data)
    with pytest.raises(StaticDataError, match="not on the list"):
        loads(data)


def test_scopes_nest_and_each_thread_sees_its_own():
    errors: list[BaseException] = []

    def worker(allowed: bool) -> None:
        try:
            for _ in range(200):
                if allowed:
                    with pytreekit.safe_references([os.system]):
                        assert loads(_raw(["r", "posix:system"])) is os.system
                else:
                    with pytest.raises(StaticDataError):
                        loads(_raw(["r", "posix:system"]))
        except BaseException as error:
            errors.append(error)

    run_threads([functools.partial(worker, i % 2 == 0) for i in range(8)])
    assert errors == []
    with pytreekit.safe_references([os.system]), pytreekit.safe_references([exec]):
        assert loads(_raw(["r", "builtins:exec"])) is exec
        assert loads(_raw(["r", "posix:system"])) is os.system


def test_artifact_references_lists_what_an_artifact_needs_before_loading():
    model = ef.Net(ef.Activation(ef.relu), jnp.ones(()))
    data = jax.export.export(jax.jit(lambda m: m))(model).serialize()
    found = pytreekit.artifact_references(data)
    assert pytreekit.ArtifactReference("export_fixtures:relu", "safe") in found
    needs = pytreekit.artifact_references(_raw(["t", ["r", "posix:system"], ["r", "nowhere:f"]]))
    assert needs == [
        pytreekit.ArtifactReference("posix:system", "refused"),
        pytreekit.ArtifactReference("nowhere:f", "not imported"),
    ]
    with pytest.raises(TypeError, match="takes the bytes"):
        pytreekit.artifact_references(3)  # type: ignore[arg-type]


def test_artifact_references_reads_torch_treespecs():
    require("torch")
    import torch.utils._pytree as torch_pytree

    spec = torch_pytree.tree_flatten(af.Holder(af.relu))[1]
    found = pytreekit.artifact_references(torch_pytree.treespec_dumps(spec))
    assert pytreekit.ArtifactReference("artifact_fixtures:relu", "safe") in found


# -- the pickle permission ----------------------------------------------------------------------


def test_the_pickle_permission_dies_at_exit_also_in_copied_contexts_and_threads():
    from written_before import ARTIFACTS, make_dense

    dense = type(make_dense())
    permission = pytreekit.allow_pickled_artifacts(dense)
    seen = []
    with permission:
        jax.export.deserialize(ARTIFACTS["0.2.0"])
        copied = contextvars.copy_context()
        # What a thread started here sees where threads inherit the context (3.14 with
        # PYTHON_THREAD_INHERIT_CONTEXT=1, a free-threaded build's default).
        thread = threading.Thread(
            target=lambda: seen.append(
                copied.run(lambda: _refused(lambda: jax.export.deserialize(ARTIFACTS["0.2.0"])))
            )
        )
        thread.start()
        thread.join()
    assert seen == [True]
    assert copied.run(lambda: _refused(lambda: jax.export.deserialize(ARTIFACTS["0.2.0"])))
    with pytreekit.allow_pickled_artifacts(af.Holder):  # another class named: not Dense
        assert _refused(lambda: jax.export.deserialize(ARTIFACTS["0.2.0"]))
    with pytest.raises(TypeError, match="allow_pickled_artifacts"):
        pytreekit.allow_pickled_artifacts(int)


def _refused(load: typing.Callable[[], object]) -> bool:
    try:
        load()
    except StaticDataError:
        return True
    return False


# -- the strict reader --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (MAGIC + b'{"a":1,"a":2}', "names a key twice"),
        (MAGIC + b'["d",1,"x",true,"y"]', "names a key twice"),
        (MAGIC + b'["s",1,1.0]', "holds an element twice"),
        (MAGIC + b"NaN", "NaN is not JSON"),
        (MAGIC + b'["t",Infinity]', "Infinity is not JSON"),
        (MAGIC + b"-Infinity", "Infinity is not JSON"),
        (MAGIC + b'["t",1e400]', "too large for a float"),
        (MAGIC + b'"\\ud800"', "lone surrogate"),
        (MAGIC + b'{"\\udc00":1}', "lone surrogate"),
        (MAGIC + b'["u",[1114112]]', "code points"),
        (MAGIC + b'["i","12g"]', "hexadecimal"),
        (MAGIC + b'["fp",["r","jax.nn:gelu"],["t",["r","jax.nn:relu"]],{}]', "only plain data"),
    ],
)
def test_the_reader_refuses_what_the_writer_never_writes(data, match):
    with pytest.raises(StaticDataError, match=match):
        loads(data)


def test_a_surrogate_pair_stays_two_code_points_and_an_escaped_pair_is_one():
    assert loads(dumps("\ud83d\ude00")) == "\ud83d\ude00"
    assert loads(MAGIC + b'"\\ud83d\\ude00"') == "😀"  # what json.dumps writes for it


def test_colliding_hashes_are_refused_in_linear_time():
    keys = [i * (2**61 - 1) for i in range(1, 10_001)]
    assert len({hash(key) for key in keys}) == 1
    data = _raw(["s", *keys])
    with pytest.raises(StaticDataError, match="share one hash value"):
        loads(data)


def test_unhashable_static_values_are_refused():
    nodes = af.Guarded.__pytreekit_spec__.nodes
    data = _raw(["t", 3, ["t", "size", "w"], ["t", True, False], ["t", ["l", 1]]])
    with pytest.raises(StaticDataError, match="size holds a list, which is not hashable"):
        load_aux(nodes, data)


# -- checks before a class learns a layout -------------------------------------------------------


def test_refused_aux_data_leaves_no_layout_and_each_read_is_capped_alone():
    """What one read may teach a class is capped, not what the process learns: reads after as
    many layouts as one may name still load (attack11: one file used up a shared quota)."""

    @pytree_class_unannotated
    class Wide:
        pass

    nodes = Wide.__pytreekit_spec__.nodes
    table = nodes.table
    before = len(table._by_names)
    for index in range(300):
        with pytest.raises(StaticDataError):
            load_aux(nodes, _raw(["t", 3, ["t", f"f{index}"], ["t", False], ["t", ["r", "x:y"]]]))
    assert len(table._by_names) == before
    for index in range(MAX_LEARNED_LAYOUTS):
        load_aux(nodes, _raw(["t", 3, ["t", f"f{index}"], ["t", False], ["t"]]))
    load_aux(nodes, _raw(["t", 3, ["t", "one_more"], ["t", False], ["t"]]))
    load_aux(nodes, _raw(["t", 3, ["t", "f0"], ["t", False], ["t"]]))  # known: still read
    assert len(table._by_names) == before + MAX_LEARNED_LAYOUTS + 1


def pytree_class_unannotated(cls: type) -> type:
    def __init__(self: object) -> None:
        self.w = jnp.ones(1)  # type: ignore[attr-defined]

    cls.__init__ = __init__  # type: ignore[misc]
    return pytreekit.pytree_class(cls)


def test_a_field_name_that_finds_a_method_is_refused_unless_declared():
    nodes = ef.Loose.__pytreekit_spec__.nodes
    data = _raw(["t", 3, ["t", "fn", "scale", "encode"], ["t", True, False, False], ["t", 1]])
    with pytest.raises(StaticDataError, match="names the field 'encode'"):
        load_aux(nodes, data)


def test_a_nested_instance_naming_a_method_of_its_class_is_refused():
    """Inside static data too (a pytree instance held by a static field)."""
    state = {"fn": ["r", "jax.nn:relu"], "scale": 1.0, "encode": ["r", "jax.nn:relu"]}
    state["__pytreekit_fields__"] = ["t", ["t", "fn", "scale", "encode"], ["t", True, True, True]]
    with (
        pytreekit.safe_references([ef.Loose]),
        pytest.raises(StaticDataError, match="'encode' of Loose, which the class holds already"),
    ):
        loads(_raw(["p", "export_fixtures:Loose", state]))


def test_a_class_redefined_50_times_is_not_kept_alive_by_the_codecs_caches():
    refs = []
    encoders, hash_safe = len(_learned_encoders), len(_hash_safe_types)
    for _ in range(50):

        class Point(typing.NamedTuple):
            x: int

        point = Point
        point.__qualname__ = "Point"
        globals()["Point"] = point
        with pytreekit.safe_references([point]):
            loads(dumps({point(1): 2}))
        refs.append(weakref.ref(point))
    del point
    globals().pop("Point")
    gc.collect()
    # The last name resolved is remembered (bounded: one per name) until the name is read again.
    assert sum(ref() is not None for ref in refs) <= 1
    assert len(_learned_encoders) <= encoders + 1 and len(_hash_safe_types) <= hash_safe + 1


# -- fuzzing whole aux data ----------------------------------------------------------------------

_NAMES = [
    "posix:system",
    "builtins:exec",
    "builtins:max",
    "jax.nn:relu",
    "jax.numpy:tanh",
    "export_fixtures:Decoy",
    "export_fixtures:Config",
    "export_fixtures:Interval",
    "pytreekit:Static",
    "export_fixtures:Activation",
]
_TAGS = [
    "t",
    "l",
    "d",
    "s",
    "b",
    "f",
    "c",
    "r",
    "k",
    "dt",
    "e",
    "n",
    "dc",
    "p",
    "fp",
    "x",
    "i",
    "u",
    "td",
    "dv",
]
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.sampled_from(_NAMES),
)
_trees = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.tuples(st.sampled_from(_TAGS), st.lists(children, max_size=4)).map(
            lambda pair: [pair[0], *pair[1]]
        ),
        st.dictionaries(
            st.sampled_from(["fn", "config", "w", "__pytreekit_fields__"]), children, max_size=3
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    cls=st.sampled_from([ef.Activation, ef.Configured, ef.Bounded, ef.Loose, ef.Net]),
    names=st.lists(
        st.sampled_from(["fn", "config", "bounds", "w", "scale", "act", "encode"]),
        min_size=1,
        max_size=3,
        unique=True,
    ),
    values=st.lists(_trees, max_size=3),
)
def test_fuzz_aux_data_loads_only_safe_values_or_refuses_cleanly(cls, names, values):
    flags = [name in ("fn", "config", "bounds", "encode") for name in names]
    data = _raw(
        [
            "t",
            4,
            f"export_fixtures:{cls.__qualname__}",
            ["t", *names],
            ["t", *flags],
            ["t", *values],
        ]
    )
    try:
        _layout, *statics = load_aux(cls.__pytreekit_spec__.nodes, data)
    except (StaticDataError, TypeError):  # TypeError: a layout the class has not (its message)
        return
    for value in statics:
        for reference in _references(value):
            assert (
                is_safe_reference(reference)
                or pytreekit.is_pytree_class(reference)
                or (isinstance(reference, type))
            )


def _references(value: object) -> list[object]:
    if isinstance(value, (tuple, list, frozenset)):
        return [r for item in value for r in _references(item)]
    if isinstance(value, dict):
        return [r for pair in value.items() for item in pair for r in _references(item)]
    if isinstance(value, functools.partial):
        return [value.func, *_references(value.args), *_references(value.keywords)]
    if callable(value):
        return [value]
    return []


# -- what loading never calls: classes the data names, and the methods of its values ------------

CALLED: list[str] = []


class _Records:
    """A metaclass part whose comparisons and hash are Python code (sympy's, protobuf's are)."""

    def __eq__(cls, other: object) -> bool:
        CALLED.append(f"{type(cls).__name__} __eq__")
        return type.__eq__(cls, other)  # type: ignore[arg-type]

    def __hash__(cls) -> int:
        CALLED.append(f"{type(cls).__name__} __hash__")
        return type.__hash__(cls)  # type: ignore[arg-type]


class _Recording(_Records, type):
    pass


class NamedByData(metaclass=_Recording):
    pass


class CachedHash(typing.NamedTuple):
    """Its __hash__ and __eq__ are no functions of its own, but run Python code all the same."""

    a: int
    __hash__ = staticmethod(lambda *args: CALLED.append("staticmethod __hash__") or 1)  # type: ignore[assignment]
    __eq__ = functools.lru_cache(lambda *args: CALLED.append("cached __eq__") or True)  # type: ignore[assignment]


class Finalised(typing.NamedTuple):
    a: int

    def __del__(self) -> None:
        CALLED.append("__del__")


@pytreekit.pytree_class
class HoldsCallable:
    w: jax.Array
    act: typing.Callable[..., typing.Any] = pytreekit.field(static=True, default=jnp.tanh)


@pytreekit.pytree_class
class HoldsKeys:
    w: jax.Array
    keys: frozenset[CachedHash] = pytreekit.field(static=True, default=frozenset())
    finalised: Finalised | None = pytreekit.field(static=True, default=None)


def _aux(cls: type, names: list[str], static: list[bool], values: list[object]) -> bytes:
    head = ["t", 4, f"{__name__}:{cls.__qualname__}", ["t", *names], ["t", *static]]
    return _raw([*head, ["t", *values]])


@pytest.mark.parametrize(
    ("cls", "names", "static", "values", "match"),
    [
        (
            HoldsCallable,
            ["w", "act"],
            [False, True],
            [["k", f"{__name__}:NamedByData"]],
            "NamedByData",
        ),
        (
            HoldsKeys,
            ["w", "keys", "finalised"],
            [False, True, True],
            [["s", ["n", f"{__name__}:CachedHash", 1]], None],
            "CachedHash cannot be a dict key",
        ),
        (
            HoldsKeys,
            ["w", "keys", "finalised"],
            [False, True, True],
            [["s"], ["n", f"{__name__}:Finalised", 1]],
            "Finalised defines __del__",
        ),
    ],
    ids=["metaclass of a class named", "hash not a C slot", "__del__ of a NamedTuple"],
)
def test_a_refused_load_called_no_code_of_the_classes_it_names(cls, names, static, values, match):
    CALLED.clear()
    with pytest.raises(StaticDataError, match=match):
        load_aux(cls.__pytreekit_spec__.nodes, _aux(cls, names, static, values))
    gc.collect()
    assert CALLED == []


@pytreekit.pytree_class(static=("name",), frozen=True)
class Part:
    def __init__(self, name: str) -> None:
        self.name = name


@pytreekit.pytree_class
class HoldsPart:
    w: jax.Array
    part: Part | None = pytreekit.field(static=True, default=None)


def _part(fields: dict[str, object], static: list[bool]) -> list[object]:
    layout = ["t", ["t", *fields], ["t", *static]]
    return ["p", f"{__name__}:Part", {**fields, "__pytreekit_fields__": layout}]


def test_pytree_values_in_a_refused_load_teach_their_class_nothing():
    """A tuple of 300 instances, each of a layout of its own, where one instance is declared:
    refused, and the class's table is as before (no layout interned, none counted). Nor do
    refused aux data use up the room a class has to learn layouts."""
    table = Part.__pytreekit_spec__.table
    before = (len(table._by_names), table.varied)
    parts = [_part({f"n{i}": 1}, [True]) for i in range(300)]
    data = _aux(HoldsPart, ["w", "part"], [False, True], [["t", *parts]])
    declared = r"part is declared .*Part \| None, and the artifact holds a tuple"
    with pytest.raises(StaticDataError, match=declared):
        load_aux(HoldsPart.__pytreekit_spec__.nodes, data)
    assert (len(table._by_names), table.varied) == before
    nodes = ef.Loose.__pytreekit_spec__.nodes
    head = ["t", 4, "export_fixtures:Loose"]
    for refused in range(MAX_LEARNED_LAYOUTS + 1):  # static flags the class does not declare
        names = ["t", "fn", "scale", f"x{refused}"]
        with pytest.raises(StaticDataError, match="Export the function again"):
            load_aux(nodes, _raw([*head, names, ["t", False, False, False], ["t"]]))
    names = ["t", "fn", "scale", "extra"]
    load_aux(nodes, _raw([*head, names, ["t", True, False, False], ["t", ["r", "jax.nn:relu"]]]))


def test_a_pytree_value_loaded_has_the_layout_its_class_declares_now():
    """The data's static flags (here: its one field a leaf) change nothing: the value flattens as
    the class declares it, and equals and hashes as one built now."""
    part = _part({"name": "a"}, [False])
    aux = load_aux(
        HoldsPart.__pytreekit_spec__.nodes, _aux(HoldsPart, ["w", "part"], [False, True], [part])
    )
    loaded = aux[0] if isinstance(aux, tuple) else aux
    assert jax.tree_util.tree_leaves(loaded) == []
    assert loaded == Part("a")
    assert hash(loaded) == hash(Part("a"))


@pytest.mark.parametrize(
    "value",
    [frozenset({math.nan}), {math.nan: 1}, frozenset({(1, math.nan)}), {complex(math.nan, 0): 1}],
    ids=["frozenset", "dict key", "inside a tuple", "complex"],
)
def test_what_loading_refuses_is_refused_at_writing(value):
    """A NaN comes back as ``LoadedNaN``, which cannot be a key: refused when written, not when
    an honest artifact is read back. A NaN elsewhere round-trips."""
    with pytest.raises(UnencodableError, match="a NaN cannot be a dict key or frozenset element"):
        dumps(value)
    assert math.isnan(loads(dumps((math.nan,)))[0])


def test_the_audit_reads_hostile_texts_as_no_tree():
    """Nesting deeper than the parser's recursion, and thousands of magics that start nothing."""
    assert pytreekit.artifact_references(MAGIC + b"[" * 100_000) == []
    assert pytreekit.artifact_references(MAGIC + b'["t",' + MAGIC * 20_000) == []
    named = MAGIC + b'["r","os:system"]'
    assert [r.name for r in pytreekit.artifact_references(b"[" * 5000 + named)] == ["os:system"]


class _RecordingEnumType(_Records, enum.EnumMeta):
    pass


class Mode(enum.Enum, metaclass=_RecordingEnumType):
    A = 1


class Hooked(abc.ABC):  # noqa: B024 (abstract for its hook, not for methods)
    """A user's abstract class: its hook is the user's code, and the data must not run it."""

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        CALLED.append("__subclasshook__")
        return NotImplemented


class Pair(typing.NamedTuple):
    a: int
    b: int

    def __iter__(self) -> typing.Iterator[int]:  # type: ignore[override]
        CALLED.append("NamedTuple __iter__")
        return tuple.__iter__(self)


@pytreekit.pytree_class
class Declares:
    w: jax.Array
    tagged: NamedByData | None = pytreekit.field(static=True, default=None)
    kind: type[NamedByData] | None = pytreekit.field(static=True, default=None)
    mode: int | Mode = pytreekit.field(static=True, default=0)
    modes: collections.abc.Sequence[Mode] | Mode = pytreekit.field(static=True, default=Mode.A)
    hooked: Hooked | int = pytreekit.field(static=True, default=0)
    pair: Pair | None = pytreekit.field(static=True, default=None)
    pairs: frozenset[Pair] = pytreekit.field(static=True, default=frozenset())


_DECLARES = ["w", "tagged", "kind", "mode", "modes", "hooked", "pair", "pairs"]


@pytest.mark.parametrize(
    ("field", "value", "loads_"),
    [
        ("tagged", 5, False),
        ("kind", ["k", "builtins:int"], False),
        ("mode", ["e", f"{__name__}:Mode", "A"], True),
        ("modes", ["e", f"{__name__}:Mode", "A"], True),
        ("hooked", 5, True),
        ("pair", ["n", f"{__name__}:Pair", 1, 2], True),
        ("pairs", ["s", ["n", f"{__name__}:Pair", 1, 2]], True),
    ],
)
def test_checking_a_value_against_its_declared_type_runs_none_of_the_classes_code(
    field, value, loads_
):
    """Classes compared by identity, a user's abstract class by its MRO, a NamedTuple's items by
    the C iterator: whether the load passes or is refused, none of the declared classes' code
    (their metaclasses' included) runs."""
    nodes = Declares.__pytreekit_spec__.nodes
    defaults = {"tagged": None, "kind": None, "mode": 0, "modes": ["e", f"{__name__}:Mode", "A"]}
    defaults |= {"hooked": 0, "pair": None, "pairs": ["s"], field: value}
    data = _aux(Declares, _DECLARES, [False] + [True] * 7, [defaults[n] for n in _DECLARES[1:]])
    declared_types(Declares)  # the annotations evaluated first: what runs then is Python's
    CALLED.clear()
    if loads_:
        load_aux(nodes, data)
    else:
        with pytest.raises(StaticDataError, match=f"static field {field} is declared"):
            load_aux(nodes, data)
    assert CALLED == []


@pytreekit.pytree_class
class HoldsParts:
    w: jax.Array
    parts: tuple[Part, ...] = pytreekit.field(static=True, default=())


def test_one_load_may_teach_no_more_layouts_than_the_cap():
    """The cap counts what a load itself adds: 300 new layouts in one value are refused whole."""
    table = Part.__pytreekit_spec__.table
    before = len(table._by_names)
    parts = [_part({f"m{i}": 1}, [True]) for i in range(MAX_LEARNED_LAYOUTS + 44)]
    data = _aux(HoldsParts, ["w", "parts"], [False, True], [["t", *parts]])
    with pytest.raises(
        StaticDataError, match=f"names more than {MAX_LEARNED_LAYOUTS} layouts of Part in one"
    ):
        load_aux(HoldsParts.__pytreekit_spec__.nodes, data)
    assert len(table._by_names) == before


def test_the_cap_counts_field_names_too():
    @pytree_class_unannotated
    class Broad:
        pass

    nodes = Broad.__pytreekit_spec__.nodes
    wide = [f"g{i}" for i in range(MAX_LEARNED_NAMES + 1)]
    with pytest.raises(StaticDataError, match=f"more than {MAX_LEARNED_NAMES} field names"):
        load_aux(nodes, _raw(["t", 4, None, ["t", *wide], ["t", *[False] * len(wide)], ["t"]]))
    for prefix in "gh":  # each read within the cap, whatever the reads before it named
        half = [f"{prefix}{i}" for i in range(MAX_LEARNED_NAMES // 2 + 1)]
        load_aux(nodes, _raw(["t", 4, None, ["t", *half], ["t", *[False] * len(half)], ["t"]]))


def test_a_node_given_other_children_than_its_layout_has_is_refused():
    """jax.export rebuilds a node from its aux data and the children its artifact gives it: one
    fewer is no StopIteration, one more is not dropped silently."""
    aux = load_aux(
        ef.Loose.__pytreekit_spec__.nodes,
        _raw(
            [
                "t",
                4,
                "export_fixtures:Loose",
                ["t", "fn", "scale"],
                ["t", True, False],
                ["t", ["r", "jax.nn:relu"]],
            ]
        ),
    )
    rebuild = _export_registries()[1]["export_fixtures:Loose"][2]
    assert rebuild(aux, [jnp.ones(())]).scale == 1.0
    for children in ([], [jnp.ones(()), jnp.ones(())]):
        with pytest.raises(StaticDataError, match=f"has {len(children)} children where"):
            rebuild(aux, children)


def test_threads_loading_new_layouts_learn_them_all():
    """Two threads load aux data naming new layouts of one class while a third builds and
    flattens instances: no error, every layout learnt, every tree right."""

    @pytree_class_unannotated
    class Shared:
        pass

    nodes = Shared.__pytreekit_spec__.nodes
    errors: list[BaseException] = []

    def load(prefix: str) -> None:
        for index in range(MAX_LEARNED_LAYOUTS):
            data = _raw(["t", 4, None, ["t", "w", f"{prefix}{index}"], ["t", False, False], ["t"]])
            try:
                load_aux(nodes, data)
            except BaseException as error:
                errors.append(error)

    def build() -> None:
        for _ in range(300):
            made = Shared()
            if jax.tree_util.tree_leaves(made) != [made.w]:
                errors.append(AssertionError("wrong leaves"))

    run_threads([functools.partial(load, "a"), functools.partial(load, "b"), build])
    assert errors == []
    learned = {names for names, _ in nodes.table._by_names}
    assert all(("w", f"{p}{i}") in learned for p in "ab" for i in range(MAX_LEARNED_LAYOUTS))


@pytreekit.pytree_class
class HoldsSizes:
    w: jax.Array
    sizes: collections.abc.Sequence[int] = pytreekit.field(static=True, default=())
    names: collections.abc.Set[str] = pytreekit.field(static=True, default=frozenset())


@pytest.mark.parametrize(
    ("sizes", "names", "refused"),
    [
        (["t", 1, 2], ["s"], None),
        (["t", 1, 2], ["s", "a", "b"], None),
        (["t", "x", 1.5], ["s"], "sizes"),
        (["t", 1], ["s", 1], "names"),
        ("abc", ["s"], "sizes"),  # a str is a Sequence of str
    ],
)
def test_an_abstract_container_declared_has_its_items_checked(sizes, names, refused):
    """``Sequence[int]`` is refused for a tuple of other things, as ``tuple[int, ...]`` is."""
    data = _aux(HoldsSizes, ["w", "sizes", "names"], [False, True, True], [sizes, names])
    nodes = HoldsSizes.__pytreekit_spec__.nodes
    if refused is None:
        load_aux(nodes, data)
    else:
        with pytest.raises(StaticDataError, match=f"static field {refused} is declared"):
            load_aux(nodes, data)


class Speed(enum.Enum):
    FAST = "fast"
    EXACT = "exact"
    SLOW = "slow"


@pytreekit.pytree_class
class HoldsSpeed:
    w: jax.Array
    speed: typing.Literal[Speed.FAST, Speed.EXACT] = pytreekit.field(
        static=True, default=Speed.FAST
    )


@pytest.mark.parametrize(
    ("member", "refused"),
    [("FAST", False), ("EXACT", False), ("SLOW", True)],
)
def test_a_literal_of_enum_members_names_their_class_and_admits_only_them(member, refused):
    """``Literal[Speed.FAST, ...]`` declares ``Speed`` as an annotation ``Speed`` does: its members
    are written and loaded without ``add_safe_references``, and only the members listed."""
    nodes = HoldsSpeed.__pytreekit_spec__.nodes
    _, aux = nodes.flatten(HoldsSpeed(jnp.ones(2), Speed.EXACT))
    written = dump_aux(nodes.carrying(aux), "test")
    assert b'["e","' + __name__.encode() + b':Speed","EXACT"]' in written
    data = _aux(HoldsSpeed, ["w", "speed"], [False, True], [["e", f"{__name__}:Speed", member]])
    if refused:
        with pytest.raises(StaticDataError, match="static field speed is declared"):
            load_aux(nodes, data)
    else:
        loaded = nodes.unflatten(load_aux(nodes, data), [jnp.ones(2)])
        assert loaded.speed is Speed[member]


_ABSTRACT_CLASSES = [
    getattr(collections.abc, name)
    for name in collections.abc.__all__
    if name not in ("ByteString", "Callable")  # ByteString: gone in 3.14; Callable: a form
] + [numbers.Number, numbers.Complex, numbers.Real, numbers.Rational, numbers.Integral]


class _Pair(typing.NamedTuple):
    a: int
    b: int


class _Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize(
    "value",
    [
        1,
        True,
        1.5,
        2j,
        "s",
        b"b",
        None,
        (1,),
        [1],
        {1: 2},
        frozenset({1}),
        _Pair(1, 2),
        _Level.LOW,
        Speed.FAST,
        LoadedNaN(),
        jnp.tanh,
        len,
        int,
    ],
    ids=type_name,
)
def test_a_standard_abstract_class_admits_what_isinstance_does(value):
    """The tables that stand in for isinstance against the standard library's abstract classes
    (isinstance would run every user subclass's hook) give isinstance's answers, for every kind
    loading builds; but a bool is no number (attack6: static data keeps numbers of their kind)."""
    for abstract in _ABSTRACT_CLASSES:
        expected = isinstance(value, abstract)
        if type(value) is bool and abstract.__module__ == "numbers":
            expected = False
        assert admits_value(abstract, value) == expected, abstract


def test_a_user_subclass_hook_of_a_standard_abstract_class_never_runs_at_load():
    """A field declared ``Sequence[int]`` loads a frozenset: refused, and the hook of the user's
    own Sequence subclass (which isinstance would ask) is not run."""
    collections.abc.Sequence.register(type("Fresh", (), {}))  # no cached answers from before
    calls = []

    class Ring(collections.abc.Sequence):
        @classmethod
        def __subclasshook__(cls, other):
            calls.append(other)
            return NotImplemented

        def __getitem__(self, index):
            return index

        def __len__(self):
            return 0

    data = _aux(HoldsSizes, ["w", "sizes", "names"], [False, True, True], [["s", 1, 2], ["s"]])
    with pytest.raises(StaticDataError, match="static field sizes is declared"):
        load_aux(HoldsSizes.__pytreekit_spec__.nodes, data)
    assert calls == []
    assert isinstance(frozenset(), collections.abc.Sequence) is False and calls  # as a reference


@pytreekit.pytree_class
class Report:
    total: float = 0.0


@pytreekit.pytree_class
class HoldsSignature:
    w: jax.Array
    act: typing.Callable[[jax.Array], Report] = pytreekit.field(static=True, default=jnp.tanh)
    anything: object = pytreekit.field(static=True, default=None)


@pytest.mark.parametrize(
    ("field", "named"),
    [
        ("act", "jax:Array"),  # a parameter type of the declared Callable
        ("act", f"{__name__}:Report"),  # its result type
        ("anything", f"{__name__}:Report"),  # a pytree class, where object is declared
        ("anything", "builtins:object"),
    ],
)
def test_a_class_a_field_declares_only_in_a_signature_or_as_object_is_not_loaded(field, named):
    """The classes of a ``Callable``'s signature are no value the field holds, and ``object``
    admits no class: loading either as the callable would let the artifact choose what runs."""
    values = [["r", "jax.numpy:tanh"], None]
    values[["act", "anything"].index(field)] = ["k", named]
    data = _aux(HoldsSignature, ["w", "act", "anything"], [False, True, True], values)
    with pytest.raises(StaticDataError, match="not on the list of references"):
        load_aux(HoldsSignature.__pytreekit_spec__.nodes, data)


UserId = typing.NewType("UserId", int)
Bounded = typing.TypeVar("Bounded", bound=int)
Either = typing.TypeVar("Either", int, str)


@pytreekit.pytree_class
class HoldsWrapped:
    w: jax.Array
    final: typing.Final[int] = pytreekit.field(static=True, default=1)
    user: UserId = pytreekit.field(static=True, default=UserId(1))
    bounded: Bounded = pytreekit.field(static=True, default=1)  # type: ignore[valid-type]
    either: Either = pytreekit.field(static=True, default=1)  # type: ignore[valid-type]


@pytest.mark.parametrize(
    ("index", "value", "field"),
    [(0, "x", "final"), (1, ["t", 1, 2], "user"), (2, 1.5, "bounded"), (3, None, "either")],
)
def test_a_wrapping_form_declares_the_type_it_wraps(index, value, field):
    """``Final[int]``, a ``NewType`` of ``int``, a ``TypeVar`` bound to ``int`` or constrained
    to ``int`` and ``str`` admit what they declare, not any value."""
    values: list[object] = [1, 2, 3, "s"]
    nodes = HoldsWrapped.__pytreekit_spec__.nodes
    names = ["w", "final", "user", "bounded", "either"]
    assert load_aux(nodes, _aux(HoldsWrapped, names, [False, *[True] * 4], values)) is not None
    values[index] = value
    with pytest.raises(StaticDataError, match=f"static field {field} is declared"):
        load_aux(nodes, _aux(HoldsWrapped, names, [False, *[True] * 4], values))


@pytreekit.pytree_class
class HalfKnown:
    w: jax.Array
    helper: OnlyForTypeCheckers | None = pytreekit.field(static=True, default=None)  # type: ignore[name-defined]  # noqa: F821
    mode: typing.Literal["train", "eval"] = pytreekit.field(static=True, default="train")
    n: int = pytreekit.field(static=True, default=0)


@pytest.mark.parametrize(
    ("values", "field"),
    [([None, "rm -rf", 0], "mode"), ([None, "eval", "3"], "n")],
)
def test_one_annotation_that_cannot_be_evaluated_leaves_the_others_checked(values, field):
    """A name imported for type checkers only (never at run time) leaves its own field to the
    safe references; every other field is still checked against its declared type."""
    nodes = HalfKnown.__pytreekit_spec__.nodes
    names = ["w", "helper", "mode", "n"]
    assert load_aux(nodes, _aux(HalfKnown, names, [False, True, True, True], [None, "eval", 3]))
    with pytest.raises(StaticDataError, match=f"static field {field} is declared"):
        load_aux(nodes, _aux(HalfKnown, names, [False, True, True, True], values))
    assert "helper" not in declared_types(HalfKnown)


Sizes = (
    typing.TypeAliasType("Sizes", tuple[int, ...])  # type: ignore[attr-defined,unused-ignore]
    if sys.version_info >= (3, 12)
    else tuple[int, ...]
)


@pytreekit.pytree_class
class HoldsAlias:
    w: jax.Array
    sizes: Sizes = pytreekit.field(static=True, default=())  # type: ignore[valid-type]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type aliases (TypeAliasType) came in 3.12")
def test_a_type_alias_declares_its_value():
    hint = declared_types(HoldsAlias)["sizes"][0]
    assert hint is Sizes and admits_value(hint, (1, 2)) and not admits_value(hint, (1, "x"))


@pytreekit.pytree_class(frozen=True)
class Opt:
    lr: typing.Any = pytreekit.field(static=True)
    momentum: float = pytreekit.field(static=True)


@dataclasses.dataclass(frozen=True)
class Cfg:
    name: str
    extra: typing.Any = None
    ignored: typing.Any = dataclasses.field(default=None, compare=False)


@pytreekit.pytree_class
class HoldsNested:
    w: jax.Array
    opt: Opt = pytreekit.field(static=True, default=Opt(0.1, 0.9))
    cfg: Cfg = pytreekit.field(static=True, default=Cfg("adam"))


def _opt(names: list[str], state: dict[str, object]) -> list[object]:
    layout = ["t", ["t", *names], ["t", *[True] * len(names)]]
    return ["p", f"{__name__}:Opt", {markers.FIELDS: layout, **state}]


def _cfg(**state: object) -> list[object]:
    return ["dc", f"{__name__}:Cfg", {"extra": None, "ignored": None, **state}]


@pytest.mark.parametrize(
    ("opt", "cfg", "refused"),
    [
        (_opt(["lr", "momentum"], {"lr": 0.1, "momentum": 0.9}), _cfg(name="a"), None),
        (_opt(["lr", "momentum"], {"lr": 0.1}), _cfg(name="a"), "'momentum' without a value"),
        (_opt(["lr"], {"lr": 0.1}), _cfg(name="a"), "Opt has the fields"),
        (_opt(["momentum", "lr"], {"lr": 0.1, "momentum": 0.9}), _cfg(name="a"), "has the fields"),
        (_opt(["lr", "momentum"], {"lr": 0.1, "momentum": 0.9}), _cfg(), "'name'"),
        (
            _opt(["lr", "momentum"], {"lr": 0.1, "momentum": 0.9}),
            _cfg(name="a", extra=MISSING),
            "'extra'",
        ),
        (
            _opt(["lr", "momentum"], {"lr": 0.1, "momentum": 0.9}),
            _cfg(name="a", extra=["l", 1]),
            "not hashable",
        ),
        (
            _opt(["lr", "momentum"], {"lr": ["l", 1], "momentum": 0.9}),
            _cfg(name="a"),
            "not hashable",
        ),
        # a field its __hash__ leaves out may hold anything, as the class itself allows
        (
            _opt(["lr", "momentum"], {"lr": 0.1, "momentum": 0.9}),
            _cfg(name="a", ignored=["l", 1]),
            None,
        ),
    ],
)
def test_a_nested_instance_holds_every_field_its_class_has_and_hashes(opt, cfg, refused):
    """A frozen dataclass or annotated pytree class inside a static value is given every field
    its instances hold, in the declared order, and is refused where its hash would fail (a list
    in a hashed field): never a loaded value that first use finds without a field or unhashable."""
    nodes = HoldsNested.__pytreekit_spec__.nodes
    cfg = [*cfg[:2], {k: v for k, v in cfg[2].items() if v is not MISSING}]
    data = _aux(HoldsNested, ["w", "opt", "cfg"], [False, True, True], [opt, cfg])
    if refused is None:
        loaded = nodes.unflatten(load_aux(nodes, data), [jnp.ones(2)])
        assert hash(loaded.opt) == hash(Opt(0.1, 0.9)) and hash(loaded.cfg) == hash(Cfg("a"))
    else:
        with pytest.raises(StaticDataError, match=refused):
            load_aux(nodes, data)


@pytreekit.pytree_class(static=("act",), frozen=True)
class Unit:
    def __init__(self, act=jnp.tanh):
        self.act = act


@pytreekit.pytree_class
class HoldsUnits:
    w: jax.Array
    units: tuple[Unit, ...] = pytreekit.field(static=True, default=())


def _unit(names: list[str]) -> list[object]:
    layout = ["t", ["t", *names], ["t", *[name == "act" for name in names]]]
    state = {name: ["r", "jax.numpy:tanh"] if name == "act" else 1 for name in names}
    return ["p", f"{__name__}:Unit", {markers.FIELDS: layout, **state}]


@pytest.mark.parametrize(
    ("names", "refused"),
    [(["act", "class"], "class"), (["acts"], "acts"), (["act", "_Unit__x"], "_Unit__x")],
)
def test_a_nested_layout_the_field_rule_refuses_is_a_static_data_error(names, refused):
    """A pytree value inside a static field is asked the field rule as a layout at the top is
    (a keyword, a misspelt static name, a name-mangled private): a ``StaticDataError`` naming
    the field, before anything is learnt (a bare ``TypeError`` escaped once its layouts were
    recorded)."""
    nodes = HoldsUnits.__pytreekit_spec__.nodes
    before = dict(Unit.__pytreekit_spec__.table._by_names)
    data = _aux(HoldsUnits, ["w", "units"], [False, True], [["t", _unit(names)]])
    with pytest.raises(StaticDataError, match=f"names the field '{refused}' of Unit"):
        load_aux(nodes, data)
    assert Unit.__pytreekit_spec__.table._by_names == before


def test_the_primary_layout_of_a_nested_instance_is_read_beyond_the_cap():
    """The layout every instance has is nothing to learn: a read naming as many other layouts
    as one may still reads instances of the class's own; one more is refused."""
    nodes = HoldsUnits.__pytreekit_spec__.nodes
    Unit()  # the primary layout: (act,)
    others = [_unit(["act", f"x{index}"]) for index in range(MAX_LEARNED_LAYOUTS)]
    data = _aux(HoldsUnits, ["w", "units"], [False, True], [["t", *others, _unit(["act"])]])
    loaded = nodes.unflatten(load_aux(nodes, data), [jnp.ones(1)])
    assert loaded.units[-1] == Unit() and len(loaded.units) == MAX_LEARNED_LAYOUTS + 1
    more = [*others, _unit(["act", "one_more"])]
    data = _aux(HoldsUnits, ["w", "units"], [False, True], [["t", *more, _unit(["act"])]])
    with pytest.raises(StaticDataError, match=f"more than {MAX_LEARNED_LAYOUTS} layouts of Unit"):
        load_aux(nodes, data)


_HELD = [[1, 2], [1, "x"], (3,), ("x",), frozenset({1}), frozenset({"x"}), "ab", {1: "x"}, {"x": 1}]
# Every standard abstract class a loaded value can be and whose one argument is its items' type.
_ITEM_ABSTRACTS = [
    abstract
    for abstract in _ABSTRACT_CLASSES
    if abstract.__module__ == "collections.abc"
    and any(isinstance(value, abstract) for value in _HELD)
    and abstract not in (collections.abc.Hashable, collections.abc.Sized)  # no argument
    and not issubclass(abstract, collections.abc.Mapping)  # two: checked below
]


@pytest.mark.parametrize("abstract", _ITEM_ABSTRACTS, ids=lambda a: a.__name__)
@pytest.mark.parametrize("value", _HELD, ids=repr)
def test_a_standard_abstract_container_checks_its_items_as_isinstance_would(abstract, value):
    """``Container[Callable]`` held whatever loading built: every abstract container a loaded
    value can be has its items checked against the argument, as ``isinstance`` per item would."""
    expected = isinstance(value, abstract) and all(isinstance(item, int) for item in value)
    assert admits_value(abstract[int], value) == expected


@pytest.mark.parametrize("abstract", [collections.abc.Mapping, collections.abc.MutableMapping])
@pytest.mark.parametrize("value", [{"a": 1}, {"a": "b"}, {1: 1}, [("a", 1)]], ids=repr)
def test_a_standard_abstract_mapping_checks_keys_and_values(abstract, value):
    expected = isinstance(value, abstract) and all(
        isinstance(k, str) and isinstance(v, int) for k, v in value.items()
    )
    assert admits_value(abstract[str, int], value) == expected


def test_a_callable_in_an_abstract_container_is_held_to_what_a_callable_field_admits():
    class Schedule:  # a callable object, as a codec could decode
        def __call__(self, x: object) -> object:
            return x

    callable_items = collections.abc.Container[collections.abc.Callable[..., typing.Any]]
    assert not admits_value(callable_items, [Schedule()])
    assert admits_value(callable_items, [jnp.tanh])


class _Kind(typing.Generic[typing.TypeVar("_K")]):
    pass


class _SubKind(_Kind[int]):
    pass


@pytest.mark.parametrize(
    "target",
    [
        _Kind[int],
        _Kind,
        int,
        int | str,
        typing.Union[int, _Kind[str]],  # noqa: UP007 - the typing form, not only |
        typing.Optional[float],  # noqa: UP045
        typing.Any,
        object,
    ],
    ids=repr,
)
@pytest.mark.parametrize("value", [int, bool, str, float, _Kind, _SubKind, type(None)], ids=repr)
def test_a_type_field_admits_the_classes_issubclass_does(target, value):
    """``type[Box[int]]`` held any class, and ``type[Any]`` none: each admits the classes
    ``issubclass`` against the target's classes (a generic alias's origin) does."""

    def classes(hint: typing.Any) -> tuple[type, ...]:
        if hint is typing.Any:
            return (object,)
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            return tuple(c for arg in typing.get_args(hint) for c in classes(arg))
        return (typing.get_origin(hint) or hint,)

    assert admits_value(type[target], value) == issubclass(value, classes(target))
    assert not admits_value(type[target], value())  # an instance is no class
