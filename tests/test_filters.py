"""is_array, is_inexact_array, partition and combine."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from quickstart import Model

from pytreekit import combine, field, is_array, is_inexact_array, partition, pytree_class


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


def test_partition_mismatch_after_a_matching_subtree_is_located():
    # The walk passes the matching "a" (a bool covering a subtree) before it finds "b".
    tree = {"a": (1.0, 2.0), "b": (3.0,)}
    with pytest.raises(
        ValueError,
        match=r"at tree\['b'\], filter_spec has a list node PyTreeDef\(\[\*\]\) where tree has a "
        r"tuple node PyTreeDef\(\(\*,\)\)\.$",
    ):
        partition(tree, {"a": True, "b": [True]})


def test_mismatch_explanation_falls_back_to_jaxs_error():
    # Only reached if JAX refuses a prefix the walk finds no difference in: the message still
    # says which tree is not a prefix of which, with JAX's own reason.
    from pytreekit._derivatives.filters import _is_none, _where_not_prefix

    where = _where_not_prefix(
        {"a": True}, {"a": 1}, ("filter_spec", "tree"), _is_none, ValueError("JAX's reason")
    )
    assert where == "filter_spec is not a prefix of tree (JAX's reason)."


def test_a_predicates_own_error_is_not_taken_for_a_structure_mismatch():
    def fussy(leaf):
        raise ValueError("fussy predicate")

    with pytest.raises(ValueError, match=r"^fussy predicate$"):
        partition({"a": 1.0}, fussy)


def test_predicate_results_are_converted_to_bool():
    kept, rest = partition([jnp.ones(1), jnp.zeros(1)], lambda leaf: leaf.sum())
    assert kept[1] is None and rest[0] is None
    assert kept[0] is not None and rest[1] is not None


def test_bool_leaves_of_the_spec_cover_whole_subtrees():
    tree = {"a": (1, "x"), "b": [2.0]}
    kept, rest = partition(tree, {"a": False, "b": True})
    assert kept == {"a": (None, None), "b": [2.0]}
    assert rest == {"a": (1, "x"), "b": [None]}
    assert partition(tree, True) == (tree, {"a": (None, None), "b": [None]})


def test_is_leaf_keeps_subtrees_whole_in_partition_and_combine():
    def is_pair(x):
        return isinstance(x, tuple) and len(x) == 2

    tree = {"pair": (1, 2), "single": (3,)}
    seen = []
    kept, rest = partition(tree, lambda x: seen.append(x) or is_pair(x), is_leaf=is_pair)
    assert seen == [(1, 2), 3]
    assert kept == {"pair": (1, 2), "single": (None,)}
    assert rest == {"pair": None, "single": (3,)}
    assert combine(kept, rest, is_leaf=is_pair) == tree
    # A pair in a later tree is a leaf too: combine takes the first tree's leaf whole.
    assert combine({"p": (1, 2)}, {"p": (3, 4)}, is_leaf=is_pair) == {"p": (1, 2)}


def test_combine_takes_the_first_leaf_that_is_not_none():
    assert combine([None, 1, None], [2, 3, None], [4, 5, None]) == [2, 1, None]
    assert combine({"a": 0}) == {"a": 0}
    # None in the first tree stands for a whole subtree of the others, which combine keeps.
    assert combine({"a": None}, {"a": (1, 2)}) == {"a": (1, 2)}
    # Falsy leaves are leaves: only None is missing.
    assert combine([0, False], [1, True]) == [0, False]


def test_numpy_and_jax_bools_in_a_spec_are_refused_with_advice():
    for flag in (np.bool_(True), jnp.asarray(True)):
        with pytest.raises(TypeError, match=r"must be Python bools .* Convert it with bool"):
            partition({"a": 1.0}, {"a": flag})
    with pytest.raises(TypeError, match=r"filter_spec\['a'\] is 'yes' \(str\), .* Use True or"):
        partition({"a": 1.0}, {"a": "yes"})


def test_a_spec_with_none_where_the_tree_has_none_is_accepted():
    tree = {"w": jnp.ones(2), "b": jnp.zeros(2), "head": None, "layers": [None, jnp.ones(1)]}
    spec = jax.tree_util.tree_map(lambda _: False, tree)  # None stays None, as in equinox
    spec["w"] = True
    kept, rest = partition(tree, spec)
    assert kept["head"] is None and rest["head"] is None and kept["layers"][0] is None
    assert kept["w"] is tree["w"] and rest["w"] is None and rest["b"] is tree["b"]
    assert combine(kept, rest)["w"] is tree["w"]
    assert partition(None, None) == (None, None)
    # a None standing against a real sub-tree is still refused
    with pytest.raises(TypeError, match=r"filter_spec\['b'\] is None \(NoneType\)"):
        partition(tree, {**spec, "b": None})


@pytree_class
class _Node:
    a: object
    b: object
    tag: str = field(static=True, default="t")


def test_partition_and_combine_agree_with_equinox_on_trees_with_none():
    eqx = pytest.importorskip("equinox")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    leaves = st.one_of(
        st.none(),
        st.integers(-3, 3),
        st.floats(-1, 1, allow_nan=False),
        st.just("s"),
        st.just(jnp.tanh),
        st.builds(jnp.ones, st.integers(0, 2)),
        st.builds(jnp.arange, st.integers(0, 2)),
        st.just(np.float32(1.5)),
    )
    trees = st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.tuples(children, children),
            st.dictionaries(st.sampled_from("xyz"), children, max_size=3),
            st.builds(_Node, children, children),
        ),
        max_leaves=8,
    )

    def key(tree):
        flat, treedef = jax.tree_util.tree_flatten(tree, is_leaf=lambda x: x is None)
        return treedef, [x if callable(x) or not hasattr(x, "shape") else x.tolist() for x in flat]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(trees, st.lists(st.booleans(), min_size=8, max_size=8))
    def check(tree, flips):
        it = iter(flips)
        spec = jax.tree_util.tree_map(lambda _: next(it), tree)
        for filter_spec in (spec, is_array, is_inexact_array):
            mine, theirs = partition(tree, filter_spec), eqx.partition(tree, filter_spec)
            assert [key(half) for half in mine] == [key(half) for half in theirs]
            assert key(combine(*mine)) == key(eqx.combine(*theirs)) == key(tree)

    check()
