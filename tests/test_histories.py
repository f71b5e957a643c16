"""A class's tree is what it declares now and what the instance holds, whatever ran before
(issue 34): each history is built, in a fresh process where the process's past matters, and every
instance is compared with a twin registered by hand (tests/history_twins.py), in jax and optree.
"""

import sys
import textwrap
import threading

import jax
import pytest
from conftest import ROOT, TESTS, run_fresh
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
