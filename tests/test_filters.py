"""is_array, is_inexact_array, partition and combine."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from quickstart import Model

from pytreekit import combine, is_array, is_inexact_array, partition


def test_predicates():
    assert is_array(jnp.ones(1)) and is_array(np.ones(1)) and is_array(np.float32(1))
    assert not is_array(1.0) and not is_array([1.0])
    assert is_inexact_array(jnp.ones(1)) and is_inexact_array(np.ones(1, np.complex64))
    assert not is_inexact_array(jnp.arange(3)) and not is_inexact_array(1.0)
    seen = []
    jax.jit(lambda x: seen.append((is_array(x), is_inexact_array(x))) or x)(jnp.ones(1))
    assert seen == [(True, True)]  # tracers count as arrays


def test_partition_and_combine_round_trip_a_model():
    model = Model(jax.random.PRNGKey(0), 3, 2)
    tree = {"model": model, "step": 3, "fn": jnp.tanh, "mask": jnp.arange(2)}
    params, rest = partition(tree, is_inexact_array)
    assert len(jax.tree_util.tree_leaves(params)) == 2
    assert rest["model"].linear.weights is None and params["step"] is None
    assert rest["step"] == 3 and rest["fn"] is jnp.tanh
    rebuilt = combine(params, rest)
    assert rebuilt["model"] == model and rebuilt["step"] == 3 and rebuilt["fn"] is jnp.tanh


def test_partition_with_a_prefix_of_bools():
    tree = {"a": jnp.ones(1), "b": (jnp.ones(2), 4)}
    kept, rest = partition(tree, {"a": True, "b": is_array})
    assert kept["a"] is tree["a"] and kept["b"][0] is tree["b"][0] and kept["b"][1] is None
    assert rest["b"][1] == 4 and rest["a"] is None
    with pytest.raises(
        TypeError,
        match=r"filter_spec\['a'\] is 1 \(int\), but the leaves of filter_spec must be Python "
        r"bools or predicates",
    ):
        partition(tree, {"a": 1, "b": True})


def test_grad_of_partitioned_params():
    model = Model(jax.random.PRNGKey(0), 3, 2)
    params, static = partition(model, is_inexact_array)

    def loss(params):
        return jnp.sum(combine(params, static)(jnp.ones(3)))

    grads = jax.grad(loss)(params)
    assert grads.linear.weights.shape == (2, 3)
