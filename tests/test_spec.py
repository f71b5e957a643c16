"""Per-class metadata: the fields it reports, and a class's spec arriving by value in a process."""

import pickle
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest
from conftest import ROOT, require, run_fresh

import pytreekit
from pytreekit import field, pytree_class


def test_fields_of_an_instance_with_a_single_string_slot():
    @pytree_class
    class OneSlot:
        __slots__ = "w"  # a string names one slot, as in Python

        def __init__(self):
            self.w = jnp.ones(1)

    one = OneSlot()
    assert [(f.name, f.static) for f in pytreekit.fields(one)] == [("w", False)]
    assert jax.tree_util.tree_leaves(one) == [one.w]


def test_annotated_class_inheriting_the_generic_eq_compares_its_declared_fields():
    @pytree_class(eq=False)
    class Declared:
        x: jax.Array
        n: int = field(static=True, default=0)

    @pytree_class
    class Discovered:
        def __init__(self, y):
            self.y = y

    class Both(
        Declared, Discovered
    ):  # annotated (its first pytree base is); __eq__ is Discovered's
        pass

    assert Both.__eq__ is Discovered.__eq__
    assert Both(jnp.ones(2)) == Both(jnp.ones(2))
    assert Both(jnp.ones(2)) != Both(jnp.zeros(2))
    assert Both(jnp.ones(2)) != Both(jnp.ones(2), n=1)


_SENDER = """
import sys

import cloudpickle
import jax
import jax.numpy as jnp

import pytreekit


@pytreekit.pytree_class(static=("n",))
class Remote:
    def __init__(self, n):
        self.n = n
        self.w = jnp.arange(n, dtype=jnp.float32)

    def __call__(self, x):
        return (self.w * x).sum()


@pytreekit.pytree_class(frozen=True)
class RemoteAnnotated:
    a: jax.Array
    k: int = pytreekit.field(static=True, default=2)


sys.stdout.buffer.write(cloudpickle.dumps((Remote(3), RemoteAnnotated(jnp.ones(2)))))
"""


def _pickled_by(sender: str) -> bytes:
    """What ``sender`` writes: instances of classes defined in another process's ``__main__``,
    pickled by value."""
    require("cloudpickle")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(sender)],
        capture_output=True,
        cwd=ROOT,
        env={"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.fixture(scope="module")
def pickled_elsewhere():
    return _pickled_by(_SENDER)


def test_classes_pickled_by_value_arrive_registered(pickled_elsewhere):
    plain, annotated = pickle.loads(pickled_elsewhere)
    assert pytreekit.is_pytree_class(plain) and pytreekit.is_pytree_class(annotated)
    assert [(f.name, f.static) for f in pytreekit.fields(plain)] == [("n", True), ("w", False)]
    assert [(f.name, f.static) for f in pytreekit.fields(type(annotated))] == [
        ("a", False),
        ("k", True),
    ]
    assert jax.grad(lambda m: m(2.0))(plain).w.tolist() == [2.0, 2.0, 2.0]
    leaves, treedef = jax.tree_util.tree_flatten(annotated)
    assert len(leaves) == 1 and jax.tree_util.tree_unflatten(treedef, leaves) == annotated
    assert jax.jit(lambda m: m)(annotated) == annotated


_SUBCLASS_SENDER = """
import sys

import cloudpickle
import jax
import jax.numpy as jnp

import pytreekit


@pytreekit.pytree_class(static=("n",))
class Parent:
    w: jax.Array
    n: int = 1


class Child(Parent):  # a pytree class by inheritance: its own field comes after the parent's
    c: float = 0.0


@pytreekit.pytree_class(static=("mode",))
class Decorated(Parent):
    mode: str = "double"


@pytreekit.pytree_class
class Slotted:
    __slots__ = ("w", "b")

    def __init__(self, w):
        self.w = w
        self.b = w + 1


@pytreekit.pytree_class(static=("s",))
class Own:
    def __init__(self, w, s=1):
        self.w = w
        self.s = s


@pytreekit.pytree_class(static=("s", "q"))
class OwnChild(Own):  # its layouts are learnt from its instances: one travels in its treedef
    def __init__(self, w):
        super().__init__(w)
        self.q = 7


sent = (Child(jnp.ones(2), 2, 5.0), Decorated(jnp.ones(2)), Slotted(1.0), OwnChild(jnp.ones(2)))
sent += (tuple(map(jax.tree_util.tree_structure, sent)),)
sys.stdout.buffer.write(cloudpickle.dumps(sent))
"""


def test_subclasses_and_slots_pickled_by_value_arrive_as_they_were_declared():
    # A subclass arrives as an empty class first, which the subclass hook sets up with its
    # parent's options; what arrives replaces that set-up: its own fields and static names.
    child, decorated, slotted, own, treedefs = pickle.loads(_pickled_by(_SUBCLASS_SENDER))
    assert [(f.name, f.static) for f in pytreekit.fields(child)] == [
        ("w", False),
        ("n", True),
        ("c", False),
    ]
    assert jax.jit(lambda o: o.w + o.c)(child).tolist() == [6.0, 6.0]
    assert jax.jit(lambda o: o.w + o.c)(type(child)(jnp.ones(2), 1, 2.0)).tolist() == [3.0, 3.0]
    assert [(f.name, f.static) for f in pytreekit.fields(decorated)] == [
        ("w", False),
        ("n", True),
        ("mode", True),
    ]
    assert len(jax.tree_util.tree_leaves(decorated)) == 1
    assert jax.tree_util.tree_leaves(slotted) == [1.0, 2.0]
    # The treedefs sent with them (static values alone in their aux data, as the sender made
    # them) equal those of instances made here: jit's caches hold one entry for both.
    made_here = (
        type(child)(jnp.ones(2), 2, 5.0),
        type(decorated)(jnp.ones(2)),
        slotted,
        type(own)(jnp.ones(2)),
    )
    assert tuple(map(jax.tree_util.tree_structure, made_here)) == treedefs
    assert tuple(map(jax.tree_util.tree_structure, (child, decorated, slotted, own))) == treedefs
    assert jax.tree_util.tree_unflatten(treedefs[3], [jnp.zeros(2)]).q == 7
    # Sent on again (a worker returning a result): nothing of the class refers to itself.
    cloudpickle = require("cloudpickle")
    for obj in (child, decorated, slotted, own):
        again = pickle.loads(cloudpickle.dumps(obj))
        assert jax.tree_util.tree_structure(again) == jax.tree_util.tree_structure(obj)


def test_a_class_arriving_again_keeps_its_one_registration(pickled_elsewhere):
    first, _ = pickle.loads(pickled_elsewhere)
    spec = type(first).__pytreekit_spec__
    again, _ = pickle.loads(pickled_elsewhere)  # the same class, tracked: not registered twice
    assert type(again) is type(first) and type(again).__pytreekit_spec__ is spec
    assert jax.tree_util.tree_leaves(again)[0].tolist() == [0.0, 1.0, 2.0]


_TREEDEF_SENDER = """
import sys

import cloudpickle
import jax

import pytreekit


@pytreekit.pytree_class
class Plain:  # no annotations: its treedefs carry its layout
    def __init__(self, a, b):
        self.a = a
        self.b = b


later = Plain(1.0, 2.0)
del later.b  # another layout than the primary, learnt in the sender
obj = Plain(1.0, 2.0)
sent = (Plain, obj, jax.tree_util.tree_structure(obj), jax.tree_util.tree_structure(later))
sys.stdout.buffer.write(cloudpickle.dumps(sent))
"""


def test_a_treedef_sent_with_its_class_by_value_equals_its_instances_treedefs():
    # The layouts in the treedefs are unpickled before the class's table exists: the table the
    # arriving class builds adopts them, so they are the ones its instances flatten to.
    cls, obj, treedef, other = pickle.loads(_pickled_by(_TREEDEF_SENDER))
    assert jax.tree_util.tree_structure(obj) == treedef
    assert jax.tree_util.tree_structure(cls(3.0, 4.0)) == treedef
    assert treedef.flatten_up_to(obj) == [1.0, 2.0]
    rebuilt = jax.tree_util.tree_unflatten(other, [5.0])
    assert jax.tree_util.tree_structure(rebuilt) == other and vars(rebuilt)["a"] == 5.0


_DECLARED_SENDER = """
import sys

import cloudpickle
import jax

import pytreekit


@pytreekit.pytree_class(static=("n",))
class Redecorated:
    w: float
    n: int = 3


old = jax.tree_util.tree_structure(Redecorated(1.0))  # (3,): the static values alone
pytreekit.pytree_class(Redecorated, static=("w",))  # now (w*, n): its aux data names it


@pytreekit.pytree_class(static=("n",))
class Parent:
    w: float
    n: int = 1


def prototyped(cls):  # a class decorator that flattens an instance: the set-up is used
    jax.tree_util.tree_flatten(cls(0.0))
    return cls


@pytreekit.pytree_class(static=("mode",))
@prototyped
class Child(Parent):
    mode: str = "double"


sent = (Redecorated, old, Child, jax.tree_util.tree_structure(Child(1.0)))
sys.stdout.buffer.write(cloudpickle.dumps(sent))
"""


def test_a_class_sent_by_value_reads_static_values_alone_as_it_did_where_it_was_sent_from():
    # What a class's static values alone mean travels with it: a treedef made before it was
    # decorated again unflattens to the values it was made from, and the treedefs made here
    # are those the sender makes (a worker's result sent back unflattens there).
    redecorated, old, child, child_treedef = pickle.loads(_pickled_by(_DECLARED_SENDER))
    rebuilt = jax.tree_util.tree_unflatten(old, [1.0])
    assert (rebuilt.w, rebuilt.n) == (1.0, 3)
    made_here = jax.tree_util.tree_structure(redecorated(1.0, 3))
    assert made_here != old and jax.tree_util.tree_unflatten(made_here, [3]).n == 3
    assert jax.tree_util.tree_structure(child(1.0)) == child_treedef


def test_the_modules_pickles_name_are_imported_so_cloudpickle_names_them():
    # cloudpickle pickles a function by value where its module is not imported: pytreekit's own
    # code would travel, and with it what its globals hold.
    out = run_fresh(
        "import sys, pytreekit\n"
        "print(sorted(m for m in ('pytreekit._layouts', 'pytreekit._references',"
        " 'pytreekit._wrappers') if m in sys.modules))\n"
    )
    assert out.strip() == "['pytreekit._layouts', 'pytreekit._references', 'pytreekit._wrappers']"


_THREADED_RECEIVER = """
import os, pickle, sys, threading
import jax
import pytreekit

sys.setswitchinterval(1e-6)
blob = open(sys.argv[1], "rb").read()
results, errors = [], []
barrier = threading.Barrier(8)


def receive():
    barrier.wait()
    try:
        cls, treedefs, instances = pickle.loads(blob)
        structure = jax.tree_util.tree_structure
        results.append(all(t == structure(i) for t, i in zip(treedefs, instances)))
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")


threads = [threading.Thread(target=receive) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(results.count(True), errors)
"""

_THREADED_SENDER = """
import sys

import cloudpickle
import jax

import pytreekit


@pytreekit.pytree_class
class Sometimes:
    def __init__(self, a, b=None):
        self.a = a
        if b is not None:
            self.b = b


instances = [Sometimes(1.0), Sometimes(1.0, 2.0)]
treedefs = [jax.tree_util.tree_structure(i) for i in instances]
sys.stdout.buffer.write(cloudpickle.dumps((Sometimes, treedefs, instances)))
"""


def test_threads_unpickling_one_class_by_value_register_it_once(tmp_path):
    (tmp_path / "blob").write_bytes(_pickled_by(_THREADED_SENDER))
    for _ in range(3):  # a race: several tries
        out = run_fresh(_THREADED_RECEIVER, tmp_path / "blob")
        assert out.strip() == "8 []", out


_ECHO = """
import pickle, sys
import cloudpickle
import pytreekit

sys.stdout.buffer.write(cloudpickle.dumps(pickle.loads(sys.stdin.buffer.read())))
"""


def test_a_class_sent_by_value_that_comes_back_keeps_how_it_is_decorated_here():
    # A worker sends back the class it was sent (with a result): cloudpickle finds the class it
    # came from, which keeps its spec here, not the one it was sent with.
    cloudpickle = require("cloudpickle")

    @pytreekit.pytree_class(static=("n",))
    class Base:
        w: float
        n: float = 3.0

    class Child(Base):
        z: float = 2.0

    assert jax.tree_util.tree_leaves(Child(1.0)) == [1.0, 2.0]
    sent = cloudpickle.dumps(Child)
    pytreekit.pytree_class(Base, static=("w",))  # meanwhile, here
    result = subprocess.run(
        [sys.executable, "-c", _ECHO],
        input=sent,
        capture_output=True,
        env={"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert pickle.loads(result.stdout) is Child
    assert jax.tree_util.tree_leaves(Child(1.0)) == [3.0, 2.0]


_RECEIVED_SUBCLASS_SENDER = """
import sys

import cloudpickle

import pytreekit


@pytreekit.pytree_class(static=("n",))
class Base:
    w: float
    n: float = 3.0


class Child(Base):  # set up by the subclass hook
    z: float = 2.0


sys.stdout.buffer.write(cloudpickle.dumps((Base, Child)))
"""


def test_a_subclass_received_by_value_follows_its_parent_decorated_again_here():
    # As where it was sent from: the subclass hook set it up, so it is set up again.
    base, child = pickle.loads(_pickled_by(_RECEIVED_SUBCLASS_SENDER))
    assert jax.tree_util.tree_leaves(child(1.0)) == [1.0, 2.0]
    pytreekit.pytree_class(base, static=("w",))
    assert jax.tree_util.tree_leaves(child(1.0)) == [3.0, 2.0]
