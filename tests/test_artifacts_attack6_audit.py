"""The audit (``artifact_references``) of a zip archive against the sixth attacker's findings 4
and 5:

- it reads every member, whatever its name: ``torch.export.load`` reads a program from each
  ``models/`` member (``models/modelXjson`` is the model ``model``), where the audit read only
  names ending ``.json`` and listed nothing;
- it decompresses at most a budget (``_budget``: 100 times the archive's size, at most
  ``_EXTRA_CAP`` more than it) and refuses an archive past it, where a 65 kB zip bomb took 25 s
  and 644 MB; it keeps only the lists a magic starts (static data), not every value.

The tests count the bytes read or set a small limit; none is timed.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import export_fixtures as ef
import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, TESTS, require, run_fresh

import pytreekit
import pytreekit._artifacts.export as export_module

SYSTEM = pytreekit.ArtifactReference("os:system", "refused")
# A program as a .pt2 holds one: the treespec as a JSON string in its JSON, so the context is
# quoted twice and no search of the raw bytes reads it.
PROGRAM = json.dumps({"in_spec": json.dumps([1, {"context": 'PTK1["t",["r","os:system"]]'}])})


def _zip(members: dict[str, bytes | str], compression: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content, compression, compresslevel=9 if compression else None)
    return out.getvalue()


# -- 4: every member, whatever its name --------------------------------------------------------


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize(
    "name",
    [
        "archive/models/modelXjson",  # torch 2.13 reads it: it slices the suffix off unchecked
        "archive/models/model",
        "archive/extra/notes.txt",
        "archive/data/sample_inputs/model.pt",
        "models/model.JSON",
    ],
)
def test_the_audit_reads_a_member_whatever_its_name_ends_with(name, compression):
    honest = _zip({"archive/models/model.json": PROGRAM}, compression)
    assert pytreekit.artifact_references(honest) == [SYSTEM]  # as before
    renamed = _zip({"archive/archive_format": "pt2", name: PROGRAM}, compression)
    assert export_module._static_trees(renamed.decode("latin-1")) == []  # no search of the bytes
    assert pytreekit.artifact_references(renamed) == [SYSTEM]


def _program(tmp_path: object) -> bytes:
    """A .pt2 of a seam_fixtures.Linear whose act is torch.tanh, as torch.export.save writes it."""
    torch = require("torch")
    import seam_fixtures as sf

    class Net(torch.nn.Module):
        def forward(self, linear: sf.Linear, x: torch.Tensor) -> torch.Tensor:
            return linear.act(x * linear.weight)  # type: ignore[no-any-return]

    linear = sf.Linear(torch.ones(2), mode=sf.Mode.TRAIN, act=torch.tanh)
    buffer = io.BytesIO()
    torch.export.save(torch.export.export(Net(), (linear, torch.ones(2))), buffer)
    return buffer.getvalue()


def _renamed(data: bytes, compression: int) -> bytes:
    """The attacker's edit: the program renamed so no name ends ``.json``, tanh made relu."""
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member in source.infolist():
            content, name = source.read(member), member.filename
            if name == "archive/models/model.json":
                assert b"torch:tanh" in content
                content = content.replace(b"torch:tanh", b"torch:relu")
                name = "archive/models/modelXjson"
            archive.writestr(name, content, compression)
    return out.getvalue()


def test_the_audit_lists_what_torch_loads_from_a_models_member_not_named_json(tmp_path):
    honest = _program(tmp_path)
    names = sorted(reference.name for reference in pytreekit.artifact_references(honest))
    assert names == ["seam_fixtures:Mode", "torch:tanh"]  # as before
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        data = _renamed(honest, compression)
        (tmp_path / f"model-{compression}.pt2").write_bytes(data)
        names = sorted(reference.name for reference in pytreekit.artifact_references(data))
        assert names == ["seam_fixtures:Mode", "torch:relu"]
    # torch reads the renamed member: the context it resolves is relu.
    assert activations_torch_loads(tmp_path, ["model-0", "model-8"]) == ["relu", "relu"]


def activations_torch_loads(tmp_path: Path, names: list[str]) -> list[str]:
    """The activation torch resolves in each ``<name>.pt2`` under ``tmp_path``, loaded in a fresh
    process as the torch page shows (``safe_globals`` of the fixture's classes)."""
    return run_fresh(
        """
        import logging, sys
        import torch
        import seam_fixtures

        logging.disable(logging.WARNING)
        for name in sys.argv[2:]:
            with torch.serialization.safe_globals([seam_fixtures.Linear, seam_fixtures.Mode]):
                loaded = torch.export.load(f"{sys.argv[1]}/{name}.pt2")
            print(loaded.call_spec.in_spec.child(0).child(0).context[1].__name__)
        """,
        tmp_path,
        *names,
        pythonpath=[ROOT, TESTS],
        inherit_env=True,
        cwd=None,
        timeout=300,
    ).splitlines()


# -- 5: a bounded audit --------------------------------------------------------------------------


class _Counted:
    """Counts the decompressed bytes the audit reads from zip members."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = 0
        self.opened: list[str] = []
        open_member = zipfile.ZipFile.open

        def counted_open(archive: zipfile.ZipFile, member: object, *args: object) -> object:
            stream = open_member(archive, member, *args)  # type: ignore[arg-type]
            self.opened.append(stream.name)
            read = stream.read

            def counted_read(size: int = -1) -> bytes:
                data = read(size)
                self.read += len(data)
                return data

            stream.read = counted_read  # type: ignore[method-assign]
            return stream

        monkeypatch.setattr(zipfile.ZipFile, "open", counted_open)


def _declare_size(data: bytes, name: str, size: int) -> bytes:
    """``data`` with the size the central directory declares for ``name`` (decompressed) set."""
    edited = bytearray(data)
    entry = edited.rindex(b"PK\x01\x02", 0, edited.rindex(name.encode()))
    edited[entry + 24 : entry + 28] = size.to_bytes(4, "little")
    return bytes(edited)


@pytest.mark.parametrize("declared", ["honestly", "small"])
def test_a_zip_bomb_is_refused_having_read_at_most_the_budget(monkeypatch, declared):
    bomb = b'"PTK1' * 800_000  # 4 MB, deflated to about 6 kB
    data = _zip(
        {"archive/models/model.json": PROGRAM, "archive/junk/notes": bomb},
        zipfile.ZIP_DEFLATED,
    )
    assert len(data) * 100 < len(bomb)
    counted = _Counted(monkeypatch)
    if declared == "honestly":  # refused by the size it declares, before decompressing it
        with pytest.raises(ValueError, match=r"reach that at 'archive/junk/notes'.*do not"):
            pytreekit.artifact_references(data)
        assert counted.opened == ["archive/models/model.json"]
    else:  # a size it does not hold: a bad member, read as far as the size it declares
        with pytest.raises(ValueError, match=r"cannot read 'archive/junk/notes'.*do not"):
            pytreekit.artifact_references(_declare_size(data, "archive/junk/notes", 1000))
        assert counted.opened == ["archive/models/model.json", "archive/junk/notes"]
    assert 0 < counted.read <= len(PROGRAM) + 1000


def test_the_budget_is_100_times_the_archive_and_at_most_a_cap_more():
    assert export_module._budget(1000) == 100_000
    assert export_module._budget(2**30) == 2**30 + export_module._EXTRA_CAP
    assert export_module._EXTRA_CAP == 256 * 2**20


def test_the_budget_admits_a_stored_archive_and_refuses_past_it(monkeypatch):
    monkeypatch.setattr(export_module, "_EXTRA_CAP", 0)  # the budget: the archive's own size
    stored = _zip({"archive/models/model.json": PROGRAM, "archive/data/weights/w": b"\0" * 50_000})
    assert pytreekit.artifact_references(stored) == [SYSTEM]
    deflated = _zip({"archive/models/model.json": PROGRAM + " " * 5000}, zipfile.ZIP_DEFLATED)
    with pytest.raises(ValueError, match=r"reads at most \d+ decompressed bytes.*do not load it"):
        pytreekit.artifact_references(deflated)
    monkeypatch.setattr(export_module, "_EXTRA_CAP", 5000)
    assert pytreekit.artifact_references(deflated) == [SYSTEM]


def test_a_member_declaring_a_size_past_the_budget_is_refused_unread(monkeypatch):
    data = _zip({"archive/models/model.json": PROGRAM, "archive/big": b"x" * 100})
    counted = _Counted(monkeypatch)
    with pytest.raises(ValueError, match=r"reach that at 'archive/big'.*do not load it"):
        pytreekit.artifact_references(_declare_size(data, "archive/big", 2**31))
    assert counted.opened == ["archive/models/model.json"]


def test_the_audit_keeps_only_the_lists_a_magic_starts():
    assert export_module._static_trees(b'"PTK1' * 10_000) == []  # each value a string: none kept
    text = 'PTK1"a" PTK1 1 PTK1{"a": 1} PTK1[] "PTK1[\\"r\\",\\"os:system\\"]" PTK1["r","m:f"]'
    assert export_module._static_trees(text) == [["r", "os:system"], ["r", "m:f"]]
    quoted = json.dumps({"context": 'PTK1"a"', "other": 'PTK1["r","os:system"]'})
    assert export_module._static_trees(quoted) == [["r", "os:system"]] * 2  # raw and as JSON
    # what a jax.export artifact lists, as before
    model = ef.Net(ef.Activation(ef.relu), jnp.ones(()))
    data = jax.export.export(jax.jit(lambda m: m))(model).serialize()
    assert pytreekit.ArtifactReference("export_fixtures:relu", "safe") in (
        pytreekit.artifact_references(data)
    )
