"""Decoration is all or nothing: under threads, and when a registry refuses a class."""

import sys
import threading

import jax
import jax.numpy as jnp
import pytest
from conftest import require

from pytreekit import is_pytree_class, pytree_class


@pytest.fixture
def optree():
    # Only the tests of optree refusing a class need it; the thread tests run without it.
    return require("optree")  # skips, or fails where PYTREEKIT_REQUIRE_BACKENDS names it


def _annotated():
    class Model:
        w: jax.Array
        n: float = 2.0

        def __call__(self, x):
            return self.w * x * self.n

    return Model


def _unannotated():
    class Model:
        def __init__(self, w, n=2.0):
            self.w = w
            self.n = n

        def __call__(self, x):
            return self.w * x * self.n

    return Model


def _works(cls, static=False):
    model = cls(jnp.ones(2))
    doubled = jax.tree.map(lambda a: a * 2, model)
    assert type(doubled) is cls and doubled.w.tolist() == [2.0, 2.0]
    assert len(jax.tree_util.tree_leaves(model)) == (1 if static else 2)
    assert jax.grad(lambda m: m(1.0).sum())(model).w.tolist() == [2.0, 2.0]


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("make", [_annotated, _unannotated])
def test_eight_threads_decorating_one_class_end_with_one_working_class(make, fast_switching):
    for _ in range(25):
        cls = make()
        barrier = threading.Barrier(8)
        results, errors = [], []

        def decorate(cls=cls, barrier=barrier, results=results, errors=errors):
            barrier.wait()
            try:
                results.append(pytree_class(cls, static=("n",)))
            except Exception as error:  # pragma: no cover - the assertion below shows it
                errors.append(error)

        threads = [threading.Thread(target=decorate) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and len(results) == 8
        assert all(result is cls for result in results)
        _works(cls, static=True)


def _refused_by_optree(cls, optree):
    optree.register_pytree_node(
        cls, lambda o: ((), None), lambda aux, children: cls.__new__(cls), namespace="pytreekit"
    )


@pytest.mark.parametrize("make", [_annotated, _unannotated])
def test_optree_refusing_a_new_class_leaves_jax_and_the_class_as_they_were(make, optree):
    cls = make()
    _refused_by_optree(cls, optree)
    namespace = dict(vars(cls))
    with pytest.raises(ValueError, match=cls.__qualname__):
        pytree_class(cls, backends=("jax", "optree"))
    assert dict(vars(cls)) == namespace and not is_pytree_class(cls)
    bare = cls.__new__(cls)
    assert jax.tree_util.tree_leaves(bare) == [bare]  # not registered with JAX
    optree.unregister_pytree_node(cls, namespace="pytreekit")
    assert pytree_class(cls) is cls  # a plain decoration works afterwards
    _works(cls)


@pytest.mark.parametrize("make", [_annotated, _unannotated])
def test_jax_refusing_a_class_undoes_optree(make, monkeypatch, optree):
    from pytreekit._backends import jax as jax_adapter

    def refuse(cls, nodes):
        raise RuntimeError(f"JAX refuses {cls.__qualname__}")

    monkeypatch.setattr(jax_adapter, "register", refuse)
    cls = make()
    namespace = dict(vars(cls))
    with pytest.raises(RuntimeError, match="JAX refuses"):
        pytree_class(cls, backends=("jax", "optree"))
    bare = cls.__new__(cls)
    assert optree.tree_leaves(bare, namespace="pytreekit") == [bare]
    assert dict(vars(cls)) == namespace and not is_pytree_class(cls)
    monkeypatch.undo()
    assert pytree_class(cls, backends=("jax", "optree")) is cls
    _works(cls)


def test_a_class_registered_with_jax_by_hand_is_refused_before_any_registry_is_touched(optree):
    cls = _annotated()
    jax.tree_util.register_pytree_node(cls, lambda o: ((), None), lambda a, c: cls.__new__(cls))
    with pytest.raises(TypeError, match=rf"{cls.__qualname__}.*already registered with jax"):
        pytree_class(cls, backends=("jax", "optree"))
    bare = cls.__new__(cls)
    assert optree.tree_leaves(bare, namespace="pytreekit") == [bare]


def test_torch_refusing_a_class_leaves_jax_and_a_subclass_as_they_were():
    torch_pytree = require("torch.utils._pytree")
    Base = pytree_class(_annotated())

    class Sub(Base):
        pass

    torch_pytree.register_pytree_node(Base, lambda o: ([], None), lambda v, c: Base.__new__(Base))
    try:
        namespace, sub_namespace = dict(vars(Base)), dict(vars(Sub))
        with pytest.raises(ValueError):
            pytree_class(Base, backends=("torch",))
        assert dict(vars(Base)) == namespace and dict(vars(Sub)) == sub_namespace
        _works(Base)
        _works(Sub)
    finally:  # the hand registration, from torch's Python and C++ (optree) registries alike
        from pytreekit._compat import unregister_from_torch

        unregister_from_torch(Base)
    assert pytree_class(Base, backends=("torch",)) is Base  # now it is accepted
    leaves, _ = torch_pytree.tree_flatten(Base(jnp.ones(2)))
    assert len(leaves) == 2
