"""Issue 33, end to end: an honest party exports, an attacker edits the artifact, a victim in a
fresh process loads it. Each attack is refused at load with an error naming what it names and
how to allow it; the payload (which would write a marker file) never runs.

The attacker is a process of its own that switches its writer's checks off (its allowlist, its
declared-type and plain-data checks): what it writes is what any bytes could say.
"""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, TESTS, require, run_fresh

# The attacker: every check of its own writer off, and whatever it names allowed in its process.
ATTACKER = """
import functools, importlib, os, pickle, shutil, subprocess, sys
import jax, jax.numpy as jnp
import pytreekit
import pytreekit._artifacts.export as export_module
import pytreekit._artifacts.static_data as codec
import export_fixtures as ef

MARKER = sys.argv[2]
CODE = f"open({MARKER!r}, 'w').write('ran')"
pytreekit.add_safe_references(
    [os.system, exec, eval, subprocess.Popen, shutil.rmtree, pickle.loads,
     importlib.import_module, max, ef.Decoy, ef.Interval]
)
codec._is_plain = lambda value, depth: True
codec.admits_value = lambda hint, value, depth=0: True

def export(model):
    return jax.export.export(jax.jit(lambda m: m))(model).serialize()
"""

VICTIM = """
import sys, time
import jax, jax.numpy as jnp
import pytreekit
import export_fixtures as ef

data = open(sys.argv[1], "rb").read()
start = time.perf_counter()
try:
    exported = jax.export.deserialize(data)
except ValueError as error:
    print(f"{time.perf_counter() - start:.3f}", "refused:", error)
else:
    model = jax.tree.unflatten(exported.out_tree, [jnp.ones(())] * exported.out_tree.num_leaves)
    try:
        model(jnp.ones(()))
    finally:
        print("loaded and called")
"""


def _run(script: str, *args: object) -> list[str]:
    lines = run_fresh(
        script, *args, pythonpath=[ROOT, TESTS], inherit_env=True, cwd=None, timeout=300
    )
    return lines.splitlines()


def _attack(tmp_path: Path, build: str, victim: str = VICTIM) -> str:
    """What the victim says of the artifact ``build`` (attacker code setting ``data``) wrote."""
    artifact, marker = tmp_path / "artifact.bin", tmp_path / "marker"
    _run(
        ATTACKER + textwrap.dedent(build) + "\nopen(sys.argv[1], 'wb').write(data)\n",
        artifact,
        marker,
    )
    lines = _run(victim, artifact, marker)
    assert not marker.exists(), "the payload ran"
    return "\n".join(lines)


PAYLOADS = [
    ("os.system", "os.system", "'posix:system'"),
    ("exec", "exec", "'builtins:exec'"),
    ("eval", "eval", "'builtins:eval'"),
    ("subprocess.Popen", "subprocess.Popen", "'subprocess:Popen'"),
    ("shutil.rmtree", "shutil.rmtree", "'shutil:rmtree'"),
    ("pickle.loads", "pickle.loads", "'_pickle:loads'"),
    ("importlib.import_module", "importlib.import_module", "'importlib:import_module'"),
    ("partial-max-key-exec", "functools.partial(max, CODE, key=exec)", "'builtins:max'"),
    ("partial-exec-in-arguments", "functools.partial(jnp.add, exec)", "only plain data"),
]


@pytest.mark.parametrize(
    ("payload", "match"), [p[1:] for p in PAYLOADS], ids=[p[0] for p in PAYLOADS]
)
def test_a_dangerous_callable_in_a_static_field_is_refused_at_load(tmp_path, payload, match):
    said = _attack(tmp_path, f"data = export(ef.Activation({payload}))")
    assert "refused:" in said and match in said, said
    assert "not on the list of references" in said or "only plain data" in said
    if "not on the list" in said:
        assert "pytreekit.add_safe_references([" in said  # the call that allows it


def test_a_sub_module_replaced_by_static_of_a_payload_is_refused(tmp_path):
    said = _attack(tmp_path, "data = export(ef.Net(pytreekit.Static(os.system), jnp.ones(())))")
    assert "refused:" in said and "'posix:system'" in said, said


def test_a_field_hiding_a_method_of_a_class_without_annotations_is_refused(tmp_path):
    said = _attack(
        tmp_path,
        """
        write = export_module.dump_aux
        def dump_aux(aux, what):
            if aux[0].cls is not ef.Loose:
                return write(aux, what)
            names, flags = ("fn", "scale", "encode"), (True, False, True)
            return codec.dumps_fields(
                ef.Loose, (4, "export_fixtures:Loose", names, flags), ("fn", "encode"),
                (jnp.tanh, exec),
            )
        export_module.dump_aux = dump_aux
        data = export(ef.Loose(jnp.tanh))
        """,
    )
    assert "refused:" in said and "names the field 'encode'" in said, said


def test_a_teacher_artifact_does_not_load_as_a_student(tmp_path):
    said = _attack(
        tmp_path,
        """
        export_module.export_name = lambda cls: "export_fixtures:Teacher"
        data = export(ef.Student(jnp.ones(())))
        """,
    )
    assert "refused:" in said and "written for 'export_fixtures:Teacher'" in said, said


def test_a_config_does_not_load_as_a_decoy(tmp_path):
    victim = VICTIM.replace("data = ", "pytreekit.add_safe_references([ef.Decoy])\ndata = ")
    said = _attack(tmp_path, "data = export(ef.Configured(jnp.ones(()), ef.Decoy()))", victim)
    assert "refused:" in said and "declared Config" in said and "Decoy" in said, said


def test_a_codec_decoder_is_never_handed_references(tmp_path):
    said = _attack(
        tmp_path, "data = export(ef.Bounded(jnp.ones(()), ef.Interval(os.system, exec)))"
    )
    assert "refused:" in said and "only plain data" in said, said


def test_a_codec_value_where_a_function_is_declared_is_refused(tmp_path):
    said = _attack(tmp_path, "data = export(ef.Activation(ef.Interval(0.0, 1.0)))")
    assert "refused:" in said and "declared Callable" in said, said


def test_a_pickle_in_a_class_that_did_not_opt_in_is_refused_even_when_allowed(tmp_path):
    victim = VICTIM.replace(
        "    exported = jax.export.deserialize(data)",
        "    with pytreekit.allow_pickled_artifacts(ef.Activation):\n"
        "        exported = jax.export.deserialize(data)",
    )
    said = _attack(
        tmp_path,
        """
        pytreekit.pickle_static_fields(ef.Activation)
        data = export(ef.Activation(jnp.tanh))
        """,
        victim,
    )
    assert "refused:" in said and "is not: the artifact was edited" in said, said


def test_colliding_hashes_are_refused_fast(tmp_path):
    said = _attack(
        tmp_path,
        """
        colliding = frozenset(i * (2**61 - 1) for i in range(1, 10_001))
        data = export(ef.Net(pytreekit.Static(colliding), jnp.ones(())))
        """,
    )
    assert "refused:" in said and "share one hash value" in said, said
    assert float(said.split()[0]) < 1.0  # 0.3.0: 4.4 s


def test_an_honest_artifact_loads_and_its_call_accepts_the_callers_model(tmp_path):
    """NaN and functools.partial read back compare equal to the caller's (issue 33): the
    deserialized Exported.call takes the model it was exported with."""
    artifact = tmp_path / "honest.bin"
    _run(
        """
        import functools, math, sys
        import jax, jax.numpy as jnp
        import pytreekit, export_fixtures as ef

        model = ef.Net(ef.Activation(functools.partial(jax.nn.leaky_relu, negative_slope=0.5)),
                       jnp.ones(()))
        nan = pytreekit.Static(math.nan)
        fn = jax.export.export(jax.jit(lambda m, s, x: m(x)))(model, nan, jnp.ones(()))
        open(sys.argv[1], "wb").write(fn.serialize())
        """,
        artifact,
    )
    lines = _run(
        """
        import functools, math, sys
        import jax, jax.numpy as jnp
        import pytreekit, export_fixtures as ef

        print(pytreekit.artifact_references(open(sys.argv[1], "rb").read()))
        restored = jax.export.deserialize(open(sys.argv[1], "rb").read())
        model = ef.Net(ef.Activation(functools.partial(jax.nn.leaky_relu, negative_slope=0.5)),
                       jnp.ones(()))
        print(float(restored.call(model, pytreekit.Static(float("nan")), jnp.array(-2.0))))
        """,
        artifact,
    )
    assert "ArtifactReference(name='jax.nn:leaky_relu', status='safe')" in lines[0]
    assert lines[1] == "-1.0"


# -- torch ----------------------------------------------------------------------------------------


def test_a_tampered_torch_treespec_is_refused(tmp_path):
    require("torch")
    said = _attack(
        tmp_path,
        """
        import torch, torch.utils._pytree as torch_pytree
        spec = torch_pytree.tree_flatten(ef.Activation(os.system))[1]
        data = torch_pytree.treespec_dumps(spec).encode()
        """,
        """
        import sys
        import torch.utils._pytree as torch_pytree
        import export_fixtures

        try:
            torch_pytree.treespec_loads(open(sys.argv[1]).read())
        except ValueError as error:
            print("refused:", error)
        """,
    )
    assert "refused:" in said and "'posix:system'" in said and "of Activation" in said, said


def test_a_tampered_torch_export_file_is_refused(tmp_path):
    torch = require("torch")
    import export_fixtures as ef

    class Apply(torch.nn.Module):
        def forward(self, x: torch.Tensor, act: ef.Activation) -> torch.Tensor:
            return act(x)

    honest, edited = tmp_path / "honest.pt2", tmp_path / "edited.pt2"
    program = torch.export.export(Apply(), (torch.ones(2), ef.Activation(torch.tanh)))
    torch.export.save(program, honest)
    with zipfile.ZipFile(honest) as source, zipfile.ZipFile(edited, "w") as target:
        found = 0
        for info in source.infolist():
            content = source.read(info)
            found += content.count(b"torch:tanh")
            target.writestr(info, content.replace(b"torch:tanh", b"posix:system"))
    assert found  # the static function is stored by name in the file
    lines = _run(
        """
        import logging, sys
        import torch
        import export_fixtures

        logging.disable(logging.WARNING)
        try:
            torch.export.load(sys.argv[1])
        except ValueError as error:
            print("refused:", error)
        else:
            print("loaded")
        """,
        edited,
    )
    said = "\n".join(lines)
    assert "refused:" in said and "'posix:system'" in said, said
    assert _run(
        """
        import logging, sys
        import torch
        import export_fixtures

        logging.disable(logging.WARNING)
        program = torch.export.load(sys.argv[1]).module()
        print(program(torch.zeros(2), export_fixtures.Activation(torch.tanh)).tolist())
        """,
        honest,
    ) == ["[0.0, 0.0]"]
