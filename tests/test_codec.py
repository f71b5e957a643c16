"""Static data (pytreekit._artifacts.static_data): every kind of value round-trips; what it
cannot hold is refused when written, naming where it is; and reading malformed or hostile bytes
raises StaticDataError only, runs none of the user's code, and imports nothing."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import functools
import json
import math
import operator
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import codec_fixtures as fx
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytreekit
from pytreekit import Static, pytree_class, register_static_codec
from pytreekit._artifacts.static_data import (
    MAGIC,
    MAX_DEPTH,
    LoadedNaN,
    LoadedPartial,
    StaticDataError,
    UnencodableError,
    _codecs_by_name,
    _codecs_by_type,
    dumps,
    is_pickle,
    loads,
)
from pytreekit._classes.pickling import StandIn, restored
from pytreekit._markers import FIELDS as STATE_LAYOUT

TESTS = Path(__file__).resolve().parent
# References ROUND_TRIPS names beyond the default list and the fixtures' own (issue 33: loading
# accepts only the references the process allows).
pytreekit.add_safe_references([Static, len, collections.OrderedDict])


@pytest.fixture(autouse=True)
def no_calls():
    """Each test starts with no recorded call, and those that load check none was made."""
    fx.CALLS.clear()
    fx.DECODED.clear()


def same(a: Any, b: Any) -> None:
    """``b`` is ``a`` read back: same types all the way down, equal values, the same objects for
    references, enum members and native dtypes. Never calls a user's ``__eq__``. A NaN and a
    functools.partial come back as LoadedNaN and LoadedPartial (issue 33: equal to the caller's,
    so Exported.call accepts the model that holds them)."""
    loaded = {float: LoadedNaN, functools.partial: LoadedPartial}.get(type(a))
    assert type(a) is type(b) or (loaded is not None and type(b) is loaded), (a, b)
    if type(a) is float:
        assert (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        ), (a, b)
    elif type(a) is complex:
        same(a.real, b.real)
        same(a.imag, b.imag)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif type(a) is dict:
        assert len(a) == len(b)
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            same(ka, kb)
            same(va, vb)
    elif type(a) is frozenset:
        assert a == b
    elif type(a) is functools.partial:
        same(a.func, b.func)
        same(a.args, b.args)
        same(a.keywords, b.keywords)
    elif isinstance(a, np.dtype):
        assert a == b
        if a.isbuiltin:  # NumPy's and ml_dtypes' own dtypes (not '<U7' or '>f4') are singletons
            assert a is b
    elif isinstance(a, (type, enum.Enum)):
        assert a is b, (a, b)
    elif pytreekit.is_pytree_class(a) or dataclasses.is_dataclass(a):
        same(_fields(a), _fields(b))
    elif callable(a):
        assert a is b, (a, b)
    else:
        assert a == b, (a, b)


def _fields(obj: Any) -> dict[str, Any]:
    if pytreekit.is_pytree_class(obj):
        state = obj.__getstate__()
        return {k: restored(v) for k, v in state.items()}
    return {f.name: getattr(obj, f.name, "<unset>") for f in dataclasses.fields(obj)}


# -- every kind round-trips ---------------------------------------------------------------------

_NUMPY_DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
    ">f4",
    ">i8",
    "<U7",
    "|S3",
    "<M8[ns]",
    "<m8[s]",
    "|V4",  # no "|O": object dtypes are refused (attack6; test_artifacts_attack6_types)
]
_ML_DTYPES = [
    name
    for name in ml_dtypes.__all__
    if isinstance(getattr(ml_dtypes, name), type)
    and issubclass(getattr(ml_dtypes, name), np.generic)
]
assert {"bfloat16", "float8_e4m3fn", "int4"} <= set(_ML_DTYPES)

ROUND_TRIPS: list[tuple[str, Any]] = [
    ("none", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("negative-int", -7),
    ("big-int", 2**200),
    ("big-negative-int", -(2**70)),
    ("int-of-more-digits-than-str-converts", -(10**5000)),  # issue 33: refused before
    ("none-type", type(None)),  # issue 33: refused before
    ("float", 0.1),
    ("negative-zero", -0.0),
    ("zero-float", 0.0),
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("minus-inf", float("-inf")),
    ("subnormal", 5e-324),
    ("max-float", 1.7976931348623157e308),
    ("complex", complex(1.5, -2)),
    ("complex-odd", complex(-0.0, float("nan"))),
    ("complex-inf", complex(float("inf"), float("-inf"))),
    ("empty-str", ""),
    ("str", "text"),
    ("unicode", "ünïcødé ✓ \U0001d6fc"),
    ("lone-surrogate", "\ud800 lone"),
    ("nul", "\x00 nul"),
    ("empty-bytes", b""),
    ("bytes", bytes(range(256))),
    ("empty-tuple", ()),
    ("tuple", (1, ("a", 2.5), ())),
    ("empty-list", []),
    ("list", [1, "a", [2.5, None]]),
    ("empty-dict", {}),
    ("dict", {"a": 1, "b": {"c": [None]}}),
    ("dict-order", {"z": 1, "a": 2, "m": 3}),
    (
        "dict-keys",
        {1: "one", 2.5: "f", None: "n", (1, "x"): "t", b"k": 3, "s": 4, frozenset({1}): 5},
    ),
    (
        "dict-keys-by-reference",
        {fx.Color.RED: 1, fx.Level.LOW: 2, jnp.tanh: 3, int: 4, fx.relu: 5},
    ),
    ("dict-key-dtype", {np.dtype("float32"): "f4"}),
    ("empty-frozenset", frozenset()),
    ("frozenset", frozenset({1, "a", (2, 3), None, fx.Color.GREEN})),
    *[(f"dtype-{np.dtype(d).name}-{np.dtype(d).str}", np.dtype(d)) for d in _NUMPY_DTYPES],
    *[(f"dtype-{name}", np.dtype(getattr(ml_dtypes, name))) for name in _ML_DTYPES],
    ("jnp-dtype-bfloat16", jnp.dtype("bfloat16")),
    ("enum", fx.Color.RED),
    ("enum-alias", fx.Color.CRIMSON),
    ("int-enum", fx.Level.HIGH),
    ("flag", fx.Perm.R),
    ("namedtuple-typing", fx.Point(1.0)),
    ("namedtuple-collections", fx.Pair(1, fx.relu)),
    ("frozen-dataclass", fx.Frozen(3)),
    ("frozen-dataclass-jnp", fx.Frozen(2, jnp.tanh)),
    ("frozen-dataclass-slots", fx.Slotted("n", (1, 2))),
    ("pytree-annotated-frozen", fx.Layer()),
    ("pytree-annotated-tanh", fx.Layer(size=5, activation=jnp.tanh)),
    ("pytree-unannotated", fx.BLOCK),
    ("static-relu", Static(jax.nn.relu)),
    ("static-tanh", Static(jnp.tanh)),
    ("static-of-static", Static(Static(fx.relu))),
    ("partial", functools.partial(fx.relu)),
    ("partial-keywords", functools.partial(jax.nn.gelu, approximate=False)),
    ("partial-of-partial", functools.partial(functools.partial(operator.add, 1), 2)),
    ("partial-of-class", functools.partial(fx.Frozen, 1)),
    ("function", fx.relu),
    ("jnp-tanh", jnp.tanh),
    ("jax-nn-relu", jax.nn.relu),
    ("jax-nn-gelu", jax.nn.gelu),
    ("jnp-sum", jnp.sum),
    ("builtin", len),
    ("ufunc", np.add),
    ("operator", operator.add),
    ("method-by-qualname", fx.Recorder.__init__),
    ("staticmethod", fx.Tools.helper),
    ("frozen-dataclass-cached-property", fx.Cached(2, 3)),
    ("class", fx.Recorder),
    ("builtin-class", int),
    ("numpy-scalar-type", np.float32),
    ("jnp-scalar-type", jnp.float32),
    ("ml-dtypes-type", ml_dtypes.bfloat16),
    ("stdlib-class", collections.OrderedDict),
    ("codec", fx.Interval(0.0, 1.5)),
    (
        "nested",
        (1, [fx.Frozen(2), {"k": (jnp.tanh, fx.Color.GREEN)}], {3: fx.Pair(fx.Point(0.5), None)}),
    ),
    ("aux-like", (("n", "act", "w"), (True, True, False), (3, jax.nn.relu))),
]


@pytest.mark.parametrize("value", [v for _, v in ROUND_TRIPS], ids=[i for i, _ in ROUND_TRIPS])
def test_every_kind_round_trips(value):
    data = dumps(value)
    assert data.startswith(MAGIC)
    data.decode("ascii")  # all ASCII: a torch treespec can carry it as text
    modules = set(sys.modules)
    back = loads(data)
    assert fx.CALLS == []  # no __new__, __init__, __post_init__, __setstate__, __eq__, __hash__
    assert set(sys.modules) == modules
    same(value, back)
    assert dumps(back) == data


def test_every_kind_reads_back_in_a_fresh_process(tmp_path):
    """What one process wrote, another reads (having imported the modules the data names) into
    values that write the same bytes again, running none of the recorded methods."""
    encoded = [dumps(value) for _, value in ROUND_TRIPS]
    (tmp_path / "encoded.json").write_text(json.dumps([data.decode("ascii") for data in encoded]))
    script = textwrap.dedent(
        """
        import json, sys
        import collections, codec_fixtures, ml_dtypes, pytreekit
        from pytreekit._artifacts.static_data import dumps, loads

        pytreekit.add_safe_references([pytreekit.Static, len, collections.OrderedDict])

        encoded = json.loads(open(sys.argv[1]).read())
        same = [dumps(loads(text.encode("ascii"))).decode("ascii") == text for text in encoded]
        print(json.dumps({"same": same, "calls": codec_fixtures.CALLS}))
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
        "JAX_PLATFORMS": "cpu",
    }
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "encoded.json")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out)
    assert result["calls"] == []
    assert dict(zip([i for i, _ in ROUND_TRIPS], result["same"], strict=True)) == {
        i: True for i, _ in ROUND_TRIPS
    }


def test_cached_properties_are_not_stored_and_an_unset_field_is_refused():
    value = fx.Cached(2, 3)
    assert value.double == 4  # cached in the instance dict now
    back = loads(dumps(value))
    assert back.derived_value == 3 and "double" not in vars(back) and back.double == 4
    # attack4 #5: an init=False field without a default is what __post_init__ sets; an instance
    # without it (never set, or dropped from the data) would fail at its first use
    unset = fx.Cached(2)
    with pytest.raises(UnencodableError, match="its field 'derived_value' is not set"):
        dumps(unset)
    with pytest.raises(StaticDataError, match="Cached has the field 'derived_value', which"):
        loads(dumps(value).replace(b',"derived_value":3', b""))


def test_a_module_in_sys_modules_must_be_a_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "codec_not_a_module", object())
    with pytest.raises(StaticDataError, match=r"module 'codec_not_a_module' has no 'f'"):
        loads(_raw(["r", "codec_not_a_module:f"]))


def test_a_module_allowed_by_name_is_imported():
    assert "codec_unimported" not in sys.modules
    try:
        function = loads(
            _raw(["r", "codec_unimported:function"]), allow_import=["codec_unimported"]
        )
        assert function is sys.modules["codec_unimported"].function
    finally:
        sys.modules.pop("codec_unimported", None)


def test_a_codec_decoder_gets_what_its_encoder_returned():
    loads(dumps([fx.Interval(0.0, 1.5), fx.Interval(-1.0, 2.0)]))
    assert fx.DECODED == [(0.0, 1.5), (-1.0, 2.0)]


def test_references_are_stored_by_public_names():
    """A function stores under a public module that holds it (jax.nn.relu says it lives in
    jax._src.nn.functions; a later JAX need not keep that name)."""
    assert dumps(jax.nn.relu) == MAGIC + b'["r","jax.nn:relu"]'
    # jax.numpy, or jax.nn, which also holds it on some JAX versions: a public module either way
    tanh = dumps(jnp.tanh)
    assert tanh in (MAGIC + b'["r","jax.numpy:tanh"]', MAGIC + b'["r","jax.nn:tanh"]')
    assert loads(tanh) is jnp.tanh
    assert dumps(fx.relu) == MAGIC + b'["r","codec_fixtures:relu"]'


def test_a_callable_naming_no_module_is_stored_under_the_module_holding_it():
    """numpy < 1.25's ufuncs have no ``__module__``: found in the loaded modules, as pickle
    finds them."""
    assert dumps(fx.named_nowhere) == MAGIC + b'["r","codec_fixtures:named_nowhere"]'
    assert loads(dumps(fx.named_nowhere)) is fx.named_nowhere
    assert loads(dumps(np.add)) is np.add
    unplaced = fx.NoModule("held_by_no_module")
    with pytest.raises(UnencodableError, match="names no module"):
        dumps(unplaced)


def test_the_wire_format_is_tagged_json():
    """Pinned: what other readers (and later versions) read."""
    value = (1, -0.0, "s", None, [True], {"k": b"\x00"}, {2: 3.5}, frozenset(), complex(1, 2))
    assert dumps(value) == MAGIC + (
        b'["t",1,-0.0,"s",null,["l",true],{"k":["b","AA=="]},["d",2,3.5],["s"],["c",1.0,2.0]]'
    )
    assert dumps(float("nan")) == MAGIC + b'["f","nan"]'
    assert dumps(np.dtype("float32")) == MAGIC + b'["dt","<f4"]'
    assert dumps(jnp.bfloat16(1).dtype) == MAGIC + b'["dt","bfloat16"]'
    assert dumps(fx.Color.RED) == MAGIC + b'["e","codec_fixtures:Color","RED"]'
    assert dumps(fx.Point(1.0)) == MAGIC + b'["n","codec_fixtures:Point",1.0,0.0]'
    assert dumps(fx.Frozen(1)) == MAGIC + (
        b'["dc","codec_fixtures:Frozen",{"size":1,"activation":["r","codec_fixtures:relu"]}]'
    )
    assert dumps(Static(1)) == MAGIC + (
        b'["p","pytreekit:Static",{"value":1,"__pytreekit_fields__":'
        b'["t",["t","value"],["t",true]]}]'
    )
    assert dumps(functools.partial(jax.nn.gelu, 1.0, approximate=False)) == MAGIC + (
        b'["fp",["r","jax.nn:gelu"],["t",1.0],{"approximate":false}]'
    )
    assert dumps(int) == MAGIC + b'["k","builtins:int"]'
    assert dumps(fx.Interval(0.0, 1.0)) == MAGIC + b'["x","codec_fixtures:Interval",["t",0.0,1.0]]'


def test_state_layout_is_the_key_pickles_store():
    # Every instance pickled since 0.2.0 stores its layout under this key: it never changes.
    assert STATE_LAYOUT == "__pytreekit_fields__"


def test_loads_takes_bytes_like_data():
    data = dumps((1, "a"))
    assert loads(bytearray(data)) == loads(memoryview(data)) == (1, "a")
    with pytest.raises(TypeError, match=r"loads\(\) takes bytes, got str"):
        loads(data.decode("ascii"))  # type: ignore[arg-type]


def test_is_pickle_tells_what_pytreekit_wrote_before():
    import pickle

    assert is_pickle(pickle.dumps((1, ("a",), (1,)), protocol=4))
    assert not is_pickle(dumps((1, ("a",), (1,))))
    assert not is_pickle(b"")
    with pytest.raises(StaticDataError, match=r"format is pickle"):
        loads(pickle.dumps(1, protocol=4))


# -- what static data cannot hold is refused when written --------------------------------------


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def _inner_function() -> Any:
    def inner() -> None:
        pass

    return inner


class _Local:
    def method(self) -> None:
        pass


def _partial_with_attribute() -> Any:
    value = functools.partial(fx.relu)
    value.note = "x"  # type: ignore[attr-defined]
    return value


def _renamed() -> Any:
    def function() -> None:
        pass

    function.__qualname__ = "not_there"
    return function


class _Unstorable:
    pass


class _UnhashableCallable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self) -> None:
        pass


class _LoosePoint(fx.Point):
    """A NamedTuple subclass with an instance dict."""


def _loose_point() -> _LoosePoint:
    point = _LoosePoint(1.0)
    point.extra = 1  # type: ignore[attr-defined]
    return point


@dataclasses.dataclass(frozen=True)
class _FrozenWithDel:
    size: int = 1

    def __del__(self) -> None:
        pass


def _frozen_with_extra() -> fx.Frozen:
    value = fx.Frozen(1)
    object.__setattr__(value, "extra", 2)
    return value


class _BadOutput:
    pass


register_static_codec(_BadOutput, lambda b: [fx.LAMBDA], lambda data: _BadOutput())


class _Broken:
    pass


register_static_codec(_Broken, lambda b: 1 / 0, lambda data: _Broken())


@pytree_class
class _LocalPytree:
    size: int = 1


def _local_pytree_class() -> Any:
    @pytree_class
    class Hidden:
        size: int = 1

    return Hidden()


REFUSALS = [
    # id, value, path, type named, what the reason says
    ("lambda-in-field", (1, fx.Frozen(2, fx.LAMBDA)), "[1].activation", "function", "module level"),
    ("lambda-in-dict", {"act": lambda x: x}, "['act']", "function", "is a lambda"),
    ("inner-function", [_inner_function()], "[0]", "function", "inside a function"),
    ("renamed-function", _renamed(), "", "function", "not_there"),
    ("array", [jnp.ones(2)], "[0]", "ArrayImpl", "non-static"),
    ("numpy-scalar", np.float32(1), "", "numpy.float32", r"\.item\(\)"),
    ("set", {1, 2}, "", "set", "does not store"),
    ("bytearray", bytearray(b"x"), "", "bytearray", "does not store"),
    ("object", object(), "", "object", "does not store"),
    ("bound-method", _Local().method, "", "method", "bound method"),
    ("mutable-dataclass", fx.Mutable(1), "", "codec_fixtures.Mutable", "frozen=True"),
    ("own-getstate", fx.OwnState(), "", "codec_fixtures.OwnState", "own __getstate__"),
    ("del", fx.Finalized(), "", "codec_fixtures.Finalized", "__del__"),
    ("flag-combination", fx.Perm.R | fx.Perm.W, "", "codec_fixtures.Perm", "Flag"),
    ("unsafe-key", {"a": {fx.Frozen(1): 1}}, "['a']<key 0>", "codec_fixtures.Frozen", "__hash__"),
    ("unsafe-element", frozenset({fx.Loud.A}), "", "codec_fixtures.Loud", "__hash__"),
    ("cycle", _cycle(), "[1]" * MAX_DEPTH, "list", "contains itself"),
    ("too-deep", _nested(MAX_DEPTH + 1), "[0]" * MAX_DEPTH, "list", f"deeper than {MAX_DEPTH}"),
    ("partial-attribute", _partial_with_attribute(), "", "functools.partial", "attributes"),
    ("partial-func", functools.partial(fx.LAMBDA, 1), ".func", "function", "lambda"),
    ("partial-arg", functools.partial(fx.relu, {1, 2}), ".args[0]", "set", "does not store"),
    ("structured-dtype", np.dtype([("a", "<f4")]), "", "numpy.dtype", "dtype"),
    ("extended-dtype", jax.random.key(0).dtype, "", "KeyTy", "does not store"),
    ("codec-raises", [_Broken()], "[0]", "_Broken", "ZeroDivisionError"),
    ("local-pytree-class", _local_pytree_class(), "", "Hidden", "inside a function"),
    ("unstorable-in-pytree", Static(_Unstorable()), ".value", "_Unstorable", "does not store"),
    ("unhashable-callable", [_UnhashableCallable()], "[0]", "_UnhashableCallable", "no name"),
    ("stand-in", StandIn(fx.LAMBDA, ()), "", "function", "lambda"),
    (
        "frozenset-element",
        frozenset({fx.LAMBDA}),
        "<an element>",
        "function",
        "lambda",
    ),
    ("dict-value-by-key", {1: fx.LAMBDA}, "[1]", "function", "lambda"),
    ("codec-output", _BadOutput(), "<_BadOutput codec>[0]", "function", "lambda"),
    ("namedtuple-dict", _loose_point(), "", "_LoosePoint", "more than its fields"),
    ("namedtuple-item", fx.Point(fx.LAMBDA), ".x", "function", "lambda"),
    ("frozen-dataclass-del", _FrozenWithDel(), "", "_FrozenWithDel", "__del__"),
    ("frozen-dataclass-extra", _frozen_with_extra(), "", "Frozen", "'extra', which is not a field"),
]


@pytest.mark.parametrize(
    ("value", "path", "kind", "reason"),
    [row[1:] for row in REFUSALS],
    ids=[row[0] for row in REFUSALS],
)
def test_what_static_data_cannot_hold_is_refused_naming_where_and_what(value, path, kind, reason):
    with pytest.raises(UnencodableError) as info:
        dumps(value)
    error = info.value
    assert isinstance(error, TypeError)
    assert error.path == path
    assert kind in error.value_type
    message = str(error)
    assert f"cannot store {error.value_type}" in message
    assert (f" at {path}:" in message) if path else " at " not in message.split(":")[0]
    assert re.search(reason, error.reason), error.reason
    assert "pytreekit.pickle_static_fields (unsafe" in error.advice


def test_refusal_advice_offers_a_codec_for_the_users_own_types_only():
    with pytest.raises(UnencodableError, match=r"register_static_codec\(_Unstorable, encode"):
        dumps(_Unstorable())
    for value in (fx.LAMBDA, jnp.ones(2), np.float32(1)):  # a codec is not the answer here
        with pytest.raises(UnencodableError) as info:
            dumps(value)
        assert "register_static_codec" not in str(info.value)


# -- registering codecs -------------------------------------------------------------------------


def test_registering_a_class_twice_is_refused_and_keeps_the_first_codec():
    class Twice:
        pass

    def first(data: Any) -> Twice:
        return Twice()

    register_static_codec(Twice, lambda t: 1, first)
    with pytest.raises(ValueError, match=r"Twice has a codec already"):
        register_static_codec(Twice, lambda t: 2, lambda data: Twice())
    assert dumps(Twice()).endswith(b",1]")


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((Static(1), str, str), TypeError, r"register_static_codec\(cls=\.\.\.\) takes the class"),
        ((int, str, int), TypeError, r"stores int values itself"),
        ((np.dtype, str, str), TypeError, r"stores dtype values itself"),
        ((fx.Recorder, "x", str), TypeError, r"register_static_codec\(encode=\.\.\.\) for Record"),
        ((fx.Recorder, str, None), TypeError, r"register_static_codec\(decode=\.\.\.\) for Record"),
    ],
    ids=["not-a-class", "built-in-kind", "dtype", "encode", "decode"],
)
def test_bad_registrations_are_refused_naming_the_argument(args, error, match):
    before = dict(_codecs_by_type), dict(_codecs_by_name)
    with pytest.raises(error, match=match):
        register_static_codec(*args)
    assert (dict(_codecs_by_type), dict(_codecs_by_name)) == before


def test_registration_from_many_threads_at_once_keeps_one_codec_per_class():
    classes = [type(f"Threaded{i}", (), {"__module__": __name__}) for i in range(8)]
    results: list[str] = []
    barrier = threading.Barrier(16)

    def register(cls: type) -> None:
        barrier.wait()
        try:
            register_static_codec(cls, lambda v: 0, lambda data: cls())
            results.append("ok")
        except ValueError:
            results.append("refused")

    threads = [threading.Thread(target=register, args=(cls,)) for cls in classes * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["ok"] * 8 + ["refused"] * 8
    for cls in classes:
        assert type(loads(dumps(cls()))) is cls


def test_a_class_defined_again_under_its_name_takes_the_codec_name_over():
    old = type("Redefined", (), {"__module__": __name__})
    new = type("Redefined", (), {"__module__": __name__})
    register_static_codec(old, lambda v: "old", lambda data: old())
    register_static_codec(new, lambda v: "new", lambda data: new())
    assert type(loads(dumps(new()))) is new
    with pytest.raises(UnencodableError):
        dumps(old())


def test_a_decoder_that_fails_or_returns_another_type_is_a_static_data_error():
    class Fails:
        pass

    class Wrong:
        pass

    register_static_codec(Fails, lambda v: 1, lambda data: {}["missing"])
    register_static_codec(Wrong, lambda v: 1, lambda data: "not a Wrong")
    with pytest.raises(StaticDataError, match=r"decoder registered for .*Fails raised KeyError"):
        loads(dumps(Fails()))
    with pytest.raises(StaticDataError, match=r"decoder registered for .*Wrong returned a str"):
        loads(dumps(Wrong()))


# -- reading hostile or malformed data ------------------------------------------------------------


def _raw(tree: Any) -> bytes:
    return MAGIC + json.dumps(tree).encode("ascii")


FROZEN = "codec_fixtures:Frozen"


def _tagged_nested(depth: int) -> Any:
    tree: Any = 0
    for _ in range(depth):
        tree = ["l", tree]
    return tree


BLOCK = "codec_fixtures:Block"
BLOCK_LAYOUT = ["t", ["t", "size", "name"], ["t", True, True]]

HOSTILE: list[tuple[str, bytes, str]] = [
    ("empty", b"", "format is unknown"),
    ("other-format", b"\x00\x01junk", "format is unknown"),
    ("magic-only", MAGIC, "Expecting value"),
    ("extra-data", dumps(1) + b" 2", "extra data after the value"),
    ("truncated", dumps((1, "abc"))[:-3], "Unterminated string"),
    ("not-ascii", MAGIC + '"é"'.encode(), "'ascii' codec can't decode"),
    ("untagged-array", _raw([1, 2]), "must start with a tag"),
    ("empty-array", _raw([]), "must start with a tag"),
    ("unknown-tag", _raw(["zz", 1]), "unknown tag 'zz'"),
    ("tag-arity", _raw(["b", "AA==", "x"]), "'b' takes 1 parts, got 2"),
    ("bad-base64", _raw(["b", "not base64!"]), "Error"),
    ("bytes-not-text", _raw(["b", 1]), "base64 text"),
    ("bad-float", _raw(["f", "1.5"]), "'nan', 'inf' or '-inf'"),
    ("complex-of-ints", _raw(["c", 1, 2]), "two floats"),
    ("odd-dict", _raw(["d", 1]), "in pairs"),
    ("bad-dtype", _raw(["dt", "<q99"]), "not a dtype"),
    ("unparsed-dtype", _raw(["dt", "<i3"]), "TypeError"),
    ("dtype-not-text", _raw(["dt", ["t"]]), "not a dtype"),
    ("reference-not-text", _raw(["r", 1]), "'module:qualname' string"),
    ("reference-no-colon", _raw(["r", "os.system"]), "is not a 'module:qualname'"),
    ("reference-odd-name", _raw(["r", "os:system()"]), "is not a 'module:qualname'"),
    ("module-itself", _raw(["r", "os:path"]), "'os:path', which is not on the list"),
    ("not-callable", _raw(["r", "os:sep"]), "'os:sep', which is not on the list"),
    ("function-as-class", _raw(["k", "codec_fixtures:relu"]), "is not a class"),
    ("class-as-function", _raw(["r", "codec_fixtures:Recorder"]), "is not a function"),
    ("module-getattr", _raw(["r", "codec_fixtures:missing"]), "has no 'missing'"),
    ("through-a-function", _raw(["r", "codec_fixtures:relu.__code__"]), "has no"),
    ("not-an-enum", _raw(["e", "codec_fixtures:Recorder", "A"]), "not an enum"),
    ("no-member", _raw(["e", "codec_fixtures:Color", "BLUE"]), "has no member 'BLUE'"),
    ("member-not-text", _raw(["e", "codec_fixtures:Color", 1]), "has no member 1"),
    ("member-map-internals", _raw(["e", "codec_fixtures:Color", "__class__"]), "has no member"),
    ("not-a-namedtuple", _raw(["n", "codec_fixtures:Recorder", 1]), "not a NamedTuple"),
    ("namedtuple-no-class", _raw(["n"]), "'n' takes a class and the items"),
    ("dtype-not-canonical", _raw(["dt", "<b1"]), "not a dtype this version writes"),
    ("dataclass-no-place", _raw(["dc", "codec_fixtures:Impostor", {"size": 1}]), "no place"),
    ("dataclass-bad-fields", _raw(["dc", "codec_fixtures:BadFields", {}]), "is not a dict"),
    ("namedtuple-length", _raw(["n", "codec_fixtures:Point", 1.0]), "has 2 fields, the data 1"),
    ("dataclass-not-frozen", _raw(["dc", "codec_fixtures:Mutable", {"size": 1}]), "not a frozen"),
    ("dataclass-del", _raw(["dc", "codec_fixtures:Recorder", {}]), "Recorder defines __del__"),
    ("not-a-dataclass", _raw(["dc", "codec_fixtures:Interval", {}]), "not a frozen dataclass"),
    ("tuple-as-dataclass", _raw(["dc", "codec_fixtures:Point", {}]), "built on tuple"),
    ("dataclass-no-field", _raw(["dc", FROZEN, {"other": 1}]), "Frozen has no field 'other'"),
    ("dataclass-dunder", _raw(["dc", FROZEN, {"__class__": ["k", FROZEN]}]), "not a field name"),
    ("dataclass-property", _raw(["dc", FROZEN, {"guarded": 1}]), "has no field 'guarded'"),
    ("dataclass-fields-not-object", _raw(["dc", FROZEN, ["t"]]), "as an object"),
    ("not-a-pytree", _raw(["p", FROZEN, {}]), "not a pytree class"),
    ("own-setstate", _raw(["p", "codec_fixtures:OwnState", {}]), "not a pytree class"),
    ("pytree-del", _raw(["p", "codec_fixtures:Finalized", {}]), "defines __del__"),
    ("pytree-no-layout", _raw(["p", BLOCK, {"size": 1}]), "must be \\(names, static flags\\)"),
    (
        "pytree-class-key",
        _raw(["p", BLOCK, {"__class__": ["k", FROZEN], STATE_LAYOUT: BLOCK_LAYOUT}]),
        "which is not a field its layout names",
    ),
    (
        "pytree-key-outside-layout",
        _raw(["p", BLOCK, {"other": 1, STATE_LAYOUT: BLOCK_LAYOUT}]),
        "which is not a field its layout names",
    ),
    (
        "pytree-layout-dunder",
        _raw(["p", BLOCK, {STATE_LAYOUT: ["t", ["t", "__class__"], ["t", True]]}]),
        "'__class__' is not a field name",
    ),
    (
        "pytree-property",
        _raw(["p", BLOCK, {"mode": "x", STATE_LAYOUT: ["t", ["t", "mode"], ["t", True]]}]),
        "Block.mode is a property",
    ),
    (
        "pytree-layout-repeats",
        _raw(["p", BLOCK, {STATE_LAYOUT: ["t", ["t", "a", "a"], ["t", True, True]]}]),
        "names a field twice",
    ),
    (
        "pytree-layout-names-objects",
        _raw(
            [
                "p",
                BLOCK,
                {
                    STATE_LAYOUT: [
                        "t",
                        ["t", ["dc", FROZEN, {"size": 1, "activation": None}]],
                        ["t", True],
                    ]
                },
            ]
        ),
        "a codec_fixtures.Frozen is not a field name",
    ),
    (
        "annotated-pytree-no-field",
        _raw(["p", "codec_fixtures:Layer", {STATE_LAYOUT: ["t", ["t", "x"], ["t", True]]}]),
        "Layer has no field 'x'",
    ),
    ("partial-not-callable", _raw(["fp", 1, ["t"], {}]), "takes a callable"),
    ("partial-keyword-not-text", _raw(["fp", ["r", "jax.nn:gelu"], ["t"], ["d", 1, 2]]), "str"),
    ("no-codec", _raw(["x", "codec_fixtures:Recorder", 1]), "no codec is registered"),
    (
        "unsafe-key",
        _raw(["d", ["dc", FROZEN, {"size": 1, "activation": None}], 1]),
        "Frozen cannot be a dict key",
    ),
    ("dataclass-field-missing", _raw(["dc", FROZEN, {"size": 1}]), "the data does not give"),
    ("unsafe-element", _raw(["s", ["n", "codec_fixtures:Pair", 1, 2]]), "Pair cannot be"),
    ("unsafe-enum-key", _raw(["d", ["e", "codec_fixtures:Loud", "A"], 1]), "Loud cannot be"),
    ("too-deep", _raw(_tagged_nested(MAX_DEPTH + 1)), f"deeper than {MAX_DEPTH}"),
    ("too-deep-for-json", MAGIC + b"[" * 100_000, "nests deeper than JSON can be read"),
    ("too-many-digits", MAGIC + b"9" * 5000, "digits"),
    ("error-path", _raw(["t", 1, ["l", ["zz"]]]), r"at \[1\]\[0\]: unknown tag"),
]


@pytest.mark.parametrize(
    ("data", "match"), [row[1:] for row in HOSTILE], ids=[row[0] for row in HOSTILE]
)
def test_malformed_or_hostile_data_is_a_static_data_error_and_runs_nothing(data, match):
    modules = set(sys.modules)
    with pytest.raises(StaticDataError, match=match):
        loads(data)
    assert fx.CALLS == []
    assert set(sys.modules) == modules


def test_every_truncation_of_valid_data_is_refused():
    data = dumps(dict(ROUND_TRIPS[-4:]))
    for end in range(len(data)):
        with pytest.raises(StaticDataError):
            loads(data[:end])
    assert fx.CALLS == []


def test_refused_references_name_the_module_and_never_import_it(tmp_path):
    """In a fresh process: an artifact naming a module that is not imported is refused, the module
    is not imported (its import would write a marker file), and is found once allowed by name."""
    marker = tmp_path / "imported"
    script = textwrap.dedent(
        """
        import sys
        from pytreekit._artifacts.static_data import StaticDataError, loads

        data = b'PTK1["r","codec_unimported:function"]'
        try:
            loads(data)
        except StaticDataError as error:
            print("refused:", error)
        print("imported:", "codec_unimported" in sys.modules)
        function = loads(data, allow_import=["codec_unimported"])
        print("allowed:", function is sys.modules["codec_unimported"].function)
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
        "PYTREEKIT_CODEC_MARKER": str(marker),
        "JAX_PLATFORMS": "cpu",
    }
    lines = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "module 'codec_unimported', which is not imported" in lines[0]
    assert lines[1:] == ["imported: False", "allowed: True"]
    assert marker.read_text() == "imported"  # the marker works: it was written once allowed


# -- fuzzing: random bytes, mutated encodings, hostile trees -----------------------------------

# Valid data for each kind that is rebuilt, one step (a name) away from what must be refused.
_SEEDS = [
    dumps(frozenset({fx.Point(1.0, 2.0), (fx.Color.RED,)})),
    dumps({fx.Point(0.5): fx.Frozen(1), fx.Level.LOW: fx.Layer()}),
    dumps([fx.Slotted("n"), fx.Pair(1, 2), fx.BLOCK, Static(fx.relu), fx.Interval(0.0, 1.0)]),
    dumps(functools.partial(fx.relu, 1)),
    _raw(
        ["p", "codec_fixtures:Layer", {"size": 1, STATE_LAYOUT: ["t", ["t", "size"], ["t", True]]}]
    ),
    _raw(["dc", FROZEN, {"size": 1, "activation": ["r", "codec_fixtures:relu"]}]),
]
_CORPUS = [dumps(value) for _, value in ROUND_TRIPS] + _SEEDS
_NAMES = [
    "codec_fixtures:Recorder",
    "codec_fixtures:Frozen",
    "codec_fixtures:Slotted",
    "codec_fixtures:Mutable",
    "codec_fixtures:Pair",
    "codec_fixtures:Point",
    "codec_fixtures:Color",
    "codec_fixtures:Loud",
    "codec_fixtures:Perm",
    "codec_fixtures:Layer",
    "codec_fixtures:Block",
    "codec_fixtures:OwnState",
    "codec_fixtures:Finalized",
    "codec_fixtures:Interval",
    "codec_fixtures:relu",
    "codec_fixtures:missing",
    "codec_fixtures:Recorder.__init__",
    "codec_fixtures:Recorder.__dict__",
    "codec_fixtures:CALLS",
    "codec_unimported:function",
    "pytreekit._wrappers:Static",
    "os:system",
    "os:path",
    "builtins:eval",
    "builtins:object",
    "sys:modules",
    "jax.numpy:tanh",
]
_KEYS = ["size", "activation", "name", "mode", "guarded", "value", "x", "__class__", STATE_LAYOUT]
_TAGS = ["t", "l", "d", "s", "b", "f", "c", "r", "k", "dt", "e", "n", "dc", "p", "fp", "x"]
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(_NAMES + _KEYS + ["RED", "A", "nan", "<f4", "bfloat16", "AA==", "x"]),
    st.text(max_size=5),
)
_names = st.sampled_from(_NAMES)


def _shaped(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nodes of the shapes the reader expects (so mutations get past the arity checks), with
    names of hostile or recording classes, and random ones."""
    fields = st.dictionaries(st.sampled_from(_KEYS), children, max_size=4)
    layout = st.lists(st.sampled_from(_KEYS), max_size=3).flatmap(
        lambda names: st.builds(
            lambda flags: ["t", ["t", *names], ["t", *flags]],
            st.lists(st.booleans(), min_size=len(names), max_size=len(names)),
        )
    )
    state = st.builds(lambda f, lay: {**f, STATE_LAYOUT: lay}, fields, layout)
    return st.one_of(
        st.builds(lambda t, items: [t, *items], st.sampled_from(_TAGS), st.lists(children)),
        st.builds(lambda t, n: [t, n], st.sampled_from(["r", "k"]), _names),
        st.builds(
            lambda n, m: ["e", n, m], _names, st.sampled_from(["RED", "A", "R", "__class__"])
        ),
        st.builds(lambda n, items: ["n", n, *items], _names, st.lists(children, max_size=3)),
        st.builds(lambda t, n, f: [t, n, f], st.sampled_from(["dc", "p"]), _names, fields | state),
        st.builds(lambda n, c: ["x", n, c], _names, children),
        st.builds(lambda f, a, k: ["fp", f, ["t", *a], k], children, st.lists(children), fields),
        st.builds(lambda t, items: [t, *items], st.sampled_from(["s", "d"]), st.lists(children)),
        fields,
    )


_trees = st.recursive(_leaves, _shaped, max_leaves=20)


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(_CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "splice"]))
        if action == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            other = draw(st.sampled_from(_CORPUS))
            start = draw(st.integers(0, len(other)))
            data[at:] = other[start:]
    return bytes(data)


def _paths(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if type(tree) is list:
        for index, item in enumerate(tree):
            found += _paths(item, (*path, index))
    elif type(tree) is dict:
        for key, item in tree.items():
            found += _paths(item, (*path, key))
    return found


@st.composite
def _mutated_trees(draw: st.DrawFn) -> Any:
    """A valid encoding, decoded as JSON, with nodes replaced: names by other names (a Point
    becomes a Pair, whose __hash__ records), subtrees by hostile ones, or dropped."""
    tree = [json.loads(draw(st.sampled_from(_CORPUS))[len(MAGIC) :])]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(tree)[1:]))
        parent = tree
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["name", "subtree", "drop"]))
        if action == "name":
            parent[path[-1]] = draw(st.sampled_from(_NAMES + _KEYS))
        elif action == "subtree":
            parent[path[-1]] = draw(_trees)
        elif len(path) > 1:
            del parent[path[-1]]
    return tree[0]


def _strings(tree: Any) -> set[str]:
    if type(tree) is str:
        return {tree}
    if type(tree) is list:
        return set().union(*map(_strings, tree))
    if type(tree) is dict:
        return set(tree).union(*map(_strings, tree.values()))
    return set()


def _renamed_everywhere(tree: Any, old: str, new: str) -> Any:
    if type(tree) is str:
        return new if tree == old else tree
    if type(tree) is list:
        return [_renamed_everywhere(item, old, new) for item in tree]
    if type(tree) is dict:
        return {
            (new if key == old else key): _renamed_everywhere(item, old, new)
            for key, item in tree.items()
        }
    return tree


def test_every_renaming_of_valid_data_runs_nothing():
    """Systematically, what random mutation rarely finds: each string of each seed (a class,
    function or field name, a tag) renamed everywhere to each hostile name (a Point becomes a
    Pair whose __hash__ records, a field becomes a property, a class one with __del__ or its own
    __setstate__)."""
    count = 0
    for seed in _SEEDS:
        tree = json.loads(seed[len(MAGIC) :])
        for old in sorted(_strings(tree)):
            for new in _NAMES if ":" in old else [*_KEYS, *_TAGS]:
                _only_errors_and_no_side_effects(_raw(_renamed_everywhere(tree, old, new)))
                count += 1
    assert count > 1000


_FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def _only_errors_and_no_side_effects(data: bytes) -> None:
    modules = set(sys.modules)
    with contextlib.suppress(StaticDataError):
        loads(data)
    assert fx.CALLS == []
    assert set(sys.modules) == modules


@_FUZZ
@given(st.binary(max_size=64), st.booleans())
def test_fuzz_random_bytes(data, with_magic):
    _only_errors_and_no_side_effects(MAGIC + data if with_magic else data)


@_FUZZ
@given(_mutated())
def test_fuzz_mutated_encodings(data):
    _only_errors_and_no_side_effects(data)


@_FUZZ
@given(_trees)
def test_fuzz_hostile_trees(tree):
    _only_errors_and_no_side_effects(_raw(tree))


@_FUZZ
@given(_mutated_trees())
def test_fuzz_mutated_trees(tree):
    _only_errors_and_no_side_effects(_raw(tree))


# -- the benchmark helper -----------------------------------------------------------------------


def test_the_codec_benchmark_runs():
    from benchmarks import codec

    results = codec.measure(layers=4, number=2)
    assert set(results) == {"dump", "load"}
    for row in results.values():
        assert row["codec_us"] > 0 and row["pickle_us"] > 0
    cases = codec.artifact_cases(layers=2)
    assert {"jax.export serialize", "jax.export deserialize"} <= set(cases)
    for row in cases.values():
        assert set(row) == {"pickle", "data"}
        for case in row.values():
            case()
