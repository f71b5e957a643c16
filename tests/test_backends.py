"""One declaration, three registries: jax, optree and torch.utils._pytree."""

import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import require

import pytreekit
from pytreekit import BackendNotInstalledError, field, pytree_class, register_backend

optree = require("optree")
torch = require("torch")
torch_pytree = pytest.importorskip("torch.utils._pytree")


@pytree_class(backends=("jax", "optree", "torch"))
class Pair:
    a: object
    b: object
    n: int = field(static=True, default=2)


@pytree_class(static=("size",), backends=("jax", "optree", "torch"))
class Unannotated:
    def __init__(self, size):
        self.size = size
        self.w = [1.0] * size
        self.bias = 0.5


def _flatteners():
    return {
        "jax": (jax.tree_util.tree_flatten, jax.tree_util.tree_unflatten, jax.tree_util.tree_map),
        "optree": (
            lambda t: optree.tree_flatten(t, namespace="pytreekit"),
            optree.tree_unflatten,
            lambda f, t: optree.tree_map(f, t, namespace="pytreekit"),
        ),
        "torch": (
            torch_pytree.tree_flatten,
            lambda spec, leaves: torch_pytree.tree_unflatten(leaves, spec),
            torch_pytree.tree_map,
        ),
    }


@pytest.mark.parametrize("backend", ["jax", "optree", "torch"])
@pytest.mark.parametrize("obj", [Pair(1.0, [2.0, 3.0], n=7), Unannotated(2)], ids=type)
def test_round_trip_and_map_in_every_registry(backend, obj):
    flatten, unflatten, tree_map = _flatteners()[backend]
    leaves, spec = flatten(obj)
    assert leaves == jax.tree_util.tree_leaves(obj)
    rebuilt = unflatten(spec, leaves)
    assert type(rebuilt) is type(obj) and rebuilt == obj
    doubled = tree_map(lambda x: x * 2, obj)
    assert jax.tree_util.tree_leaves(doubled) == [2 * x for x in leaves]
    static = "n" if isinstance(obj, Pair) else "size"
    assert getattr(doubled, static) == getattr(obj, static)  # static fields are not leaves


def test_key_paths_name_the_attributes_everywhere():
    pair = Pair(1.0, [2.0])
    jax_paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(pair)[0]]
    torch_paths = [torch_pytree.keystr(p) for p, _ in torch_pytree.tree_flatten_with_path(pair)[0]]
    optree_paths = optree.tree_paths(pair, namespace="pytreekit")
    assert jax_paths == [".a", ".b[0]"]
    assert torch_paths == [".a", ".b[0]"]
    assert optree_paths == [("a",), ("b", 0)]
    accessors = optree.tree_accessors(pair, namespace="pytreekit")
    assert [a(pair) for a in accessors] == [1.0, 2.0]
    assert "*.a" in repr(accessors[0])  # optree shows attribute access for GetAttrEntry


def test_subclasses_inherit_backends():
    class Triple(Pair):
        c: object = None

    triple = Triple(1.0, 2.0, 3, 4.0)
    assert torch_pytree.tree_leaves(triple) == [1.0, 2.0, 4.0]
    assert optree.tree_leaves(triple, namespace="pytreekit") == [1.0, 2.0, 4.0]


def test_register_backend_later_for_third_party_classes():
    @pytree_class
    class ThirdParty:
        x: object

    obj = ThirdParty(3.0)
    assert optree.tree_leaves(obj, namespace="pytreekit") == [obj]  # not registered: a leaf
    register_backend(ThirdParty, "optree")
    register_backend(ThirdParty, "optree")  # twice is harmless
    assert optree.tree_leaves(obj, namespace="pytreekit") == [3.0]
    with pytest.raises(ValueError, match=r"unknown pytree backend 'tensorflow'"):
        register_backend(ThirdParty, "tensorflow")
    with pytest.raises(TypeError, match=r"register_backend\(\) expects a @pytree_class"):
        register_backend(int, "optree")


def test_torch_compile_sees_through_the_class():
    pair = Pair(torch.ones(2), torch.arange(2.0))
    compiled = torch.compile(lambda p: p.a * 2 + p.b, backend="eager")
    np.testing.assert_allclose(compiled(pair).numpy(), [2.0, 3.0])


@pytest.mark.parametrize(("backend", "module"), [("optree", "optree"), ("torch", "torch")])
def test_missing_backend_library_says_what_to_install(monkeypatch, backend, module):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` fail

    class Wanting:
        x: object

    with pytest.raises(
        BackendNotInstalledError,
        match=rf"Wanting asks for the '{backend}'.*"
        rf"Install it with: pip install {backend}",
    ) as error:
        pytree_class(Wanting, backends=("jax", backend))
    assert isinstance(error.value, ImportError)
    # PyPI's default torch on Linux is the multi-GB CUDA build: the advice names the CPU index.
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu"
    assert (cpu_index in str(error.value)) == (backend == "torch")
    assert not pytreekit.is_pytree_class(Wanting)  # nothing was half-done


def test_missing_backend_seen_through_builtins_import(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def refusing(name, *args, **kwargs):
        if name.split(".")[0] == "optree":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refusing)
    with pytest.raises(BackendNotInstalledError, match=r"Install it with: pip install optree\."):

        @pytree_class(backends=("optree",))
        class Refused:
            x: object


def test_import_pytreekit_imports_neither_torch_nor_optree():
    code = (
        "import sys, pytreekit; print(sorted(m for m in ('torch', 'optree') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
