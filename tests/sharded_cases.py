"""Zero tangents for ``None`` on 8 host devices, run in a fresh interpreter by
``tests/test_sharded_tangents.py`` (the device count is fixed when JAX starts).

Each case computes a derivative twice: through pytreekit (a ``custom_jvp_method`` rule returning
``None``, ``linearize``'s ``jvp_fn(..., None)``) and through JAX alone (``jax.custom_jvp`` and
``jax.linearize`` given zeros computed from the primal, as a user writes them by hand). It prints
one JSON object: for each case, both results (values and output sharding) or the error raised.
"""

import json
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax
import jax.numpy as jnp
import numpy as np
from _versions import HAS_EXPLICIT_MESH_AXES, shard_map, use_explicit_mesh
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from pytreekit import custom_jvp_method, linearize, pytree_class


@pytree_class
class Scale:
    w: jax.Array

    @custom_jvp_method
    def __call__(self, x):
        return self.w * x, (x > 0).astype(jnp.int32)


@jax.custom_jvp
def reference(w, x):  # the float output alone: JAX has no zeros for an integer output that
    return w * x  # works in every mode, eager float0 zeros refused under shard_map


# Each rule twice: for the method, with None for zero tangents (for the integer output too); for
# the reference, with zeros computed from the primal, which have its type in every JAX version
# (jnp.zeros_like drops the varying manual axes in JAX 0.6).
def held_fixed(primals, tangents):
    self, x = primals
    return self(x), None


def held_fixed_reference(primals, tangents):
    out = reference(*primals)
    return out, 0.0 * out


def along_w(primals, tangents):
    (self, x), (d_self, _) = primals, tangents
    return self(x), (d_self.w * x, None)


def along_w_reference(primals, tangents):
    (w, x), (dw, _) = primals, tangents
    return reference(w, x), dw * x


def jvp_cases(run):
    """``jax.jvp`` and ``jax.grad`` through the method, against ``jax.custom_jvp``."""
    for ours_rule, reference_rule in (
        (held_fixed, held_fixed_reference),
        (along_w, along_w_reference),
    ):
        Scale.__call__.defjvp(ours_rule)
        reference.defjvp(reference_rule)
        run(
            f"jvp {ours_rule.__name__}",
            lambda w, x, dw, dx: jax.jvp(lambda w, x: Scale(w)(x)[0], (w, x), (dw, dx))[1],
            lambda w, x, dw, dx: jax.jvp(reference, (w, x), (dw, dx))[1],
        )
    Scale.__call__.defjvp(held_fixed)
    reference.defjvp(held_fixed_reference)
    run(
        "grad held_fixed",
        lambda w, x, dw, dx: jax.grad(lambda x: Scale(w)(x)[0].sum())(x),
        lambda w, x, dw, dx: jax.grad(lambda x: reference(w, x).sum())(x),
    )


def linearize_cases(run):
    """``jvp_fn`` with one argument held fixed (``None``), against ``jax.linearize``."""

    def f(w, x):
        return jnp.sin(w * x)

    def ours_x_fixed(w, x, dw, dx):
        return linearize(f, w, x)[1](dw, None)

    def theirs_x_fixed(w, x, dw, dx):
        return jax.linearize(f, w, x)[1](dw, 0.0 * x)

    def ours_w_fixed(w, x, dw, dx):
        return linearize(f, w, x)[1](None, dx)

    def theirs_w_fixed(w, x, dw, dx):
        return jax.linearize(f, w, x)[1](0.0 * w, dx)

    run("linearize x held fixed", ours_x_fixed, theirs_x_fixed)
    run("linearize w held fixed", ours_w_fixed, theirs_w_fixed)


def main():
    devices = np.array(jax.devices())
    assert devices.size == 8, devices
    w, dw = jnp.asarray(1.5), jnp.asarray(1.0)
    x, dx = jnp.linspace(-1.0, 1.0, 16), jnp.ones(16)
    results = {}

    def compare(case, ours, theirs, wrap, arguments):
        """Run both under ``wrap``; record each one's values, output sharding and the type of
        its result where it is computed (inside shard_map: per device, with the axes it varies
        over), or the error it raised."""
        results[case] = []
        for function in (ours, theirs):
            types = []

            def typed(*arguments, function=function, types=types):
                out = function(*arguments)
                types.append(str(jax.typeof(out)) if hasattr(jax, "typeof") else "")
                return out

            try:
                out = wrap(typed)(*arguments)
            except Exception as error:  # reported, and compared, by the test
                results[case].append({"error": f"{type(error).__name__}: {error}"})
                continue
            spec = str(getattr(out.sharding, "spec", None))
            values = np.asarray(out).tolist()
            results[case].append({"values": values, "spec": spec, "type": types[-1]})

    # Under shard_map: x varies over the mesh axis, w is the same on every device.
    mesh = Mesh(devices, ("i",))
    specs = {"in_specs": (P(), P("i"), P(), P("i")), "out_specs": P("i")}

    def in_shard_map(name, ours, theirs):
        wrap = lambda f: jax.jit(shard_map(f, mesh=mesh, **specs))  # noqa: E731
        compare(f"shard_map: {name}", ours, theirs, wrap, (w, x, dw, dx))

    jvp_cases(in_shard_map)
    linearize_cases(in_shard_map)

    # Explicit mesh axes: the sharding is part of every value's type, outside shard_map too.
    if HAS_EXPLICIT_MESH_AXES:
        with use_explicit_mesh(devices, "i") as explicit:
            arguments = (
                w,
                jax.device_put(x, NamedSharding(explicit, P("i"))),
                dw,
                jax.device_put(dx, NamedSharding(explicit, P("i"))),
            )

            def with_explicit_axes(name, ours, theirs):
                for how, wrap in (("jit", jax.jit), ("eager", lambda f: f)):
                    compare(f"explicit axes, {how}: {name}", ours, theirs, wrap, arguments)

            jvp_cases(with_explicit_axes)
            linearize_cases(with_explicit_axes)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
