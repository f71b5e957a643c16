"""pytreekit.Static: a function among the layers of a list (Equinox's Sequential style)."""

import jax
import jax.numpy as jnp
import optax
import pytest
from catalogue import unpickled_elsewhere

import pytreekit
from pytreekit import Static, pytree_class


@pytree_class
class Linear:
    weight: jax.Array
    bias: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return x @ self.weight + self.bias


@pytree_class
class Sequential:
    layers: list

    def __call__(self, x: jax.Array) -> jax.Array:
        for layer in self.layers:
            x = layer(x)
        return x


def make(seed: int = 0) -> Sequential:
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    first = Linear(jax.random.normal(k1, (3, 4)), jnp.zeros(4))
    second = Linear(jax.random.normal(k2, (4, 2)), jnp.zeros(2))
    return Sequential([first, Static(jax.nn.relu), second])


def by_hand(model: Sequential, x: jax.Array) -> jax.Array:
    first, _, second = model.layers
    return jax.nn.relu(x @ first.weight + first.bias) @ second.weight + second.bias


def test_only_the_arrays_are_leaves_and_the_function_is_kept():
    model = make()
    assert len(jax.tree_util.tree_leaves(model)) == 4
    rebuilt = jax.tree.map(lambda a: a + 0, model)
    assert rebuilt.layers[1].value is jax.nn.relu


def test_grad_jit_and_optax_match_the_model_written_by_hand():
    model, x = make(), jnp.arange(6.0).reshape(2, 3) - 2.0
    loss = lambda m: (m(x) ** 2).sum()  # noqa: E731
    ours = jax.jit(jax.grad(loss))(model)
    theirs = jax.grad(lambda m: (by_hand(m, x) ** 2).sum())(model)
    for a, b in zip(
        jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), strict=True
    ):
        assert jnp.allclose(a, b)
    assert ours.layers[1] == Static(jax.nn.relu)
    optimizer = optax.adam(1e-2)
    state = optimizer.init(model)
    updates, _ = optimizer.update(ours, state, model)
    stepped = optax.apply_updates(model, updates)
    assert stepped.layers[1].value is jax.nn.relu
    assert float(loss(stepped)) < float(loss(model))


def test_equal_values_share_a_treedef_so_jit_traces_once():
    traces = []

    @jax.jit
    def call(model, x):
        traces.append(1)
        return model(x)

    call(make(0), jnp.ones(3))
    call(make(1), jnp.ones(3))
    assert len(traces) == 1
    assert Static(jax.nn.relu) == Static(jax.nn.relu)
    assert Static(jax.nn.relu) != Static(jnp.tanh)
    assert hash(Static(jnp.tanh)) == hash(Static(jnp.tanh))


def test_keyword_arguments_are_passed_on_and_the_wrapper_is_frozen():
    scaled = Static(lambda x, *, by: x * by)
    assert scaled(2.0, by=3.0) == 6.0
    with pytest.raises(pytreekit.FrozenInstanceError):
        scaled.value = abs


def test_an_unhashable_value_is_refused_with_the_field_named():
    with pytest.raises(TypeError, match=r"Static.*value"):
        Static([1, 2])


def test_pickled_model_runs_the_same_in_a_fresh_process(tmp_path):
    model, x = make(), jnp.ones(3)
    printed = unpickled_elsewhere(
        model, "obj.layers[1].value is jax.nn.relu, obj(jnp.ones(3)).tolist()", tmp_path
    )
    same_relu, values = eval(printed)
    assert same_relu is True
    assert values == pytest.approx(model(x).tolist())
