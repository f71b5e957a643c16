"""pytreekit.Static: a function among the layers of a list (Equinox's Sequential style)."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import optax
import pytest
from catalogue import unpickled_elsewhere
from conftest import require

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


# -- Static in optree's and torch's registries ------------------------------------------------


class HandStatic:
    """The reference: a value kept in the treedef, registered by hand as a node without leaves."""

    def __init__(self, value):
        self.value = value

    def __call__(self, *args):
        return self.value(*args)


def _register_hand_static(optree, torch_pytree):
    if getattr(HandStatic, "registered", False):
        return
    jax.tree_util.register_pytree_node(
        HandStatic, lambda s: ((), s.value), lambda v, _: HandStatic(v)
    )
    optree.register_pytree_node(
        HandStatic, lambda s: ((), s.value), lambda v, _: HandStatic(v), namespace="pytreekit"
    )
    torch_pytree.register_pytree_node(
        HandStatic,
        lambda s: ([], s.value),
        lambda _, v: HandStatic(v),
        flatten_with_keys_fn=lambda s: ([], s.value),
    )
    HandStatic.registered = True


def _holder(backends):
    @pytree_class(backends=backends)
    class Holder:
        layers: list

    return Holder


def test_static_is_a_node_without_leaves_in_every_registry_a_class_is_registered_with():
    optree = require("optree")
    torch = require("torch")
    import torch.utils._pytree as torch_pytree

    _register_hand_static(optree, torch_pytree)
    Holder = _holder(("jax", "optree", "torch"))
    counts = {}
    for wrapper in (Static, HandStatic):
        holder = Holder([torch.ones(2), wrapper(torch.relu), torch.ones(3)])
        counts[wrapper.__name__] = (
            len(jax.tree_util.tree_leaves(holder)),
            len(optree.tree_leaves(holder, namespace="pytreekit")),
            len(torch_pytree.tree_leaves(holder)),
        )
        for mapped in (
            optree.tree_map(lambda t: t * 2, holder, namespace="pytreekit"),
            torch_pytree.tree_map(lambda t: t * 2, holder),
        ):
            assert type(mapped.layers[1]) is wrapper and mapped.layers[1].value is torch.relu
            assert mapped.layers[2].tolist() == [2.0, 2.0, 2.0]
    assert counts["Static"] == counts["HandStatic"] == (2, 2, 2)


def test_torch_export_takes_a_model_holding_static_as_it_takes_the_reference():
    optree = require("optree")
    torch = require("torch")
    import torch.utils._pytree as torch_pytree

    _register_hand_static(optree, torch_pytree)
    Holder = _holder(("torch",))

    class Apply(torch.nn.Module):
        def forward(self, holder):
            weight, activation, bias = holder.layers
            return activation(weight) + bias

    outputs = {}
    for wrapper in (Static, HandStatic):
        holder = Holder([torch.tensor([-1.0, 2.0]), wrapper(torch.relu), torch.ones(2)])
        exported = torch.export.export(Apply(), (holder,))
        user_inputs = [
            spec for spec in exported.graph_signature.input_specs if spec.kind.name == "USER_INPUT"
        ]
        assert len(user_inputs) == 2  # the two tensors; the function is in the treespec
        fresh = Holder([torch.tensor([3.0, -4.0]), wrapper(torch.relu), torch.zeros(2)])
        outputs[wrapper.__name__] = exported.module()(fresh).tolist()
    assert outputs["Static"] == outputs["HandStatic"] == [3.0, 0.0]


_FOLLOWS_IN_A_FRESH_PROCESS = """
import optree
import pytreekit._backends.jax as jax_adapter
from pytreekit import Static, pytree_class

def leaves(tree):
    return optree.tree_leaves(tree, namespace="pytreekit")

static = Static(abs)
# No class is registered with optree yet: Static is not either (an object optree knows nothing of).
print(leaves([static]) == [static])

class First:
    x: object

def refuse(cls, nodes):
    raise RuntimeError("JAX refuses " + cls.__qualname__)

jax_adapter.register, register = refuse, jax_adapter.register
try:
    pytree_class(First, backends=("jax", "optree"))
except RuntimeError:
    pass
jax_adapter.register = register
# The refused class's registrations were undone, and with them Static's (the first in optree).
print(leaves([static]) == [static], Static.__pytreekit_spec__.backends)
pytree_class(First, backends=("jax", "optree"))
print(leaves([First(1.0), static]) == [1.0], Static.__pytreekit_spec__.backends)
"""


def test_static_joins_a_registry_with_the_first_class_and_leaves_it_if_that_class_is_refused():
    require("optree")
    result = subprocess.run(
        [sys.executable, "-c", _FOLLOWS_IN_A_FRESH_PROCESS],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        check=True,
    )
    assert result.stdout.split("\n")[:3] == [
        "True",
        "True ('jax',)",
        "True ('jax', 'optree')",
    ]
