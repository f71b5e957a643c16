"""Pickling a pytree class stays pickle (issue #27, item 6): a static value pickle cannot store
by itself (``jnp.tanh``, ``jax.nn.leaky_relu``: JAX's compiled functions are not the objects
their names hold in the modules they claim) is stored by reference wherever ``jax.export``
stores it, inside ``functools.partial``, NamedTuples and frozen dataclasses too. The reference is
``copy.deepcopy``, which copies the same models; each pickle is loaded in a fresh process."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import pickle

import artifact_fixtures as af
import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, TESTS, run_fresh

VALUES = {
    "partial": functools.partial(jax.nn.leaky_relu, negative_slope=0.2),
    "namedtuple": af.Config(jnp.tanh, 8),
    "frozen-dataclass": af.Settings(jnp.tanh, "s"),
    "slotted-frozen-dataclass": af.SlottedSettings(jax.nn.relu),
    "partial-in-a-namedtuple": af.Config(functools.partial(jax.nn.leaky_relu, negative_slope=0.1)),
    "namedtuple-in-a-tuple": (af.Config(jax.nn.gelu), 2),
    "dict-key": af.Bag([jnp.tanh], {jnp.tanh: 1, "b": (jax.nn.relu,)}),
    "frozenset": frozenset({jnp.tanh, jax.nn.relu}),
}


def _unpickled_in_a_fresh_process(data: bytes, tmp_path) -> list[object]:
    path = tmp_path / "pickled.bin"
    path.write_bytes(data)
    script = (
        "import json, pickle, sys\n"
        "from artifact_fixtures import describe\n"
        "holders = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "print(json.dumps([describe(holder.value) for holder in holders]))\n"
    )
    printed = run_fresh(
        script, path, pythonpath=[ROOT, TESTS], inherit_env=True, cwd=None, timeout=300
    )
    described: list[object] = json.loads(printed)
    return described


def test_static_values_pickle_by_reference_as_jax_export_stores_them(tmp_path):
    """Each value failed to pickle before ("Can't pickle <function leaky_relu>: it's not the same
    object"); now a fresh process gets what ``copy.deepcopy`` gives: the same functions."""
    holders = [af.Holder(value) for value in VALUES.values()]
    copied = copy.deepcopy(holders)
    expected = [af.describe(holder.value) for holder in copied]
    assert expected == [af.describe(value) for value in VALUES.values()]
    described = _unpickled_in_a_fresh_process(pickle.dumps(holders), tmp_path)
    assert described == json.loads(json.dumps(expected))
    # describe marks a function that is the very object of its module: each came back so
    assert "true" in json.dumps(described) and "false" not in json.dumps(described)


@pytest.mark.parametrize("name", list(VALUES))
def test_a_shallow_copy_holds_what_a_deep_copy_holds(name):
    """``copy.copy`` hands ``__setstate__`` what ``__getstate__`` gave, stand-ins included:
    they are replaced by what they stand for (a shallow copy held them before)."""
    holder = af.Holder(VALUES[name])
    shallow, deep = copy.copy(holder), copy.deepcopy(holder)
    assert af.describe(shallow.value) == af.describe(deep.value) == af.describe(holder.value)
    assert "StandIn" not in repr(shallow.value)


@pytest.mark.parametrize(
    "plain",
    [af.Config(af.relu, 3), functools.partial(af.relu, 1), af.Settings(af.Settings)],
    ids=["namedtuple", "partial", "frozen-dataclass"],
)
def test_what_pickle_stores_itself_is_left_to_pickle(plain):
    """Nothing is replaced where pickle needs no help (a plain function, a class): the pickle is
    what pickle writes for the value (no pytreekit name in it)."""
    state = af.Holder(plain).__getstate__()
    assert state["value"] is plain
    assert b"pytreekit" not in pickle.dumps(state["value"])


def test_a_callable_found_under_no_name_is_left_to_pickle_each_time():
    """jax.jit(relu) says it is artifact_fixtures.relu, which is another object: no name finds
    it, so pickle fails on it as it would without pytreekit (the search is not made again)."""
    jitted = jax.jit(af.relu)
    for _ in range(2):
        assert af.Holder(jitted).__getstate__()["value"] is jitted
        # Python's own error (its wording differs between versions: "Can't pickle ..." or
        # "Can't get local object ...").
        with pytest.raises((pickle.PicklingError, AttributeError), match=r"pickle|local object"):
            pickle.dumps(af.Holder(jitted))


def test_a_value_that_pickles_as_a_global_name_is_left_to_pickle():
    @dataclasses.dataclass(frozen=True)
    class Named:
        activation: object

        def __reduce__(self) -> str:
            return "NAMED"  # pickle stores it as the module's global NAMED

    named = Named(jnp.tanh)
    assert af.Holder(named).__getstate__()["value"] is named


def test_a_reduction_of_the_classes_own_is_kept_with_its_parts_by_reference():
    restored = pickle.loads(pickle.dumps(af.Holder(af.Reduced(jnp.tanh))))
    assert type(restored.value) is af.Reduced and restored.value.activation is jnp.tanh
    assert copy.copy(af.Holder(af.Reduced(jnp.tanh))).value.activation is jnp.tanh


def test_fields_that_are_not_static_pickle_and_copy_by_reference_too():
    w = {"activation": jnp.tanh, jax.nn.relu: [jax.nn.gelu], "set": frozenset({jnp.tanh})}
    for copied in (copy.copy(af.Holder(1, w)), pickle.loads(pickle.dumps(af.Holder(1, w)))):
        assert copied.w == w
        assert copied.w["activation"] is jnp.tanh and copied.w[jax.nn.relu][0] is jax.nn.gelu


def test_the_names_pickles_store_stay_where_they_are():
    """Pickles written now name ``import_by_name`` and ``new_object`` of
    ``pytreekit._references``: moving them would break loading those pickles."""
    data = pickle.dumps(af.Holder(af.Settings(jnp.tanh)))
    assert b"pytreekit._references" in data
    assert b"import_by_name" in data and b"new_object" in data
