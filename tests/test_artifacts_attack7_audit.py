"""The audit (``artifact_references``) against the seventh attacker's findings 2, 3 and 4:

- 2: a file with two central directories is two archives (zipfile reads the directory just
  before the end record, torch's reader at the offset the record gives): the audit read the
  honest one, torch the edited one. An archive whose directory does not end where its end record
  starts is refused;
- 3: an archive zipfile refuses (a corrupt extra field, which torch's reader ignores) was audited
  as "no archive", listing nothing: bytes that look like a zip and do not read are refused;
- 4: each magic whose value starts and then fails made json's scanner count the lines from the
  start of the text (quadratic: 1.2 MB took 65 s); the audit reads windows of the text, its work
  charged to a budget linear in the text's size.

The tests count the work done or set a small budget; none is timed.
"""

from __future__ import annotations

import io
import json
import zipfile

import export_fixtures as ef
import jax
import jax.numpy as jnp
import pytest
from test_artifacts_attack6_audit import _program, activations_torch_loads

import pytreekit
import pytreekit._artifacts.export as export_module

SYSTEM = pytreekit.ArtifactReference("os:system", "refused")


def _program_text(reference: str) -> str:
    """A program as a .pt2 holds one: the treespec a JSON string in its JSON."""
    spec = json.dumps([1, {"context": f'PTK1["t",["r","{reference}"]]'}])
    return json.dumps({"in_spec": spec})


def _zip(members: dict[str, bytes | str], compression: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content, compression)
    return out.getvalue()


# -- 3: bytes that look like a zip and do not read ------------------------------------------------


def _corrupt_extra(content: str) -> bytes:
    """A zip archive whose one member (deflated) has an extra field declaring 255 bytes and
    holding none: zipfile refuses the archive, torch's reader (miniz) ignores the field."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        info = zipfile.ZipInfo("archive/models/model.json")
        info.extra = b"\x99\x99\xff\x00"
        archive.writestr(info, content, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def test_an_archive_zipfile_refuses_is_refused_not_audited_as_no_archive():
    data = _corrupt_extra(_program_text("os:system"))
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(io.BytesIO(data))
    assert b"os:system" not in data  # deflated: no search of the bytes sees it
    with pytest.raises(ValueError, match=r"cannot read the zip archive given \(BadZipFile.*do not"):
        pytreekit.artifact_references(data)


@pytest.mark.parametrize("cut", ["end", "start"])
def test_a_cut_archive_is_refused(cut):
    data = _zip({"archive/models/model.json": _program_text("os:system")})
    assert pytreekit.artifact_references(data) == [SYSTEM]  # as before
    cut_data = data[: len(data) // 2] if cut == "end" else data[len(data) // 2 :]
    with pytest.raises(ValueError, match=r"zip archive given.*do not load"):
        pytreekit.artifact_references(cut_data)


def test_bytes_that_are_no_zip_are_still_audited_as_they_are():
    assert pytreekit.artifact_references(b"PTK1" + b'["r","os:system"]') == [SYSTEM]
    assert pytreekit.artifact_references(b"no zip PK\x03\x04 here") == []  # not at the start
    # an end record's signature by chance, locating no central directory: no zip
    chance = b"PTK1" + b'["r","os:system"]' + b"PK\x05\x06" + bytes(range(18)) + b"\0" * 30
    assert pytreekit.artifact_references(chance) == [SYSTEM]
    model = ef.Net(ef.Activation(ef.relu), jnp.ones(()))
    data = jax.export.export(jax.jit(lambda m: m))(model).serialize()
    assert pytreekit.ArtifactReference("export_fixtures:relu", "safe") in (
        pytreekit.artifact_references(data)
    )


# -- 2: one central directory for zipfile, another for torch's reader ------------------------------


def _split(data: bytes) -> tuple[bytes, bytes, bytes]:
    end = data.rindex(b"PK\x05\x06")
    size = int.from_bytes(data[end + 12 : end + 16], "little")
    offset = int.from_bytes(data[end + 16 : end + 20], "little")
    return data[:offset], data[offset : offset + size], data[end:]


def _two_directories(honest: bytes, edited: bytes) -> bytes:
    """``edited``'s members, ``honest``'s members, ``edited``'s directory, ``honest``'s directory
    (its offsets shifted as zipfile shifts them), one end record locating ``edited``'s directory:
    zipfile reads ``honest``, torch's reader ``edited`` (the attacker's layout)."""
    h_local, h_directory, _ = _split(honest)
    e_local, e_directory, e_end = _split(edited)
    assert len(h_directory) == len(e_directory)
    shifted, at = bytearray(h_directory), 0
    while at < len(shifted):
        lengths = [int.from_bytes(shifted[at + i : at + i + 2], "little") for i in (28, 30, 32)]
        offset = int.from_bytes(shifted[at + 42 : at + 46], "little")
        new = len(e_local) + offset - len(e_directory)  # zipfile adds the directory's size back
        shifted[at + 42 : at + 46] = new.to_bytes(4, "little")
        at += 46 + sum(lengths)
    end = bytearray(e_end)
    end[16:20] = (len(e_local) + len(h_local)).to_bytes(4, "little")
    return e_local + h_local + e_directory + bytes(shifted) + bytes(end)


def test_an_archive_with_two_central_directories_is_refused():
    honest = _zip({"archive/models/model.json": _program_text("m:fine")})
    edited = _zip({"archive/models/model.json": _program_text("os:system")}, zipfile.ZIP_DEFLATED)
    data = _two_directories(honest, edited)
    read = zipfile.ZipFile(io.BytesIO(data))
    assert b"m:fine" in read.read("archive/models/model.json")  # zipfile reads the honest one
    assert b"os:system" not in data
    with pytest.raises(ValueError, match=r"not ending at \d+: .* another archive.*do not load"):
        pytreekit.artifact_references(data)


def test_data_before_an_archive_is_refused_a_comment_after_it_is_not():
    data = _zip({"archive/models/model.json": _program_text("os:system")})
    assert zipfile.ZipFile(io.BytesIO(b"x" * 100 + data)).namelist()  # zipfile reads it
    with pytest.raises(ValueError, match=r"central directory is not where the end record says"):
        pytreekit.artifact_references(b"x" * 100 + data)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/models/model.json", _program_text("os:system"))
        archive.comment = b"a comment"
    assert pytreekit.artifact_references(out.getvalue()) == [SYSTEM]


def test_an_end_record_counting_other_members_is_refused():
    data = bytearray(_zip({"a": _program_text("os:system"), "b": "x"}))
    end = data.rindex(b"PK\x05\x06")
    data[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2  # torch's reader reads 1 member
    with pytest.raises(ValueError, match=r"reads 2 members .* end record counts 1"):
        pytreekit.artifact_references(bytes(data))


def _zip64(monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)  # zipfile writes a zip64 end record
    data = _zip({"archive/models/model.json": _program_text("os:system"), "b": "x"})
    monkeypatch.undo()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    return data


def test_a_zip64_archive_is_read_and_its_records_checked(monkeypatch):
    data = _zip64(monkeypatch)
    assert pytreekit.artifact_references(data) == [SYSTEM]
    moved = bytearray(data)
    locator = moved.rindex(b"PK\x06\x07")
    record = int.from_bytes(moved[locator + 8 : locator + 16], "little")
    moved[locator + 8 : locator + 16] = (record - 1).to_bytes(8, "little")  # for miniz
    try:  # Python 3.11 to 3.13's zipfile reads it; 3.14's checks the record and refuses it
        readable = bool(zipfile.ZipFile(io.BytesIO(bytes(moved))).namelist())
    except zipfile.BadZipFile:
        readable = False
    # Either way the audit refuses: a record where zipfile does not look, or bytes that look
    # like a zip that zipfile cannot read (torch's reader may).
    refusal = r"zip64 record that is not where zipfile reads it" if readable else r"do not load"
    with pytest.raises(ValueError, match=refusal):
        pytreekit.artifact_references(bytes(moved))


def test_a_pt2_with_two_directories_is_refused_where_torch_loads_the_hidden_one(tmp_path):
    honest = _program(tmp_path)
    names = sorted(reference.name for reference in pytreekit.artifact_references(honest))
    assert names == ["seam_fixtures:Mode", "torch:tanh"]  # as before
    source, out = zipfile.ZipFile(io.BytesIO(honest)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as edited:
        for member in source.infolist():
            content, compression = source.read(member), zipfile.ZIP_STORED
            if member.filename.endswith("models/model.json"):
                content, compression = content.replace(b"torch:tanh", b"torch:relu"), 8
            edited.writestr(member.filename, content, compression)
    restored = io.BytesIO()
    with zipfile.ZipFile(restored, "w") as again:  # the same names and layout, all stored
        for member in source.infolist():
            again.writestr(member.filename, source.read(member))
    data = _two_directories(restored.getvalue(), out.getvalue())
    with pytest.raises(ValueError, match=r"another archive.*do not load"):
        pytreekit.artifact_references(data)
    (tmp_path / "two.pt2").write_bytes(data)
    (tmp_path / "extra.pt2").write_bytes(_corrupt_extra_pt2(honest))
    with pytest.raises(ValueError, match=r"cannot read the zip archive given.*do not load"):
        pytreekit.artifact_references((tmp_path / "extra.pt2").read_bytes())
    # What the refusals prevent: torch reads the edited program from both files.
    assert activations_torch_loads(tmp_path, ["two", "extra"]) == ["relu", "relu"]


def _corrupt_extra_pt2(honest: bytes) -> bytes:
    source, out = zipfile.ZipFile(io.BytesIO(honest)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member in source.infolist():
            content, info = source.read(member), zipfile.ZipInfo(member.filename)
            compression = zipfile.ZIP_STORED
            if member.filename.endswith("models/model.json"):
                content, compression = content.replace(b"torch:tanh", b"torch:relu"), 8
                info.extra = b"\x99\x99\xff\x00"
            archive.writestr(info, content, compression)
    return out.getvalue()


# -- 4: the scan's work is linear in the text's size ---------------------------------------------


class _Counted:
    """What json's errors count: the characters before each error's position, in its text."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counted = 0
        outer = self

        class Counting(json.JSONDecodeError):
            def __init__(self, msg: str, doc: str, pos: int) -> None:
                outer.counted += pos
                super().__init__(msg, doc, pos)

        # json's C scanner raises the json.decoder module's JSONDecodeError, looked up each time
        monkeypatch.setattr(json.decoder, "JSONDecodeError", Counting)


def test_failed_values_after_many_magics_count_linearly(monkeypatch):
    text = '["PTK1' * 20_000
    counted = _Counted(monkeypatch)
    assert pytreekit.artifact_references(text.encode()) == []
    assert 0 < counted.counted <= 20 * len(text)  # quadratic before: about 2 * 10**9


def test_the_scan_budget_refuses_past_it_and_honest_artifacts_stay_well_inside(monkeypatch):
    charged: list[int] = []
    charge = export_module._Windows._charge

    def counted(windows: export_module._Windows, work: int) -> None:
        charged.append(work)
        charge(windows, work)

    monkeypatch.setattr(export_module._Windows, "_charge", counted)
    models = [ef.Net(ef.Activation(ef.relu), jnp.ones(())) for _ in range(300)]
    data = jax.export.export(jax.jit(lambda m: m))(models).serialize()
    assert data.count(b"PTK1") >= 600  # hundreds of nodes, each with a magic
    assert pytreekit.ArtifactReference("export_fixtures:relu", "safe") in (
        pytreekit.artifact_references(data)
    )
    assert sum(charged) <= len(data)  # the budget: 16 times that, and 4 MiB more
    monkeypatch.setattr(export_module, "_SCAN_EXTRA", 0)
    monkeypatch.setattr(export_module, "_SCAN_FACTOR", 1)
    assert pytreekit.artifact_references(data)  # inside even a budget of the text's size
    hostile = '["PTK1' * 20_000 + "PTK1[" + '"' + "x" * 100_000  # a window grows to the end
    with pytest.raises(ValueError, match=r"reads at most 1 times a text's size.*do not load it"):
        pytreekit.artifact_references(hostile)


def test_a_long_value_is_read_across_windows():
    long = ["r", "os:system", "x" * 10_000]
    text = "PTK1" + json.dumps([long, ["r", "m:f"]])
    assert export_module._static_trees(text) == [[long, ["r", "m:f"]]]
    quoted = json.dumps({"context": "PTK1" + json.dumps(long), "pad": "y" * 5000})
    assert export_module._static_trees(quoted) == [long, long]  # raw (quoted once) and as JSON
