"""The README quickstart's Model travels: pickle, a spawn process pool, jax.export in a new process.

Its Activation holds jnp.tanh, an object plain pickle refuses; pytreekit sends it by name, and it
comes back as the same object.
"""

import concurrent.futures
import multiprocessing
import os
import pickle
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from quickstart import Model

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": EXAMPLES}


def _model():
    return Model(jax.random.PRNGKey(0), in_features=3, out_features=2)


def apply_in_worker(model, x):
    """Runs in a spawned worker: the model arrived by pickle."""
    return model.activation.fn is jnp.tanh, model(x).tolist()


def test_the_model_pickles_and_its_tanh_comes_back_as_jnp_tanh():
    model = _model()
    again = pickle.loads(pickle.dumps(model))
    assert again.activation.fn is jnp.tanh
    assert again(jnp.ones(3)).tolist() == model(jnp.ones(3)).tolist()


def test_the_model_goes_through_a_spawn_process_pool():
    model, x = _model(), jnp.ones(3)
    context = multiprocessing.get_context("spawn")
    old = os.environ.get("PYTHONPATH")
    # The spawned worker imports this module, and quickstart with it.
    paths = [EXAMPLES, os.path.dirname(__file__), *([old] if old else [])]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    try:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            same_tanh, values = pool.submit(apply_in_worker, model, x).result(timeout=300)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    assert same_tanh
    assert values == pytest.approx(model(x).tolist())


def test_the_model_exports_and_runs_in_a_fresh_process(tmp_path):
    from jax import export

    model, x = _model(), jnp.ones(3)
    step = jax.jit(lambda m, x: (m(x), jax.tree.map(lambda a: a * 2, m)))
    path = tmp_path / "model.bin"
    path.write_bytes(export.export(step)(model, x).serialize())
    code = (
        "import sys, jax, jax.numpy as jnp; from jax import export; from quickstart import Model;"
        "exported = export.deserialize(bytearray(open(sys.argv[1], 'rb').read()));"
        "model = Model(jax.random.PRNGKey(0), in_features=3, out_features=2);"
        "y, doubled = exported.call(model, jnp.ones(3));"
        "assert doubled.activation.fn is jnp.tanh;"
        "print(y.tolist())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == pytest.approx(model(x).tolist())
