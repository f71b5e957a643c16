"""Behaviours every kind of pytree class shares, over the catalogue of tests/catalogue.py."""

import copy
import functools
import pickle

import jax
import jax.numpy as jnp
import pytest
from catalogue import CATALOGUE, same, unpickled_elsewhere

import pytreekit

KINDS = sorted(CATALOGUE)


@pytest.fixture(params=KINDS)
def example(request):
    return CATALOGUE[request.param]()


def test_flatten_unflatten_and_tree_map_keep_class_statics_and_values(example):
    leaves, treedef = jax.tree_util.tree_flatten(example)
    assert same(jax.tree_util.tree_unflatten(treedef, leaves), example)
    doubled = jax.tree.map(lambda a: a * 2, example)
    assert [jnp.asarray(x).tolist() for x in jax.tree_util.tree_leaves(doubled)] == [
        jnp.asarray(x * 2).tolist() for x in leaves
    ]
    assert jax.tree_util.tree_structure(doubled) == treedef


def _follow(node, key):
    if isinstance(key, jax.tree_util.GetAttrKey):
        return getattr(node, key.name)
    return node[key.idx if isinstance(key, jax.tree_util.SequenceKey) else key.key]


def test_key_paths_name_the_attributes(example):
    for path, leaf in jax.tree_util.tree_flatten_with_path(example)[0]:
        assert jnp.array_equal(functools.reduce(_follow, path, example), leaf)


def test_jit_and_grad_accept_it(example):
    total = jax.jit(lambda t: sum(jnp.sum(x) for x in jax.tree_util.tree_leaves(t)) * 1.0)
    float(total(example))
    grads = jax.grad(lambda t: total(t))(
        jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), example)
    )
    assert all(jnp.all(g == 1) for g in jax.tree_util.tree_leaves(grads))


def test_copy_and_deepcopy_are_equal_and_independent(example):
    for copied in (copy.copy(example), copy.deepcopy(example)):
        assert copied is not example and same(copied, example)


def test_pickle_round_trips_in_process(example):
    assert same(pickle.loads(pickle.dumps(example)), example)


def test_pickle_round_trips_through_a_fresh_process(example, tmp_path):
    printed = unpickled_elsewhere(
        example, "type(obj).__qualname__, len(jax.tree_util.tree_leaves(obj))", tmp_path
    )
    name, count = eval(printed)
    assert name == type(example).__qualname__
    assert count == len(jax.tree_util.tree_leaves(example))


def test_jax_export_round_trips(example):
    from jax import export

    exported = export.export(jax.jit(lambda t: jax.tree.map(lambda a: a + 1, t)))(example)
    restored = export.deserialize(exported.serialize())
    assert same(restored.call(example), jax.tree.map(lambda a: a + 1, example))


def test_replace_with_nothing_changed_is_an_equal_copy(example):
    copied = pytreekit.replace(example)
    assert copied is not example and same(copied, example)
