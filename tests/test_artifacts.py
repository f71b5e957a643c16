"""Artifacts are data (issue #29): what ``jax.export`` and torch treespecs store of a pytree
class's static fields is static data (``pytreekit._artifacts.static_data``), read without running
code.

Fresh processes load what this one wrote (every kind of static value, tampered artifacts), as a
user loading someone else's artifact would; the fuzz tests throw mutated whole artifacts at
``jax.export.deserialize`` and ``treespec_loads`` here. Artifacts of earlier versions (pickled,
``tests/written_before.py``) and of classes opted in to pickle are refused unless loaded inside
``allow_pickled_artifacts()``. A registration made by hand with
``jax.export.register_pytree_node_serialization`` wins in either order (issue #27, item 7).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pickle
import sys
import textwrap
import threading
import types

import artifact_fixtures as af
import codec_fixtures as fx
import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, TESTS, require, run_fresh
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jax import export
from written_before import ARTIFACTS, TREESPECS, make_dense

import pytreekit
import pytreekit._artifacts.export
from pytreekit import field, pytree_class
from pytreekit._artifacts.export import dump_aux, load_aux
from pytreekit._artifacts.static_data import MAGIC, MAX_DEPTH, StaticDataError, dumps


def _fresh(script: str, *args: object, marker: object = "") -> list[str]:
    """The lines ``script`` prints in a new interpreter that imports nothing of this process
    (importing ``codec_unimported`` there writes ``marker``)."""
    env = {"PYTREEKIT_CODEC_MARKER": str(marker)}
    return run_fresh(
        script, *args, pythonpath=[ROOT, TESTS], env=env, inherit_env=True, cwd=None, timeout=300
    ).splitlines()


def _carrying(instance: object) -> tuple[object, ...]:
    """``(layout, *static_values)`` of ``instance``'s node of a treedef: what ``dump_aux`` takes."""
    nodes = type(instance).__pytreekit_spec__.nodes  # type: ignore[attr-defined]
    return nodes.carrying(jax.tree_util.tree_structure(instance).node_data()[1])


def _aux_bytes(instance: object) -> bytes:
    """What pytreekit writes for ``instance``'s node of a treedef."""
    return dump_aux(_carrying(instance), "test")


# -- every kind of static value, through both exports, read in a fresh process ------------------


def test_every_static_value_kind_round_trips_through_jax_export_and_torch_export(tmp_path):
    torch = require("torch")

    class Net(torch.nn.Module):
        def forward(self, holders: list[af.Holder]) -> torch.Tensor:
            return sum(holder.w for holder in holders)  # type: ignore[return-value]

    exported = export.export(jax.jit(lambda holders: holders))(af.holders())
    (tmp_path / "jax.bin").write_bytes(exported.serialize())
    program = torch.export.export(Net(), (af.holders(torch.ones(2)),))
    torch.export.save(program, tmp_path / "torch.pt2")
    lines = _fresh(
        """
        import json, logging, sys
        import jax, torch
        import torch.utils._pytree as torch_pytree
        from artifact_fixtures import describe, holders

        folder = sys.argv[1]
        restored = jax.export.deserialize(open(f"{folder}/jax.bin", "rb").read())
        # Not restored.call: it compares treedefs, and NaN, a partial and Bag (hashed by
        # identity) are equal to nothing read back, pickled or not.
        values = jax.tree.unflatten(restored.out_tree, jax.tree.leaves(holders()))
        print(json.dumps([describe(holder.value) for holder in values]))

        # torch.load of the example inputs falls back to weights_only=False, logging it
        logging.disable(logging.WARNING)
        loaded = torch.export.load(f"{folder}/torch.pt2")
        spec = loaded.call_spec.in_spec
        (values,), _ = torch_pytree.tree_unflatten([torch.ones(2)] * spec.num_leaves, spec)
        print(json.dumps([describe(holder.value) for holder in values]))
        """,
        tmp_path,
    )
    expected = json.loads(json.dumps([af.describe(value) for value in af.KINDS.values()]))
    assert json.loads(lines[0]) == expected
    assert json.loads(lines[1]) == expected
    # Functions and classes came back as the very objects of their modules (describe says so).
    assert ["by name", "artifact_fixtures.relu", True] in expected


# -- tampered artifacts: a fresh process that loads them runs nothing ----------------------------


class _System:
    """Pickles as a call of ``os.system``: what an attacker puts in an artifact."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (self.command,))


def _payloads(marker: object, length: int) -> dict[str, bytes]:
    """Each attack, as ``length`` bytes (what it replaces in the artifact)."""
    command = f"echo pwned > {marker}"
    attacks = {
        "pickle": pickle.dumps(_System(command), protocol=4),
        "pickle-protocol-0": pickle.dumps(_System(command), protocol=0),
        # Static data naming a function of a module the loading process never imported.
        "unimported-module": MAGIC
        + b'["t",3,["t","weight","note"],["t",false,true],["t",["r","codec_unimported:function"]]]',
        # Static data with a dunder for a field name.
        "dunder-field": MAGIC + b'["t",3,["t","__class__","note"],["t",false,true],["t","x"]]',
    }
    padded = {}
    for name, payload in attacks.items():
        assert len(payload) <= length, name
        gap = length - len(payload)
        if payload.startswith(MAGIC):  # JSON allows white space inside an array
            padded[name] = MAGIC + b"[" + b" " * gap + payload[len(MAGIC) + 1 :]
        else:  # pickle stops reading at its STOP opcode
            padded[name] = payload + b"\n" * gap
    return padded


def test_a_tampered_jax_export_artifact_runs_no_code_and_names_the_class(tmp_path):
    """The attack of issue #29: an artifact whose static data for a class was replaced, in a
    process that imported the class's module and built an instance (so the class is registered)."""
    marker = tmp_path / "pwned"
    victim = af.Victim(jnp.ones(2))
    data = export.export(jax.jit(lambda v: v.weight * 2))(victim).serialize()
    original = _aux_bytes(victim)
    assert data.count(original) == 1
    for name, payload in _payloads(marker, len(original)).items():
        (tmp_path / f"{name}.bin").write_bytes(data.replace(original, payload))
    lines = _fresh(
        """
        import sys
        import jax, jax.numpy as jnp
        import artifact_fixtures

        artifact_fixtures.Victim(jnp.ones(2))
        for name in sys.argv[2:]:
            try:
                jax.export.deserialize(open(f"{sys.argv[1]}/{name}.bin", "rb").read())
                print(name, "loaded")
            except Exception as error:
                print(name, type(error).__name__, str(error).replace("\\n", " "))
        print("imported codec_unimported:", "codec_unimported" in sys.modules)
        """,
        tmp_path,
        *_payloads(marker, len(original)),
        marker=marker,
    )
    assert not marker.exists()
    assert lines[-1] == "imported codec_unimported: False"
    refusals = dict(line.split(" ", 1) for line in lines[:-1])
    assert set(refusals) == {"pickle", "pickle-protocol-0", "unimported-module", "dunder-field"}
    for name, refusal in refusals.items():
        assert refusal.startswith(
            "StaticDataError jax.export cannot read the serialized treedef"
        ), name
        assert " of Victim: " in refusal, name
    assert "written with pickle by an unknown writer" in refusals["pickle"]
    assert "allow_pickled_artifacts" in refusals["pickle"]
    assert "pytreekit's (b'PTK1')" in refusals["pickle-protocol-0"]
    assert "module 'codec_unimported', which is not imported" in refusals["unimported-module"]
    assert "'__class__', which no instance of the class can hold" in refusals["dunder-field"]


def test_a_tampered_torch_treespec_runs_no_code_and_names_the_class(tmp_path):
    require("torch")
    import torch
    import torch.utils._pytree as torch_pytree

    marker = tmp_path / "pwned"
    victim = af.Victim(torch.ones(2))
    text = torch_pytree.treespec_dumps(torch_pytree.tree_flatten([victim])[1])
    original = json.loads(text)[1]["children_spec"][0]["context"]
    assert original.startswith("PTK1")
    payloads = _payloads(marker, len(original) + 100)
    contexts = {
        "pickle-base64": base64.b64encode(payloads["pickle"]).decode(),
        "pickle-text": payloads["pickle-protocol-0"].decode(),
        "unimported-module": payloads["unimported-module"].decode(),
        "dunder-field": payloads["dunder-field"].decode(),
        "not-text": 12,
    }
    for name, context in contexts.items():
        tampered = json.loads(text)
        tampered[1]["children_spec"][0]["context"] = context
        (tmp_path / f"{name}.json").write_text(json.dumps(tampered))
    lines = _fresh(
        """
        import sys
        import torch
        import torch.utils._pytree as torch_pytree
        import artifact_fixtures

        artifact_fixtures.Victim(torch.ones(2))
        for name in sys.argv[2:]:
            try:
                torch_pytree.treespec_loads(open(f"{sys.argv[1]}/{name}.json").read())
                print(name, "loaded")
            except Exception as error:
                print(name, type(error).__name__, str(error).replace("\\n", " "))
        print("imported codec_unimported:", "codec_unimported" in sys.modules)
        """,
        tmp_path,
        *contexts,
        marker=marker,
    )
    assert not marker.exists()
    assert lines[-1] == "imported codec_unimported: False"
    refusals = dict(line.split(" ", 1) for line in lines[:-1])
    assert set(refusals) == set(contexts)
    for name, refusal in refusals.items():
        assert refusal.startswith("StaticDataError torch treespec_loads cannot read"), name
        assert " of Victim: " in refusal, name
    assert "written with pickle" in refusals["pickle-base64"]
    assert "its context is a int, not text" in refusals["not-text"]


def test_a_torch_context_that_is_not_text_is_refused_naming_the_class():
    require("torch")
    import torch.utils._pytree as torch_pytree

    tree = json.loads(torch_pytree.treespec_dumps(torch_pytree.tree_flatten([af.Victim(1.0)])[1]))
    tree[1]["children_spec"][0]["context"] = ["PTK1"]
    with pytest.raises(StaticDataError, match="of Victim: its context is a list, not text"):
        torch_pytree.treespec_loads(json.dumps(tree))


# -- fuzzing whole artifacts ---------------------------------------------------------------------

_FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@contextlib.contextmanager
def _no_side_effects():
    """Whatever the block raises (an ``Exception``), it imported no module and ran none of the
    recording methods of ``codec_fixtures`` (``__init__``, ``__new__``, setters, hashes...)."""
    modules = set(sys.modules)
    fx.CALLS.clear()
    with contextlib.suppress(Exception):
        yield
    assert fx.CALLS == [] and af.CALLS == []
    assert set(sys.modules) == modules


# Block: no annotations, a recording __new__, __init__ and property setter; Layer: frozen,
# annotated, a recording __post_init__, __eq__ and __hash__; Guarded: a child beside a property
# with a recording setter; Holders: a NamedTuple, a pytree instance and a partial in static data.
_SMALL_TREE = [
    fx.BLOCK,
    fx.Layer(jnp.ones(1)),
    af.Guarded(3, jnp.ones(2)),
    af.Victim(jnp.ones(2)),
    *(af.Holder(af.KINDS[kind]) for kind in ("namedtuple", "pytree-instance", "partial")),
]
_SLACK = 40  # bytes of JSON white space in each node's static data: room for longer names


def _padded_artifact(tree: list[object]) -> tuple[bytes, list[tuple[int, int]]]:
    """An artifact of ``tree`` whose nodes' static data start with ``_SLACK`` spaces, and where
    each node's static data is in it."""
    write = pytreekit._artifacts.export.dump_aux

    def padded(aux: object, what: str) -> bytes:
        data = write(aux, what)
        return MAGIC + b"[" + b" " * _SLACK + data[len(MAGIC) + 1 :]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pytreekit._artifacts.export, "dump_aux", padded)
        data = export.export(jax.jit(lambda t: t))(tree).serialize()
        regions = []
        for node in tree:
            written = padded(_carrying(node), "test")
            start = data.find(written)
            assert start >= 0
            regions.append((start, start + len(written)))
    fx.CALLS.clear()
    return data, regions


def _renamed(artifact: bytes, region: tuple[int, int], tree: object) -> bytes | None:
    """``artifact`` with the static data in ``region`` replaced by ``tree``, padded to the same
    length (``None``: it does not fit)."""
    start, end = region
    text = json.dumps(tree, separators=(",", ":")).encode()
    gap = end - start - len(MAGIC) - len(text)
    if gap < 0:
        return None
    return artifact[:start] + MAGIC + b"[" + b" " * gap + text[1:] + artifact[end:]


def _strings(tree: object) -> list[object]:
    """Each path to a string (a name, a tag, a dict key) in ``tree``."""
    if isinstance(tree, str):
        return [()]
    if isinstance(tree, list):
        return [(i, *path) for i, item in enumerate(tree) for path in _strings(item)]
    if isinstance(tree, dict):
        return [(key, *path) for key, item in tree.items() for path in _strings(item)]
    return []


def _replaced(tree: object, path: tuple, new: str) -> object:
    if not path:
        return new
    head, *rest = path
    if isinstance(tree, list):
        return [
            _replaced(item, tuple(rest), new) if i == head else item for i, item in enumerate(tree)
        ]
    assert isinstance(tree, dict)
    return {
        key: _replaced(item, tuple(rest), new) if key == head else item
        for key, item in tree.items()
    }


_HOSTILE = [
    "os:system",
    "codec_unimported:function",
    "codec_fixtures:Recorder",
    "codec_fixtures:Block",
    "codec_fixtures:Frozen",
    "codec_fixtures:Layer",
    "codec_fixtures:Pair",
    "codec_fixtures:OwnState",
    "codec_fixtures:Finalized",
    "artifact_fixtures:Guarded",
    "__class__",
    "__dict__",
    "_Block__x",
    "_Guarded__x",
    "mode",
    "size",
    "w",
    "t",
    "p",
    "dc",
    "fp",
    "r",
]


def test_every_renaming_in_an_artifact_runs_nothing():
    """Systematically, what random mutation rarely finds: each string of each node's static data
    (a field name, a class or function name, a tag) renamed to each hostile name, in a whole
    artifact given to jax.export.deserialize (a child beside a property becomes the property,
    a class one whose methods record...)."""
    artifact, regions = _padded_artifact(_SMALL_TREE)
    count = 0
    for region in regions:
        start, end = region
        tree = json.loads(artifact[start + len(MAGIC) : end])
        for path in _strings(tree):
            for name in _HOSTILE:
                mutated = _renamed(artifact, region, _replaced(tree, path, name))
                if mutated is not None:
                    with _no_side_effects():
                        export.deserialize(mutated)
                    count += 1
    assert count > 1000


@pytest.fixture(scope="module")
def jax_artifact() -> tuple[bytes, list[tuple[int, int]]]:
    return _padded_artifact(
        [*af.holders(), *(node for node in _SMALL_TREE if type(node) is not af.Holder)]
    )


@st.composite
def _edits(draw: st.DrawFn, size: int, regions: list[tuple[int, int]]) -> list[tuple]:
    """A few replacements of byte ranges, in a node's static data or anywhere."""
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        if regions and draw(st.booleans()):
            low, high = draw(st.sampled_from(regions))
        else:
            low, high = 0, size
        start = draw(st.integers(low, high - 1))
        end = draw(st.integers(start, min(high, start + 8)))
        edits.append((start, end, draw(st.binary(max_size=8))))
    return edits


def _apply(data: bytes, edits: list[tuple]) -> bytes:
    out = bytearray(data)
    for start, end, new in sorted(edits, reverse=True):  # from the end: offsets stay valid
        out[start:end] = new
    return bytes(out)


@_FUZZ
@given(data=st.data())
def test_fuzz_mutated_jax_export_artifacts(jax_artifact, data):
    artifact, regions = jax_artifact
    if data.draw(st.booleans()):  # bytes replaced, in a node's static data or anywhere
        mutated = _apply(artifact, data.draw(_edits(len(artifact), regions)))
    else:  # a string of a node's static data renamed
        region = data.draw(st.sampled_from(regions))
        tree = json.loads(artifact[region[0] + len(MAGIC) : region[1]])
        path = data.draw(st.sampled_from(_strings(tree)))
        name = data.draw(st.sampled_from(_HOSTILE) | st.text(max_size=12))
        renamed = _renamed(artifact, region, _replaced(tree, path, name))
        assume(renamed is not None)
        mutated = renamed
    with _no_side_effects():
        export.deserialize(mutated)


@pytest.fixture(scope="module")
def torch_treespec() -> str:
    require("torch")
    import torch
    import torch.utils._pytree as torch_pytree

    tree = [*af.holders(torch.ones(2)), af.Guarded(3, torch.ones(2)), af.Victim(torch.ones(2))]
    return torch_pytree.treespec_dumps(torch_pytree.tree_flatten(tree)[1])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@st.composite
def _contexts(draw: st.DrawFn, original: str) -> str:
    """A node's context: random text, random JSON after the magic, or the original with a
    string or a stretch of text replaced by a hostile one."""
    kind = draw(st.sampled_from(["text", "json", "renamed", "spliced"]))
    if kind == "text":
        return draw(st.text(max_size=40))
    if kind == "json":
        return MAGIC.decode() + json.dumps(draw(_json))
    if kind == "renamed":
        tree = json.loads(original[len(MAGIC) :])
        path = draw(st.sampled_from(_strings(tree)))
        return MAGIC.decode() + json.dumps(_replaced(tree, path, draw(st.sampled_from(_HOSTILE))))
    start = draw(st.integers(0, len(original)))
    end = draw(st.integers(start, min(len(original), start + 12)))
    return original[:start] + draw(st.text(max_size=12)) + original[end:]


@_FUZZ
@given(data=st.data())
def test_fuzz_mutated_torch_treespecs(torch_treespec, data):
    import torch.utils._pytree as torch_pytree

    if data.draw(st.booleans()):  # the whole text, anywhere
        start = data.draw(st.integers(0, len(torch_treespec)))
        end = data.draw(st.integers(start, min(len(torch_treespec), start + 8)))
        mutated = torch_treespec[:start] + data.draw(st.text(max_size=8)) + torch_treespec[end:]
    else:  # a node of a pytree class: its context
        tree = json.loads(torch_treespec)
        nodes = tree[1]["children_spec"]
        node = nodes[data.draw(st.integers(0, len(nodes) - 1))]
        node["context"] = data.draw(_contexts(node["context"]))
        mutated = json.dumps(tree)
    with _no_side_effects():
        torch_pytree.treespec_loads(mutated)


# -- what cannot be stored is refused at export -------------------------------------------------


_REFUSED = [
    (lambda x: x, "Holder.value", "function", "define it at module level"),
    (
        (1, af.Opaque()),
        "Holder.value[1]",
        "artifact_fixtures.Opaque",
        "register_static_codec(Opaque",
    ),
    (af.Config(lambda x: x), "Holder.value.activation", "function", "module level"),
]
_REFUSED_IDS = ["lambda", "in-a-tuple", "in-a-namedtuple"]


def _refusal_says_what_to_do(message: str, where: str, kind: str, advice: str) -> None:
    assert f" {where} holds a {kind}: " in message
    assert advice in message
    assert "pytreekit.pickle_static_fields (unsafe" in message


@pytest.mark.parametrize(("value", "where", "kind", "advice"), _REFUSED, ids=_REFUSED_IDS)
def test_a_value_static_data_cannot_hold_is_refused_at_jax_export(value, where, kind, advice):
    exported = export.export(jax.jit(lambda h: h))(af.Holder(value))
    with pytest.raises(TypeError, match=r"^jax\.export stores the static fields of Holder") as info:
        exported.serialize()
    _refusal_says_what_to_do(str(info.value), where, kind, advice)


@pytest.mark.parametrize(("value", "where", "kind", "advice"), _REFUSED, ids=_REFUSED_IDS)
def test_a_value_static_data_cannot_hold_is_refused_at_torch_export(value, where, kind, advice):
    require("torch")
    import torch.utils._pytree as torch_pytree

    spec = torch_pytree.tree_flatten(af.Holder(value))[1]
    with pytest.raises(TypeError, match=r"^torch treespec_dumps stores the static fields") as info:
        torch_pytree.treespec_dumps(spec)
    _refusal_says_what_to_do(str(info.value), where, kind, advice)


def test_a_static_value_as_deep_as_static_data_goes_stores_in_an_artifact():
    """Each static value is stored as its field (issue 33): the artifact's own levels do not
    count against it (0.3.0 refused this value "together" with the artifact's tuple)."""
    nested: object = 0
    for _ in range(MAX_DEPTH - 1):
        nested = (nested,)
    exported = export.export(jax.jit(lambda h: h))(af.Holder(nested))
    restored = export.deserialize(exported.serialize())
    assert restored.in_tree == exported.in_tree


# -- artifacts written with pickle: refused, unless allowed -------------------------------------


@pytest.mark.parametrize(
    ("version", "writer"), [("0.2.0", "pytreekit 0.2"), ("format 2", "before")]
)
def test_artifacts_of_earlier_versions_are_refused_unless_allowed(version, writer):
    with pytest.raises(StaticDataError, match=rf"of Dense: .*written with pickle by .*{writer}"):
        export.deserialize(ARTIFACTS[version])
    with pytreekit.allow_pickled_artifacts(type(make_dense())):
        restored = export.deserialize(ARTIFACTS[version])
    # The trees it describes, rebuilt (not called: an older JAX cannot read the StableHLO the
    # JAX that wrote it emitted)
    (dense, x), kwargs = jax.tree_util.tree_unflatten(restored.in_tree, [jnp.ones(3), jnp.zeros(3)])
    assert kwargs == {} and x.tolist() == [0.0, 0.0, 0.0]
    assert dense.weight.tolist() == [1.0, 1.0, 1.0] and dense.shape == (3,)
    assert dense.activation is make_dense().activation and dense.name == "dense"
    total, doubled = jax.tree_util.tree_unflatten(restored.out_tree, [jnp.float32(4), jnp.ones(3)])
    assert float(total) == 4.0 and doubled.activation is make_dense().activation
    assert jax.tree_util.tree_structure(doubled) == jax.tree_util.tree_structure(make_dense())
    with pytest.raises(StaticDataError, match="allow_pickled_artifacts"):  # the block ended
        export.deserialize(ARTIFACTS[version])


@pytest.mark.parametrize(
    ("version", "writer"), [("0.2.0", "pytreekit 0.2"), ("format 2", "before")]
)
def test_torch_treespecs_of_earlier_versions_are_refused_unless_allowed(version, writer):
    require("torch")
    import torch.utils._pytree as torch_pytree

    with pytest.raises(StaticDataError, match=rf"of Dense: .*pickle by .*{writer}"):
        torch_pytree.treespec_loads(TREESPECS[version])
    with pytreekit.allow_pickled_artifacts(type(make_dense())):
        spec = torch_pytree.treespec_loads(TREESPECS[version])
    (dense,) = torch_pytree.tree_unflatten([jnp.ones(3)], spec)
    assert dense.activation is make_dense().activation and dense.shape == (3,)


def test_pickled_static_data_read_when_allowed_is_checked_like_data():
    """Format 1 (pytreekit 0.2) as a class without annotations wrote it (its field names), and
    what is no static data at all, pickled: read when allowed, then refused as data would be."""
    nodes = af.Guarded.__pytreekit_spec__.nodes
    format_1 = pickle.dumps((1, ("size", "w"), ("size",), (3,)), protocol=4)
    with pytreekit.allow_pickled_artifacts(af.Guarded):
        layout, size = load_aux(nodes, format_1)
        assert (layout.names, layout.static, size) == (("size", "w"), (True, False), 3)
        for state in [(1, ["size", "w"], ("size",), (3,)), (1, ("mode",), (), ())]:
            with pytest.raises(StaticDataError, match="of Guarded: "):
                load_aux(nodes, pickle.dumps(state, protocol=4))
        with pytest.raises(StaticDataError, match=r"of Guarded: .*cannot be unpickled \(Unp"):
            load_aux(nodes, format_1[:-3])
    with pytest.raises(StaticDataError, match=r"of Guarded: .* pickle by an unknown writer,"):
        load_aux(nodes, b"\x80\x04\x95")  # no opcode after the frame's


def test_allowing_pickled_artifacts_holds_in_its_own_thread_only():
    seen = []

    def load_elsewhere() -> None:
        try:
            export.deserialize(ARTIFACTS["0.2.0"])
            seen.append("loaded")
        except StaticDataError:
            seen.append("refused")

    with pytreekit.allow_pickled_artifacts(type(make_dense())):
        thread = threading.Thread(target=load_elsewhere)
        thread.start()
        thread.join()
        export.deserialize(ARTIFACTS["0.2.0"])
    assert seen == ["refused"]


def test_a_class_opted_in_to_pickle_writes_pickle_and_its_artifacts_need_allowing():
    @pytreekit.pickle_static_fields
    @pytree_class(static=("opaque",))
    class Legacy:
        def __init__(self) -> None:
            self.w = jnp.ones(2)
            self.opaque = af.SlottedSettings(jnp.tanh, 3)  # stores as data too, but pickled here

    assert pytreekit.pickle_static_fields(Legacy) is Legacy  # again: nothing changes
    aux = _aux_bytes(Legacy())
    assert aux.startswith(b"\x80\x04")  # pickle, protocol 4
    data = export.export(jax.jit(lambda m: m))(Legacy()).serialize()
    with pytest.raises(StaticDataError, match=r"of .*Legacy: .*opted in .*\(format 4\)"):
        export.deserialize(data)
    with pytreekit.allow_pickled_artifacts():
        restored = export.deserialize(data)
    rebuilt = jax.tree.unflatten(restored.out_tree, [jnp.ones(2)])
    assert rebuilt.opaque == af.SlottedSettings(jnp.tanh, 3)


def test_an_opted_in_class_holding_what_pickle_cannot_store_is_refused_naming_the_field():
    @pytreekit.pickle_static_fields
    @pytree_class
    class Legacy:
        w: jax.Array
        size: int = field(static=True, default=1)  # pickles: the next one is named
        fn: object = field(static=True, default=None)

    exported = export.export(jax.jit(lambda m: m))(Legacy(jnp.ones(1), 2, lambda x: x))
    with pytest.raises(TypeError, match=r"with pickle \(the class is opted in.*Legacy\.fn holds"):
        exported.serialize()


@pytest.mark.parametrize(
    ("argument", "match"),
    [
        (af.Opaque, r"pickle_static_fields\(\) expects a @pytree_class class .*got class Opaque"),
        (af.Holder(1), r"pickle_static_fields\(\) takes a class, got an instance of Holder"),
    ],
    ids=["not-a-pytree-class", "an-instance"],
)
def test_opting_in_to_pickle_takes_a_pytree_class(argument, match):
    with pytest.raises(TypeError, match=match):
        pytreekit.pickle_static_fields(argument)


# -- reading checks what the data says against the class -----------------------------------------


@pytest.mark.parametrize(
    "names",
    [("size", "name", "mode"), ("size", "name", "__dict__"), ("size", "_Block__x"), ("class",)],
    ids=["a-property", "a-dunder", "name-mangled", "a-keyword"],
)
def test_field_names_no_instance_could_hold_are_refused_before_the_class_learns_them(names):
    """Block has no annotations, so its table learns layouts from names: a name that is a
    property with a (recording) setter, a dunder, a mangled or a keyword name never becomes a
    field, and unflatten is never asked to store it."""
    nodes = fx.Block.__pytreekit_spec__.nodes
    flags = tuple(name in ("size", "name") for name in names)
    statics = tuple(3 if name == "size" else "b" for name, f in zip(names, flags, strict=True) if f)
    data = dumps((3, names, flags, statics))
    fx.CALLS.clear()
    with pytest.raises(StaticDataError, match=rf"of Block: it names the field '{names[-1]}'"):
        load_aux(nodes, data)
    assert fx.CALLS == []
    layout = load_aux(nodes, dumps((3, ("size", "name", "w"), (True, True, False), (3, "b"))))[0]
    assert layout.names == ("size", "name", "w")  # names the class can hold are learned


@pytest.mark.parametrize(
    "state",
    [
        (3, ("w",), (False, True), ()),
        (3, ("w", 1), (False, False), ()),
        (3, ("w",), (0,), ()),
        (3, ["w"], (False,), ()),
        (4, ("w",), (False,), ()),
        "not a tuple",
    ],
)
def test_static_data_that_is_no_layout_is_refused_naming_the_class(state):
    nodes = af.Victim.__pytreekit_spec__.nodes
    with pytest.raises(StaticDataError, match="of Victim: it holds no static data of a pytree"):
        load_aux(nodes, dumps(state))


# -- jax.export.register_pytree_node_serialization by hand (issue #27, item 7) ------------------


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(textwrap.dedent(source), module.__dict__)
    return module


_CLASSES = """
    import jax
    from pytreekit import field, pytree_class

    @pytree_class
    class Ours:
        w: jax.Array
        n: int = field(static=True, default=1)

    class Reference:  # registered by hand entirely, as JAX documents
        def __init__(self, w, n=1):
            self.w, self.n = w, n

    jax.tree_util.register_pytree_node(
        Reference, lambda r: ((r.w,), (r.n,)), lambda aux, children: Reference(*children, *aux)
    )
"""


@pytest.mark.parametrize("instance_first", [True, False], ids=["instance-first", "instance-last"])
@pytest.mark.parametrize("same_name", [False, True], ids=["own-name", "pytreekit's-name"])
def test_a_registration_by_hand_works_whatever_the_order(instance_first, same_name, request):
    """What a hand-registered class does, a pytree class does: the hand registration is used to
    write and read, whether an instance was built before it or not. Fails without the fix once
    an instance exists ("Duplicate serialization registration"), and with pytreekit's own name
    even before."""
    module = _module(f"by_hand_{request.node.callspec.id.replace('-', '_')}", _CLASSES)
    calls: dict[str, list[str]] = {"Ours": [], "Reference": []}
    for cls in (module.Ours, module.Reference):
        if instance_first:  # built and used as a pytree: pytreekit's registration is made
            jax.tree.flatten(cls(jnp.ones(2), 5))
        log = calls[cls.__name__]
        name = (
            f"{module.__name__}:{cls.__name__}"
            if same_name
            else f"hand:{module.__name__}.{cls.__name__}"
        )
        export.register_pytree_node_serialization(
            cls,
            serialized_name=name,
            serialize_auxdata=lambda aux, log=log: log.append("out") or str(aux[-1]).encode(),
            deserialize_auxdata=lambda data, log=log, cls=cls: log.append("in") or _aux(cls, data),
            from_children=lambda aux, children, cls=cls: cls(*children, aux[-1]),
        )
        data = export.export(jax.jit(lambda m: m))(cls(jnp.ones(2), 5)).serialize()
        assert name.encode() in data
        restored = export.deserialize(data)
        out = restored.call(cls(jnp.ones(2), 5))
        assert type(out) is cls and out.n == 5
    assert calls["Ours"] == calls["Reference"] and "out" in calls["Ours"] and "in" in calls["Ours"]


def _aux(cls: type, data: bytes) -> tuple[object, ...]:
    """The aux data of an instance of ``cls`` with ``n`` as ``data`` says."""
    return (int(data),) if cls.__name__ == "Reference" else (None, int(data))


def test_a_registration_by_hand_that_jax_refuses_leaves_pytreekits_in_place():
    module = _module(
        "by_hand_refused",
        _CLASSES + "\n    jax.export.register_pytree_node_serialization(Reference, "
        "serialized_name='taken', serialize_auxdata=repr, deserialize_auxdata=eval)\n",
    )
    jax.tree.flatten(module.Ours(jnp.ones(2)))  # pytreekit registers it for writing
    with pytest.raises(ValueError, match=r"Duplicate serialization registration .*`taken`"):
        export.register_pytree_node_serialization(
            module.Ours,
            serialized_name="taken",
            serialize_auxdata=repr,
            deserialize_auxdata=eval,
        )
    data = export.export(jax.jit(lambda m: m))(module.Ours(jnp.ones(2), 4)).serialize()
    assert b"by_hand_refused:Ours" in data
    assert export.deserialize(data).call(module.Ours(jnp.ones(2), 4)).n == 4


def test_a_registration_by_hand_of_what_is_no_type_is_jaxs_error():
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        export.register_pytree_node_serialization(
            [], serialized_name="by_hand:list", serialize_auxdata=repr, deserialize_auxdata=eval
        )
