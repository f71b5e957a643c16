"""Pytree classes inside other libraries' machinery: jax.export and torch.export artifacts that
store the class, and (below) third-party decorators and introspection on generated methods."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import textwrap
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, require
from export_fixtures import Model, Unannotated, make_model
from jax import export

from pytreekit import field, pytree_class

TESTS = ROOT / "tests"


def _run_fresh(script: str, *args: object) -> str:
    """Run ``script`` in a new interpreter that imports nothing of this process."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"JAX_PLATFORMS": "cpu", "PYTHONPATH": f"{TESTS}:{ROOT}"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- jax.export ---------------------------------------------------------------------------------


def _step(model, x):
    return model(x).sum(), jax.tree.map(lambda a: 2 * a, model)


def test_exported_function_of_models_is_called_in_a_fresh_process(tmp_path):
    """No registration by hand: the class's module and qualified name are its serialized name,
    its static values (a function among them) travel with the artifact."""
    annotated = export.export(jax.jit(_step))(make_model(), jnp.ones(3))
    unannotated = export.export(jax.jit(_step))(Unannotated(3, bias=True), jnp.ones(3))
    (tmp_path / "annotated.bin").write_bytes(annotated.serialize())
    (tmp_path / "unannotated.bin").write_bytes(unannotated.serialize())
    out = _run_fresh(
        """
        import sys
        import jax.numpy as jnp
        from jax import export
        from export_fixtures import Model, Unannotated, make_model, relu

        folder = sys.argv[1]
        exported = export.deserialize(bytearray(open(f"{folder}/annotated.bin", "rb").read()))
        total, doubled = exported.call(make_model(), jnp.ones(3))
        assert type(doubled) is Model and doubled.activation is relu, doubled
        print(float(total), doubled.weight.tolist(), doubled.shape)

        exported = export.deserialize(bytearray(open(f"{folder}/unannotated.bin", "rb").read()))
        Unannotated(3, bias=False)  # this process's first layout has no bias
        total, doubled = exported.call(Unannotated(3, bias=True), jnp.full(3, 2.0))
        print(float(total), doubled.b.tolist(), doubled.size, type(doubled).__name__)
        """,
        tmp_path,
    )
    expected, _ = _step(make_model(), jnp.ones(3))
    assert out.splitlines() == [
        f"{float(expected)} [2.0, -4.0, 6.0] (3,)",
        "6.0 [0.0, 0.0, 0.0] 3 Unannotated",
    ]


def test_serialized_names_are_module_and_qualified_name():
    from jax._src.export._export import serialization_registry

    assert serialization_registry[Model][0] == "export_fixtures:Model"
    assert serialization_registry[Unannotated][0] == "export_fixtures:Unannotated"


def test_static_value_pickle_cannot_store_is_reported_by_class_and_field():
    @pytree_class
    class Scaled:
        w: jax.Array
        fn: object = field(static=True)

    exported = export.export(jax.jit(lambda m: m))(Scaled(jnp.ones(2), lambda x: x))
    with pytest.raises(TypeError) as info:
        exported.serialize()
    message = str(info.value)
    assert "Scaled.fn" in message and "jax.export" in message and "module level" in message
    assert "non-static" in message


def _define(module_name: str, source: str) -> types.ModuleType:
    """Run ``source`` as the module ``module_name``, as a notebook cell runs again."""
    module = sys.modules.setdefault(module_name, types.ModuleType(module_name))
    exec(textwrap.dedent(source), module.__dict__)
    return module


def test_defining_a_class_again_points_its_name_at_the_new_class():
    source = """
        import jax
        from pytreekit import field, pytree_class

        @pytree_class
        class Cell:
            w: jax.Array
            n: int = field(static=True, default=1)
    """
    first = _define("interop_notebook", source).Cell
    old = export.export(jax.jit(lambda m: m))(first(jnp.ones(2), 5)).serialize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = _define("interop_notebook", source).Cell
    assert second is not first
    restored = export.deserialize(old)
    result = restored.call(second(jnp.ones(2), 5))
    assert type(result) is second and result.n == 5
    # Instances of the first definition still serialize, under the same name.
    export.export(jax.jit(lambda m: m))(first(jnp.ones(2), 5)).serialize()


def test_artifact_from_before_the_static_fields_changed_is_refused_clearly():
    cell = _define(
        "interop_notebook_changed",
        """
        import jax
        from pytreekit import field, pytree_class

        @pytree_class
        class Cell:
            w: jax.Array
            n: int = field(static=True, default=1)
        """,
    ).Cell
    old = export.export(jax.jit(lambda m: m))(cell(jnp.ones(2))).serialize()
    _define(
        "interop_notebook_changed",
        """
        @pytree_class
        class Cell:
            w: jax.Array
            n: int = field(static=True, default=1)
            name: str = field(static=True, default="a")
        """,
    )
    with pytest.raises(TypeError, match=r"static fields were \('n',\), but now.*'n', 'name'"):
        export.deserialize(old)


def test_a_name_taken_by_another_registration_warns_instead_of_failing():
    module = _define("interop_taken", "class Taken: pass\n")
    jax.tree_util.register_pytree_node(module.Taken, lambda t: ((), None), lambda a, c: None)
    export.register_pytree_node_serialization(
        module.Taken,
        serialized_name="interop_taken:Taken",
        serialize_auxdata=lambda aux: b"",
        deserialize_auxdata=lambda data: None,
    )
    with pytest.warns(RuntimeWarning, match="already registered"):
        _define(
            "interop_taken",
            """
            from pytreekit import pytree_class

            @pytree_class
            class Taken:
                pass
            """,
        )


def test_pickled_aux_data_is_not_a_lossy_format():
    """Static values round trip with their types: a tuple stays a tuple, an int an int."""
    from pytreekit._export import dump_aux, load_aux

    nodes = Model.__pytreekit_spec__.nodes
    aux = (np.cos, (2, 3))
    assert load_aux(nodes, dump_aux(nodes, aux, "test")) == aux
    with pytest.raises(ValueError, match="incompatible version"):
        load_aux(nodes, pickle.dumps((99, None, (), ())))


# -- torch --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_fixtures():
    require("torch")
    import torch_fixtures

    return torch_fixtures


def test_torch_treespec_round_trips_exactly_through_text(torch_fixtures):
    import torch.utils._pytree as torch_pytree

    layer, scaled, x = torch_fixtures.inputs()
    plain = torch_fixtures.TScaled(1.5)  # another layout of the same class
    tree = {"layer": layer, "scaled": [scaled, plain], "x": x}
    leaves, spec = torch_pytree.tree_flatten(tree)
    text = torch_pytree.treespec_dumps(spec)
    assert "torch_fixtures.TLinear" in text and "torch_fixtures.TScaled" in text
    loaded = torch_pytree.treespec_loads(text)
    assert loaded == spec
    assert loaded.child(0).context == ((3, 2),)  # tuples, not lists
    rebuilt = torch_pytree.tree_unflatten(leaves, loaded)
    assert rebuilt["layer"].shape == (3, 2) and rebuilt["scaled"][1].scale == 1.5
    assert not hasattr(rebuilt["scaled"][1], "shift")


def test_torch_export_program_is_saved_loaded_and_called_with_the_original_inputs(torch_fixtures):
    import torch

    from pytreekit._layouts import layout_for

    layer, scaled, x = torch_fixtures.inputs()
    program = torch.export.export(torch_fixtures.Net(), (layer, scaled, x))
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    # The example inputs are stored with torch.save; allowlisting their classes lets torch load
    # them with weights_only=True (it falls back to weights_only=False, logging, otherwise).
    allowed = [torch_fixtures.TLinear, torch_fixtures.TScaled, layout_for]
    with torch.serialization.safe_globals(allowed):
        loaded = torch.export.load(buffer)
    expected = torch_fixtures.Net()(layer, scaled, x)
    torch.testing.assert_close(loaded.module()(layer, scaled, x), expected)
    assert loaded.call_spec.in_spec == program.call_spec.in_spec
