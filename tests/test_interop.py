"""Pytree classes inside other libraries' machinery: jax.export and torch.export artifacts that
store the class, and (below) third-party decorators and introspection on generated methods."""

from __future__ import annotations

import io
import os
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
from conftest import TESTS, require, run_fresh
from export_fixtures import Model, Unannotated, make_model
from jax import export

import pytreekit
from pytreekit import field, pytree_class

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
    out = run_fresh(
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

    # pytreekit registers a class's serialization at its first use as a pytree.
    jax.tree_util.tree_flatten((make_model(), Unannotated(3, bias=True)))
    assert serialization_registry[Model][0] == "export_fixtures:Model"
    assert serialization_registry[Unannotated][0] == "export_fixtures:Unannotated"


def test_static_value_static_data_cannot_store_is_reported_by_class_and_field():
    @pytree_class
    class Scaled:
        w: jax.Array
        size: int = field(static=True)
        fn: object = field(static=True)

    exported = export.export(jax.jit(lambda m: m))(Scaled(jnp.ones(2), 2, lambda x: x))
    with pytest.raises(TypeError) as info:
        exported.serialize()
    message = str(info.value)
    assert "Scaled.fn holds a function" in message and "jax.export" in message
    assert "lambda" in message and "module level" in message
    assert "pytreekit.pickle_static_fields (unsafe" in message


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
    with pytest.raises(ValueError, match=r"Cell: it was written when its fields were \(.w., .n.\)"):
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


def test_registration_by_hand_stands():
    """A class registered for serialization by hand before it joins the jax backend keeps that
    registration (and its name)."""
    require("optree")

    @pytree_class(backends=("optree",))
    class ByHand:
        w: jax.Array
        n: int = field(static=True, default=1)

    export.register_pytree_node_serialization(
        ByHand,
        serialized_name="interop:ByHand",
        serialize_auxdata=lambda aux: str(aux[0]).encode(),  # aux: the static values, (n,)
        deserialize_auxdata=lambda data: (int(data),),
        from_children=lambda aux, children: ByHand(*children, *aux),
    )
    pytreekit.register_backend(ByHand, "jax")
    serialized = export.export(jax.jit(lambda m: m))(ByHand(jnp.ones(2), 7)).serialize()
    assert b"interop:ByHand" in serialized
    assert export.deserialize(serialized).call(ByHand(jnp.ones(2), 7)).n == 7


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("jax._src.export._export", "serialization_registry"),
        ("jax._src.export._export", "deserialization_registry"),
        ("jax._src.tree_util", "_registry"),
        ("dataclasses", "_FIELD_INITVAR"),
        ("dataclasses", "_is_type"),
    ],
)
def test_a_private_api_that_moved_is_a_clear_error_at_import_not_a_silent_fallback(module, name):
    # The module as a later version might have it: the same, but for that one name. JAX's own
    # modules are imported first (jax.export is not imported by `import jax` in every version,
    # and importing it reads jax._src.tree_util._registry itself).
    script = (
        f"import sys, types, jax, jax.export, {module} as real\n"
        f"class Moved(types.ModuleType):\n"
        f"    def __getattr__(self, attr):\n"
        f"        if attr == {name!r}:\n"
        f"            raise AttributeError(attr)\n"
        f"        return getattr(real, attr)\n"
        f"sys.modules[{module!r}] = Moved({module!r})\n"
        f"parent, _, child = {module!r}.rpartition('.')\n"
        f"if parent:\n"
        f"    setattr(sys.modules[parent], child, sys.modules[{module!r}])\n"
        f"import pytreekit\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=120,
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("pytreekit._compat.PrivateAPIMoved: pytreekit needs ")
    assert f"{module}.{name}" in last and "Please report it" in last


@pytest.mark.parametrize(
    "name", ["_deregister_pytree_node", "_cxx_pytree_pending_imports", "_cxx_pytree_imported"]
)
def test_a_torch_private_api_that_moved_is_a_clear_error_when_a_registration_is_undone(
    name, monkeypatch
):
    # torch's registry is read only to undo a registration another registry refused.
    torch_pytree = require("torch.utils._pytree")
    from pytreekit._compat import PrivateAPIMoved, unregister_from_torch

    class Refused:  # registered, as pytreekit had registered it before the refusal
        pass

    torch_pytree.register_pytree_node(Refused, lambda o: ([], None), lambda v, c: Refused())
    monkeypatch.delattr(torch_pytree, name)
    with pytest.raises(PrivateAPIMoved, match=rf"torch\.utils\._pytree\.{name} \(to undo a"):
        unregister_from_torch(Refused)


def test_aux_data_is_not_a_lossy_format():
    """Static values round trip with their types: a tuple stays a tuple, an int an int."""
    from pytreekit._artifacts.export import dump_aux, load_aux

    @pytree_class(static=("fn", "shape"))
    class Shaped:
        def __init__(self):
            self.fn, self.shape, self.w = np.cos, (2, 3), jnp.ones(1)

    nodes = Shaped.__pytreekit_spec__.nodes
    aux = jax.tree_util.tree_flatten(Shaped())[1].node_data()[1]
    assert aux[1:] == (np.cos, (2, 3))
    assert load_aux(nodes, dump_aux(aux, "test")) == aux
    with pytest.raises(ValueError, match=r"Shaped: .*pickle by an unknown writer \(format 99\)"):
        load_aux(nodes, pickle.dumps((99, None, (), ())))
    with pytreekit.allow_pickled_artifacts(Shaped):  # issue 33: the permission names classes
        with pytest.raises(ValueError, match=r"Shaped: .*no static data .*\(format 99;"):
            load_aux(nodes, pickle.dumps((99, None, (), ())))
        with pytest.raises(ValueError, match="format None"):
            load_aux(nodes, pickle.dumps("not a tuple"))


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
    assert loaded.child(0).context == spec.child(0).context  # the static values (annotated)
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


# -- beartype, jaxtyping and introspection ------------------------------------------------------


@pytest.fixture(scope="module", params=["postponed", "eager"])
def typed(request, tmp_path_factory):
    """tests/typed_fixtures.py as written (postponed annotations) and without its __future__
    import (annotations evaluated when the class is defined)."""
    require("beartype")
    require("jaxtyping")
    import importlib

    if request.param == "postponed":
        module = importlib.import_module("typed_fixtures")
        assert isinstance(module.Affine.__init__.__annotations__["weight"], str)
        return module
    source = (TESTS / "typed_fixtures.py").read_text()
    eager = source.replace("from __future__ import annotations\n", "")
    assert eager != source
    folder = tmp_path_factory.mktemp("eager")
    (folder / "typed_fixtures_eager.py").write_text(eager)
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module("typed_fixtures_eager")
    finally:
        sys.path.remove(str(folder))
    assert not isinstance(module.Affine.__init__.__annotations__["weight"], str)
    return module


def test_jaxtyped_init_accepts_and_rejects_naming_the_class(typed):
    affine = typed.Affine(jnp.eye(2), jnp.zeros(2))
    assert affine(jnp.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(Exception, match=rf"{typed.__name__}\.Affine\.__init__") as info:
        typed.Affine(jnp.eye(2), jnp.zeros(3))  # n is 2, then 3
    assert type(info.value).__name__ == "TypeCheckError"
    with pytest.raises(Exception, match=r"Affine\.__init__"):
        typed.Affine(jnp.eye(2, dtype=jnp.int32), jnp.zeros(2))  # not floating


def test_jaxtyped_method_checks_under_jit_and_names_the_class(typed):
    affine = typed.Affine(jnp.eye(2), jnp.zeros(2))
    assert jax.jit(lambda m, x: m(x))(affine, jnp.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(Exception, match=r"Affine\.__call__"):
        jax.jit(lambda m, x: m(x))(affine, jnp.ones(2, jnp.int32))  # not floating
    # Unflattening does not run the checked __init__ (JAX rebuilds with tracers and sentinels).
    assert jax.tree.map(lambda a: a.astype(jnp.int32), affine).weight.dtype == jnp.int32


def test_beartype_on_the_class_checks_generated_and_written_methods(typed):
    scale = typed.Scale(jnp.ones(2))
    assert scale.twice(1.0).times == 2 and repr(scale).startswith("Scale(")
    assert scale == scale  # the generated (and checked) __eq__ runs
    with pytest.raises(Exception, match=rf"{typed.__name__}\.Scale\.__init__\(\) parameter times"):
        typed.Scale(jnp.ones(2), "once")
    with pytest.raises(Exception, match=r"Scale\.twice\(\) parameter extra"):
        scale.twice("x")
    assert jax.tree.map(lambda a: a + 1, scale).factor.tolist() == [2.0, 2.0]


def test_user_init_of_unannotated_class_is_checked(typed):
    written = typed.Written(jnp.ones(3), 3)
    assert written.grow(1).size == 4
    with pytest.raises(Exception, match=r"Written\.__init__"):
        typed.Written(jnp.ones(3), "three")
    with pytest.raises(Exception, match=r"Written\.grow\(\) parameter by"):
        written.grow(1.5)


def _generated(cls):
    """The methods pytreekit wrote into ``cls`` (the user wrote neither of these)."""
    return {
        name: value
        for name, value in vars(cls).items()
        if callable(value) and name.startswith("__") and name not in ("__call__",)
    }


@pytest.mark.parametrize("name", ["Affine", "Scale"])
def test_type_hints_of_every_generated_method_resolve(typed, name):
    import typing

    cls = getattr(typed, name)
    methods = _generated(cls)
    assert {"__init__", "__repr__", "__eq__"} <= set(methods)
    hints = {name: typing.get_type_hints(method) for name, method in methods.items()}
    assert hints["__repr__"] == {"return": str}
    assert hints["__eq__"]["other"] is object
    assert hints["__init__"]["return"] is type(None)
    if name == "Scale":
        assert hints["__init__"]["factor"] is jax.Array and hints["__init__"]["times"] is int


def test_signature_of_the_class(typed):
    import inspect

    signature = inspect.signature(typed.Affine, eval_str=True)
    assert list(signature.parameters) == ["weight", "bias", "name"]
    assert signature.parameters["name"].default == "affine"
    assert signature.parameters["name"].annotation is str
    assert signature.return_annotation is None
    scale = inspect.signature(typed.Scale, eval_str=True)
    assert scale.parameters["factor"].annotation is jax.Array
    written = inspect.signature(typed.Written, eval_str=True)
    assert list(written.parameters) == ["w", "size"]


def test_beartype_below_the_decorator_checks_only_the_methods_it_saw():
    """Decorators apply bottom-up: beartype under @pytree_class sees the user's methods, not the
    generated __init__ (put @beartype above @pytree_class to check that too)."""
    from beartype import beartype

    @pytree_class
    @beartype
    class Inner:
        w: jax.Array

        def scaled(self, k: int) -> jax.Array:
            return self.w * k

    inner = Inner(jnp.ones(2))
    assert inner.scaled(2).tolist() == [2.0, 2.0]
    with pytest.raises(Exception, match=r"Inner\.scaled\(\) parameter k"):
        inner.scaled("2")
    assert jax.tree.leaves(Inner("unchecked")) == ["unchecked"]
