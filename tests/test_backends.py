"""One declaration, three registries: jax, optree and torch.utils._pytree."""

import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import require, run_fresh

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


@pytest.mark.parametrize("backends", [("jax",), ("optree",), ("jax", "optree"), ("torch",)])
def test_torch_compile_fullgraph_builds_instances_whatever_the_class_is_registered_with(backends):
    @pytree_class(static=("scale",), backends=backends)
    class Scaled:
        def __init__(self, a, b, scale=2):
            self.a = a
            self.b = b
            self.scale = scale

    class Plain:  # the reference: the same class, not a pytree class
        def __init__(self, a, b, scale=2):
            self.a = a
            self.b = b
            self.scale = scale

    def build(cls, x):
        made = cls(x, x + 1)
        return made.a * made.scale + made.b

    # The first instance is built outside (the class learns its layout under a lock dynamo cannot
    # trace); then dynamo traces __init__, and fullgraph makes any graph break an error.
    Scaled(torch.zeros(2), torch.zeros(2))
    ours = torch.compile(lambda x: build(Scaled, x), fullgraph=True, backend="eager")
    reference = torch.compile(lambda x: build(Plain, x), fullgraph=True, backend="eager")
    assert ours(torch.ones(2)).tolist() == reference(torch.ones(2)).tolist() == [4.0, 4.0]


_EVERY_KIND_OF_CLASS = """if True:
    import sys
    import pytreekit
    from pytreekit import field, pytree_class

    if sys.argv[1] == "before":
        import torch

    @pytree_class
    class Annotated:  # a generated __init__ with a static value to check
        a: object
        scale: int = field(static=True, default=2)

    @pytree_class
    class PostInit:  # __post_init__ not proven: the instance's attributes are counted
        a: object
        scale: int = field(static=True, default=2)
        def __post_init__(self):
            self.scale = self.checked(self.scale)
        def checked(self, scale):
            return scale

    @pytree_class(static=("scale",))
    class Proven:  # one frame: only the static value checked
        def __init__(self, a, scale=2):
            self.a = a
            self.scale = scale

    @pytree_class(static=("scale",))
    class Counted:  # calls a method: its dict's order read, behind the guard
        def __init__(self, a, scale=2):
            self.a = a
            self.scale = self.checked(scale)
        def checked(self, scale):
            return scale

    @pytree_class(static=("scale",), frozen=True)
    class FrozenCounted:
        def __init__(self, a, scale=2):
            self.a = a
            self.scale = self.checked(scale)
        def checked(self, scale):
            return scale

    class Base:
        def __init__(self):
            pass

    @pytree_class(static=("scale",))
    class Super(Base):  # super(): the instance's own order is read from its dict
        def __init__(self, a, scale=2):
            super().__init__()
            self.a = a
            self.scale = scale

    @pytree_class(frozen=True)
    class FrozenAnnotated:
        a: object
        scale: int = field(static=True, default=2)

    @pytree_class
    class Factory:  # dataclasses' own default for a factory's parameter
        a: object
        scale: int = field(static=True, default=2)
        seen: list = field(default_factory=list)

    @pytree_class(static=("scale",))
    class Loop:  # attributes set in a loop
        def __init__(self, a, scale=2):
            self.scale = scale
            for name in ("a",):
                setattr(self, name, a)

    @pytree_class(static=("scale",))
    class Slots:
        __slots__ = ("a", "scale")
        def __init__(self, a, scale=2):
            self.a = a
            self.scale = scale

    @pytree_class(static=("scale",))
    class Branch:  # built with either of two layouts
        def __init__(self, a, scale=2, bias=False):
            self.a = a
            if bias:
                self.b = a
            self.scale = scale

    classes = [
        Annotated, PostInit, Proven, Counted, FrozenCounted, Super,
        FrozenAnnotated, Factory, Loop, Slots, Branch,
    ]
    for cls in classes:
        cls(1.0)  # the first instance, outside: the class learns its layout under a lock
    Branch(1.0, bias=True)  # and the other layout
    import torch

    for cls in classes:
        def build(x, cls=cls):
            made = cls(x)
            return made.a * made.scale
        compiled = torch.compile(build, fullgraph=True, backend="eager")
        print(cls.__name__, compiled(torch.ones(2)).tolist())
        torch._dynamo.reset()
"""


@pytest.mark.parametrize("torch_imported", ["before", "after"])
def test_torch_compile_fullgraph_builds_every_kind_of_class(torch_imported):
    # fullgraph makes any graph break an error: dynamo must trace each kind of generated
    # __init__ (its closure cells included) and never meet the garbage collector. Imported after
    # the classes were defined and built, torch is seen by the import hook all the same.
    printed = run_fresh(_EVERY_KIND_OF_CLASS, torch_imported)
    names = ["Annotated", "PostInit", "Proven", "Counted", "FrozenCounted", "Super"]
    names += ["FrozenAnnotated", "Factory", "Loop", "Slots", "Branch"]
    assert printed.splitlines() == [f"{name} [2.0, 2.0]" for name in names]


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


def test_the_torch_compile_guard_calls_nothing_until_torch_is_imported(tmp_path):
    # Every class's generated __init__ and observe ask whether torch.compile traces them; until
    # torch is imported (an import hook watches for it) torch.compiler is never asked.
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import types\n"
        "def refuse():\n"
        "    raise AssertionError('asked whether torch.compile traces')\n"
        "compiler = types.SimpleNamespace(is_compiling=refuse)\n"
    )
    code = """if True:
        import sys
        import pytreekit

        @pytreekit.pytree_class
        class Pair:  # annotated, its own __init__ unproven (super()): observe counts referents
            a: float
            def __init__(self, a):
                super().__init__()
                self.a = a

        @pytreekit.pytree_class
        class Counted:  # no annotations, not proven (it calls a method): checked in __init__
            def __init__(self, a):
                self.a = a
                self.set_up()
            def set_up(self):
                pass

        @pytreekit.pytree_class
        class Plain:  # no annotations: observe reads the instance dict, which dynamo traces
            def __init__(self, a):
                self.a = a

        for cls in (Pair, Counted, Plain):
            cls(1.0)  # the first instance: the code for its layout is generated
            cls(2.0)  # without torch: nothing to ask
        assert "general" in Pair.__pytreekit_spec__.init_proof
        assert "general" in Counted.__pytreekit_spec__.init_proof
        sys.path.insert(0, sys.argv[1])
        import torch  # a stand-in whose torch.compiler.is_compiling refuses to be asked
        Plain(3.0)  # never asked
        for cls in (Pair, Counted):
            try:
                cls(3.0)
            except AssertionError as error:
                print(error)
    """
    printed = run_fresh(code, tmp_path)
    assert printed.split("\n")[:2] == ["asked whether torch.compile traces"] * 2


def test_a_failed_import_of_torch_leaves_the_guard_off(tmp_path):
    # The import hook sees torch asked for, not whether it loaded: where it did not (torch not
    # installed, or broken), the first guard to ask finds out and turns itself off again.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    code = """if True:
        import sys
        import pytreekit
        from pytreekit._classes import torch_seen

        @pytreekit.pytree_class
        class Counted:
            def __init__(self, a):
                self.a = a
                self.set_up()
            def set_up(self):
                pass

        sys.path.insert(0, sys.argv[1])
        try:
            import torch
        except ImportError as error:
            print(error)
        print(torch_seen.imported)
        print([Counted(float(i)).a for i in range(3)], torch_seen.imported)
    """
    printed = run_fresh(code, tmp_path)
    assert printed.splitlines() == ["no torch here", "True", "[0.0, 1.0, 2.0] False"]


# -- a class following every backend (as Static does) -------------------------------------------


@pytest.fixture
def no_backend_in_use(monkeypatch):
    """As in a fresh process: no class follows, no backend is in use yet."""
    from pytreekit import _backends

    monkeypatch.setattr(_backends, "_followers", [])
    monkeypatch.setattr(_backends, "_in_use", set())
    return _backends


def _marker_class():
    @pytree_class
    class Marker:  # registered with JAX only, as Static is
        value: object = field(static=True)

    return Marker


def test_a_follower_joins_each_registry_with_the_first_class_and_leaves_with_it(
    no_backend_in_use, monkeypatch
):
    from pytreekit._backends import jax as jax_adapter

    Marker = _marker_class()
    no_backend_in_use.follow_every_backend(Marker)
    no_backend_in_use.follow_every_backend(Marker)  # twice is once
    marker = Marker(abs)
    assert optree.tree_leaves([marker], namespace="pytreekit") == [marker]  # optree not in use

    class First:
        x: object

    def refuse(cls, nodes):
        raise RuntimeError(f"JAX refuses {cls.__qualname__}")

    with monkeypatch.context() as patch:
        patch.setattr(jax_adapter, "register", refuse)
        with pytest.raises(RuntimeError, match=r"JAX refuses .*First"):
            pytree_class(First, backends=("jax", "optree", "torch"))
    # First's registrations were undone, and the follower's with them.
    assert optree.tree_leaves([marker], namespace="pytreekit") == [marker]
    assert torch_pytree.tree_leaves([marker]) == [marker]
    pytree_class(First, backends=("jax", "optree"))
    assert optree.tree_leaves([First(1.0), marker], namespace="pytreekit") == [1.0]
    assert torch_pytree.tree_leaves([marker]) == [marker]  # torch is not in use yet
    register_backend(Marker, "torch")  # the follower itself, by hand: registered once
    assert torch_pytree.tree_leaves([marker]) == []


def test_a_follower_refused_by_a_registry_is_registered_nowhere_new(no_backend_in_use):
    Marker = _marker_class()

    @pytree_class(backends=("jax", "optree", "torch"))
    class InUse:
        x: object

    # torch refuses a class registered there already (here by hand), after optree took it.
    torch_pytree.register_pytree_node(Marker, lambda m: ([], m.value), lambda _, v: Marker(v))
    with pytest.raises(ValueError, match="Marker"):
        no_backend_in_use.follow_every_backend(Marker)
    marker = Marker(abs)
    assert optree.tree_leaves([marker], namespace="pytreekit") == [marker]  # optree undone
    assert Marker not in no_backend_in_use._followers
    assert optree.tree_leaves(InUse(1.0), namespace="pytreekit") == [1.0]  # InUse is unharmed
