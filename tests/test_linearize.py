"""linearize on trees with non-array leaves: matches jax.jvp, and fn runs once."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _versions import INVALID_JAX_TYPE_ERRORS

from pytreekit import linearize, pytree_class, replace


@pytree_class
class Net:
    w: jax.Array
    activation: object  # a function leaf
    repeats: int  # an int leaf

    def __call__(self, x):
        for _ in range(self.repeats):
            x = self.activation(self.w @ x)
        return x


def test_matches_jvp_of_the_closure_and_runs_fn_once():
    calls = []
    net = Net(jax.random.normal(jax.random.PRNGKey(0), (3, 3)), jnp.tanh, 2)
    x = jnp.array([0.1, -0.2, 0.3])

    def fn(net, x):
        calls.append(1)
        return net(x)

    out, jvp_fn = linearize(fn, net, x)
    np.testing.assert_allclose(out, net(x), rtol=1e-6)
    keys = jax.random.split(jax.random.PRNGKey(1), 8)
    for key in keys:
        dw, dx = jax.random.normal(key, (3, 3)), jax.random.normal(key, (3,))
        tangent = jvp_fn(replace(net, w=dw, activation=None, repeats=None), dx)
        expected = jax.jvp(lambda w, x: replace(net, w=w)(x), (net.w, x), (dw, dx))[1]
        np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)
    assert len(calls) == 1


def test_none_for_whole_arguments_and_non_array_outputs():
    def fn(scale, x, name):
        return {"y": scale * x, "name": name, "count": jnp.arange(2)}

    out, jvp_fn = linearize(fn, jnp.array(2.0), jnp.ones(3), "tag")
    assert out["name"] == "tag"
    tangent = jvp_fn(None, jnp.ones(3), None)
    np.testing.assert_allclose(tangent["y"], 2 * jnp.ones(3))
    assert tangent["name"] is None and tangent["count"] is None


def test_wrong_tangents_are_explained():
    _, jvp_fn = linearize(lambda x, y: x * y["a"], jnp.ones(2), {"a": jnp.ones(2)})
    with pytest.raises(TypeError, match=r"one tangent per primal \(2\), got 1"):
        jvp_fn(jnp.ones(2))
    with pytest.raises(TypeError, match=r"tangent for primal 1 does not have its structure"):
        jvp_fn(jnp.ones(2), {"b": jnp.ones(2)})


def test_tangent_jax_refuses_though_shape_and_dtype_match_gets_jax_error_unchanged():
    _, jvp_fn = linearize(lambda x: x * 2, jnp.ones(3))
    abstract = jax.ShapeDtypeStruct((3,), jnp.float32)  # float32[3], but no values
    with pytest.raises(INVALID_JAX_TYPE_ERRORS, match=r"is not a valid JAX type") as error:
        jvp_fn(abstract)
    assert "linearize(): jvp_fn got a tangent" not in str(error.value)
    np.testing.assert_array_equal(jvp_fn(jnp.ones(3)), 2 * jnp.ones(3))


def test_none_for_a_sub_tree_of_a_tangent_is_zero():
    params = {"scale": jnp.asarray(2.0), "sub": {"a": jnp.ones(2), "b": jnp.ones(2)}}
    _, jvp_fn = linearize(lambda p: p["scale"] * (p["sub"]["a"] + p["sub"]["b"]), params)
    leafwise = jvp_fn({"scale": jnp.asarray(1.0), "sub": {"a": None, "b": None}})
    np.testing.assert_allclose(jvp_fn({"scale": jnp.asarray(1.0), "sub": None}), leafwise)
    with pytest.raises(TypeError, match=r"sub|structure"):
        jvp_fn({"scale": jnp.asarray(1.0), "sub": jnp.ones(2)})
