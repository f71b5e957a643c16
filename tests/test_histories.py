"""A class's tree is what it declares now and what the instance holds, whatever ran before
(issue 34): each history is built, in a fresh process where the process's past matters, and every
instance is compared with a twin registered by hand (tests/history_twins.py), in jax and optree.
"""

import copy
import functools
import sys
import textwrap
import threading

import jax
import pytest
from conftest import ROOT, TESTS, require, run_fresh
from history_twins import assert_twins, define, register_twin

import pytreekit
from pytreekit import pytree_class

# The script each fresh process starts with: Layer(w, n) and its twin, with the static names the
# process is given (argv[1]: "n" or "-" for none), and a path to write to or read from.
PRELUDE = """
import pickle, sys
import jax
from history_twins import assert_twins, define

STATIC = () if sys.argv[1] == "-" else tuple(sys.argv[1].split(","))
PATH = sys.argv[2]

def init(self, w, n):
    self.w = w
    self.n = n

Layer, Twin = define(init, STATIC)
"""


def _fresh(script: str, *args: object) -> str:
    return run_fresh(
        PRELUDE + textwrap.dedent(script), *args, pythonpath=[ROOT, TESTS], timeout=180
    )


WRITE_INSTANCE = """
with open(PATH, "wb") as f:
    pickle.dump(Layer(1.0, 3), f)
"""

WRITE_TREEDEF = """
leaves, treedef = jax.tree_util.tree_flatten(Layer(1.0, 3))
with open(PATH, "wb") as f:
    pickle.dump((leaves, treedef), f)
"""

# The new instance first checked, then the old one: the old one must not have taught the class.
READ_INSTANCE_FIRST = """
with open(PATH, "rb") as f:
    old = pickle.load(f)
assert_twins(Layer(2.0, 4), Twin(2.0, 4), STATIC)
assert_twins(old, Twin(old.w, old.n), STATIC)
assert_twins(Layer(5.0, 6), Twin(5.0, 6), STATIC)
print("checked")
"""

READ_TREEDEF_FIRST = """
with open(PATH, "rb") as f:
    leaves, treedef = pickle.load(f)
old = jax.tree_util.tree_unflatten(treedef, leaves)
assert (old.w, old.n) == (1.0, 3)
assert_twins(Layer(2.0, 4), Twin(2.0, 4), STATIC)
assert_twins(old, Twin(old.w, old.n), STATIC)
print("checked")
"""


@pytest.mark.parametrize(("written", "read"), [("n", "-"), ("-", "n"), ("n", "w"), ("w,n", "-")])
@pytest.mark.parametrize("first", ["instance", "treedef"])
def test_an_old_pickle_read_first_does_not_decide_how_new_instances_flatten(
    tmp_path, written, read, first
):
    path = tmp_path / "old.pickle"
    _fresh(WRITE_INSTANCE if first == "instance" else WRITE_TREEDEF, written, path)
    reader = READ_INSTANCE_FIRST if first == "instance" else READ_TREEDEF_FIRST
    assert _fresh(reader, read, path).strip() == "checked"


def test_redecoration_after_instances_and_treedefs_leaks_no_old_layout(tmp_path):
    script = """
    import pytreekit
    before = Layer(1.0, 3)
    leaves, treedef = jax.tree_util.tree_flatten(before)
    state = pickle.dumps(before)
    for static in [(), ("w",), ("n",), ()]:
        pytreekit.pytree_class(Layer, static=static)
        twin = type("Twin2", (), {"__init__": init})
        from history_twins import register_twin
        register_twin(twin, static)
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)  # the old treedef still loads
        assert (rebuilt.w, rebuilt.n) == (1.0, 3)
        loaded = pickle.loads(state)
        for obj in (Layer(2.0, 4), rebuilt, loaded, before):
            assert_twins(obj, twin(obj.w, obj.n), static)
    print("checked")
    """
    assert _fresh(script, "n", tmp_path / "unused").strip() == "checked"


ORDERS = """
import pytreekit

def either(self, flip):
    if flip:
        self.b = 2.0
        self.a = 1.0
    else:
        self.a = 1.0
        self.b = 2.0

body = {"b": None} if sys.argv[3] == "class-attribute" else {}
Either, EitherTwin = define(either, STATIC, name="Either", frozen=True, body=body)
first = sys.argv[4] == "b-first"
for flip in (first, not first, first, not first):
    assert_twins(Either(flip), EitherTwin(flip), STATIC)
ba, ab = Either(True), Either(False)
assert ba == ab and hash(ba) == hash(ab) and len({ba, ab}) == 1
assert repr(ba) == "Either(b=2.0, a=1.0)" and repr(ab) == "Either(a=1.0, b=2.0)"
assert [f.name for f in pytreekit.fields(ba)] == ["b", "a"]
# One treedef per order (as its twin has), the same for every instance of one order.
same = jax.tree_util.tree_structure
assert same(Either(True)) == same(ba) != same(ab) == same(Either(False))
print("checked")
"""


@pytest.mark.parametrize("static", ["-", "a", "b"])
@pytest.mark.parametrize("attribute", ["class-attribute", "none"])
@pytest.mark.parametrize("first", ["b-first", "a-first"])
def test_each_instance_has_the_fields_in_the_order_it_assigned_them(
    tmp_path, static, attribute, first
):
    assert _fresh(ORDERS, static, tmp_path, attribute, first).strip() == "checked"


@pytest.mark.parametrize("annotated", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_threads_see_the_class_as_declared_before_or_after_a_redecoration(annotated, frozen):
    def init(self, w, n):
        self.w = w
        self.n = n

    body = {"__annotations__": {"w": float, "n": int}} if annotated else {}
    Racer, _ = define(init, ("n",), name="Racer", frozen=frozen, body=body)
    declared = {("n",): [(".w", 1.0)], (): [(".w", 1.0), (".n", 3)]}
    seen: list[object] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def use() -> None:
        while not stop.is_set():
            try:
                obj = Racer(1.0, 3)
                flat = [
                    (jax.tree_util.keystr(p), leaf)
                    for p, leaf in jax.tree_util.tree_flatten_with_path(obj)[0]
                ]
                seen.append(tuple(flat))
                rebuilt = jax.tree_util.tree_map(lambda x: x, obj)
                assert (rebuilt.w, rebuilt.n) == (1.0, 3)
                assert rebuilt == obj and repr(rebuilt) == "Racer(w=1.0, n=3)"
            except BaseException as error:
                errors.append(error)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=use) for _ in range(3)]
        for thread in threads:
            thread.start()
        for i in range(200):
            pytree_class(Racer, static=("n",) if i % 2 else (), frozen=frozen)
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
    assert {tuple(v) for v in declared.values()} >= set(seen)
    # The last declaration (static n) holds for every instance built after.
    assert jax.tree_util.tree_leaves(Racer(1.0, 3)) == [1.0]
    twin = type("RacerTwin", (), {"__init__": init})
    register_twin(twin, ("n",))
    assert_twins(Racer(1.0, 3), twin(1.0, 3), ("n",))


def helped(self, w, mode):
    self.a = w
    self.b = 2.0
    self.setup(mode)  # anything may happen to self here: no proof, but the order before it holds
    self.c = 3.0


def setup(self, mode):
    if mode == "c-first":
        self.c = 0.0
    elif mode == "extra":
        self.d = 4.0
    elif mode == "drops-b":
        del self.b
    elif mode == "moves-a":  # deleted and set again: a now comes after b
        del self.a
        self.a = 5.0
    elif mode == "bound":
        self.a = self.setup
    elif mode == "unhashable":
        self.b = [2.0]


MODES = ["plain", "c-first", "extra", "drops-b", "moves-a"]


@pytest.mark.parametrize("static", [(), ("b",), ("c",)])
@pytest.mark.parametrize("first", MODES)
def test_an_init_calling_a_method_of_self_flattens_as_its_twin_in_every_history(static, first):
    # __init__ itself assigns a, b, then c, but what the call runs may store others, or delete a
    # field and set it again (which moves it last): each instance's own order is read.
    Helped, Twin = define(helped, static, name="Helped", body={"setup": setup})
    assert Helped.__pytreekit_spec__.init_proof.startswith("general: uses self other than")
    for mode in [first, *MODES, first]:
        assert_twins(Helped(1.0, mode), Twin(1.0, mode), static)
    extra, plain = Helped(1.0, "extra"), Helped(1.0, "plain")
    assert [f.name for f in pytreekit.fields(extra)] == ["a", "b", "d", "c"]
    assert [f.name for f in pytreekit.fields(plain)] == ["a", "b", "c"]
    assert [f.name for f in pytreekit.fields(Helped(1.0, "moves-a"))] == ["b", "a", "c"]


def test_an_instance_of_an_unproven_init_is_checked_as_any_other():
    Helped, _ = define(helped, ("b",), name="Helped", body={"setup": setup})
    with pytest.raises(TypeError, match=r"Helped\.a holds self\.setup"):
        Helped(1.0, "bound")
    with pytest.raises(TypeError, match=r"Helped.*'b'.*unhashable|Helped\.b.*hashable"):
        Helped(1.0, "unhashable")
    assert len(jax.tree_util.tree_leaves(Helped(1.0, "plain"))) == 2


# -- what a class's subclasses and descriptors are: the same whichever was made first -----------


def _subclass_history(sub_first: bool, annotated: bool, frozen: bool):
    """A subclass made before or after its parent is decorated again with other options."""
    if annotated:

        class Parent:
            a: float
            n: int = 2
            m: int = 3

    else:

        class Parent:  # type: ignore[no-redef]
            def __init__(self, a, n=2, m=3):
                self.a, self.n, self.m = a, n, m

    pytree_class(static=("n",))(Parent)
    if sub_first:

        class Sub(Parent):
            pass

    pytree_class(static=("n", "m"), frozen=frozen)(Parent)
    if not sub_first:

        class Sub(Parent):  # type: ignore[no-redef]
            pass

    return Sub


@pytest.mark.parametrize("annotated", [False, True], ids=["own-init", "annotated"])
@pytest.mark.parametrize("frozen", [False, True], ids=["mutable", "frozen"])
def test_a_subclass_follows_its_parent_decorated_again_whenever_it_was_made(annotated, frozen):
    """A subclass set up with its parent's options gets the options the parent has now: its
    tree, and whether it can be built, do not depend on whether it was made before."""
    trees = []
    for sub_first in (True, False):
        sub = _subclass_history(sub_first, annotated, frozen)
        obj = sub(1.0)
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        static = [f.name for f in pytreekit.fields(obj) if f.static]
        trees.append((leaves, static))
        assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
        if frozen:
            with pytest.raises(AttributeError):
                obj.a = 2.0
    assert trees[0] == trees[1] == ([1.0], ["n", "m"])


def test_decorating_a_class_that_has_subclasses_makes_them_pytree_classes_as_later_ones():
    """A library's class decorated where it is used, after its subclasses were made: they are
    pytree classes as a subclass made now is (before, repr, ==, copy and pickle of their
    instances failed inside pytreekit)."""

    class Base:
        def __init__(self, a):
            self.a = a

    class Early(Base):
        pass

    pytree_class(Base)

    class Late(Base):
        pass

    for cls in (Early, Late):
        obj = cls(1.0)
        assert pytreekit.is_pytree_class(cls)
        assert jax.tree_util.tree_leaves(obj) == [1.0]
        assert repr(obj) == f"{cls.__qualname__}(a=1.0)" and obj == cls(1.0)
        assert copy.copy(obj) == obj and copy.deepcopy(obj) == obj


@pytest.mark.parametrize("backend", ["optree", "torch"])
def test_register_backend_reaches_the_subclasses_made_before(backend):
    require(backend)

    @pytree_class
    class Base:
        def __init__(self, a):
            self.a = a

    class Early(Base):
        pass

    pytreekit.register_backend(Base, backend)

    class Late(Base):
        pass

    leaves = _leaves_in(backend)
    assert leaves(Early(1.0)) == leaves(Late(1.0)) == [1.0]


def _leaves_in(backend: str):
    if backend == "optree":
        import optree

        return lambda tree: optree.tree_leaves(tree, namespace="pytreekit")
    from torch.utils import _pytree

    return _pytree.tree_leaves


def _with_norm(cls):
    """A class decorator of the user's, stacked above @pytree_class: adds a cached property."""
    cls.norm = functools.cached_property(lambda self: float(self.w) ** 2)
    cls.norm.__set_name__(cls, "norm")
    return cls


@pytest.mark.parametrize("annotated", [False, True], ids=["own-init", "annotated"])
def test_a_cached_property_added_above_the_decorator_is_never_a_field(annotated):
    """Whichever order the decorators are stacked in, a cached property is never a field and a
    copy JAX makes computes it again from its own fields."""
    results = []
    for outer_first in (True, False):
        if annotated:

            class M:
                w: float

                def __post_init__(self):
                    assert self.norm >= 0

        else:

            class M:  # type: ignore[no-redef]
                def __init__(self, w):
                    self.w = w
                    assert self.norm >= 0

        cls = _with_norm(pytree_class(M)) if outer_first else pytree_class(_with_norm(M))
        doubled = jax.tree_util.tree_map(lambda x: 2 * x, cls(2.0))
        results.append(([f.name for f in pytreekit.fields(cls(2.0))], doubled.norm))
    assert results == [(["w"], 16.0), (["w"], 16.0)]


def _aux(obj: object) -> object:
    return jax.tree_util.tree_structure(obj).node_data()[1]


DECLARED_MODULE = """
import pytreekit


@pytreekit.pytree_class(static=("n",))
class C:
    w: float
    n: int = 3
"""

WRITE_DECLARED = """
import pickle, sys
import jax
import declared

with open(sys.argv[1], "wb") as f:
    pickle.dump(jax.tree_util.tree_structure(declared.C(1.0)), f)
"""

# The class decorated again (used first or not), then the other process's treedef read.
READ_DECLARED = """
import pickle, sys
import jax
import pytreekit
import declared

if sys.argv[2] == "used":
    jax.tree_util.tree_flatten(declared.C(5.0))
pytreekit.pytree_class(declared.C, static=("w",))
with open(sys.argv[1], "rb") as f:
    old = pickle.load(f)
rebuilt = jax.tree_util.tree_unflatten(old, [1.0])
print(rebuilt.w, rebuilt.n, jax.tree_util.tree_structure(declared.C(1.0, 3)) != old)
"""


@pytest.mark.parametrize("history", ["used", "unused"])
def test_static_values_alone_mean_the_layout_the_class_first_declared(tmp_path, history):
    """Aux data that is an annotated class's static values alone names no layout: it means the
    layout of the class's first decoration, in every process running its source, whatever the
    process did since (the class used, or decorated again before its first use)."""
    (tmp_path / "declared.py").write_text(DECLARED_MODULE)
    path = tmp_path / "treedef.pickle"
    run_fresh(WRITE_DECLARED, path, pythonpath=[ROOT, tmp_path])
    read = run_fresh(READ_DECLARED, path, history, pythonpath=[ROOT, tmp_path])
    assert read.split() == ["1.0", "3", "True"]


def test_a_subclass_s_static_values_alone_mean_its_first_set_up_s_layout():
    # The subclass hook sets a class up before @pytree_class(...) on its statement runs: that
    # set-up's layout is the one its static values alone mean, in every process (a thread may
    # have used it before the decorator ran); the decorated layout's aux data carries it.
    @pytree_class(static=("n",))
    class Parent:
        w: float
        n: int = 1

    @pytree_class(static=("mode",))
    class Child(Parent):
        mode: str = "double"

    class Automatic(Parent):
        z: float = 2.0

    assert _aux(Parent(1.0)) == (1,)
    assert _aux(Automatic(1.0)) == (1,)
    layout, *values = _aux(Child(1.0))
    assert (layout.names, layout.static_names) == (("w", "n", "mode"), ("n", "mode"))
    assert values == [1, "double"]
    for obj in (Child(1.0, 2), Automatic(1.0, 2, 3.0)):
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
        assert treedef == jax.tree_util.tree_structure(type(obj)(*leaves[:1], 2, *leaves[1:]))


GAINS_STATIC = """
import pickle, sys
import jax
from pytreekit import pytree_class

@pytree_class
class Base:
    x: float
    n: int = 3

class Sub(Base):
    z: float = 2.0

cls = Base if sys.argv[1] == "parent" else Sub
leaves, treedef = jax.tree_util.tree_flatten(cls(1.0))
state = pickle.dumps(treedef)
pytree_class(Base, static=("n",))  # the subclass follows its parent
assert len(jax.tree_util.tree_leaves(cls(1.0))) == len(leaves) - 1
for old in (treedef, pickle.loads(state)):
    rebuilt = jax.tree_util.tree_unflatten(old, [5.0] * len(leaves))
    assert type(rebuilt) is cls and (rebuilt.x, rebuilt.n) == (5.0, 5.0)
print("checked")
"""


@pytest.mark.parametrize("which", ["parent", "subclass"])
def test_a_pickled_treedef_of_a_class_without_static_fields_loads_after_it_gains_some(which):
    # Its aux data (the layout, shown as None) is read off the layout as the class has it now,
    # which is no longer the class's declared one.
    assert run_fresh(GAINS_STATIC, which, pythonpath=[ROOT]).strip() == "checked"


def test_a_subclass_used_then_set_up_again_keeps_what_its_static_values_alone_meant():
    # The subclass hook's set-up, used, declared (w, n*, z); its base decorated again sets it up
    # again, unused; then @pytree_class(...) on it replaces that set-up: the declaration made by
    # the first one, which was used, stands.
    @pytree_class(static=("n",))
    class Base:
        w: float
        n: float = 3.0

    class Child(Base):
        z: float = 2.0

    leaves, old = jax.tree_util.tree_flatten(Child(1.0))
    assert old.node_data()[1] == (3.0,)
    pytree_class(Base, static=("w",))
    pytree_class(Child, static=("w",))
    rebuilt = jax.tree_util.tree_unflatten(old, leaves)
    assert (rebuilt.w, rebuilt.n, rebuilt.z) == (1.0, 3.0, 2.0)
    assert jax.tree_util.tree_leaves(Child(1.0)) == [3.0, 2.0]
