"""Instances pickled by pytreekit 0.3.0, for the test that loads them with this version.

The bytes below were written by the 0.3.0 release (commit 43b0d82, tag v0.3.0) with this module
on the path, by ``_write()`` at the bottom. They name every module path 0.3.0's pickles store:
``pytreekit._layouts.layout_for`` (a layout), ``pytreekit._references.import_by_name`` (a
stand-in for ``jnp.tanh``) and ``pytreekit._wrappers.Static``; the last two items are treedefs.
"""

import base64
from typing import Any

import jax.numpy as jnp

from pytreekit import Static, field, pytree_class


@pytree_class(static=("mode", "fn"))
class Shifting:
    def __init__(self, w, mode="plain", extra=None, fn=jnp.tanh):
        self.w = w
        self.mode = mode
        self.fn = fn
        if extra is not None:
            self.extra = extra


@pytree_class(frozen=True)
class Frozen:
    w: Any
    n: int = field(static=True, default=3)


def _write() -> bytes:
    import pickle

    import jax

    plain = [
        Shifting(1.0),
        jax.tree.map(lambda x: x, Shifting(2.0, "scaled", extra=3.0)),
        Frozen(4.0),
        Static(jnp.tanh),
        jax.tree.structure(Shifting(5.0, fn=None)),
        jax.tree.structure(Frozen(6.0)),
    ]
    return pickle.dumps(plain, protocol=4)


PICKLED = base64.b64decode(
    "gASVVQIAAAAAAABdlCiMDnBpY2tsZWRfYnlfMDMwlIwIU2hpZnRpbmeUk5QpgZR9lCiMAXeURz/wAAAAAAAAjARtb2Rl"
    "lIwFcGxhaW6UjAJmbpSMFXB5dHJlZWtpdC5fcmVmZXJlbmNlc5SMDmltcG9ydF9ieV9uYW1llJOUjAlqYXgubnVtcHmU"
    "jAR0YW5olIaUUpSMFF9fcHl0cmVla2l0X2ZpZWxkc19flGgGaAdoCYeUiYiIh5SGlHViaAMpgZR9lChoBkdAAAAAAAAA"
    "AGgHjAZzY2FsZWSUaAloDGgPUpSMBWV4dHJhlEdACAAAAAAAAGgRKGgGaAdoCWgZdJQoiYiIiXSUhpR1YmgBjAZGcm96"
    "ZW6Uk5QpgZR9lChoBkdAEAAAAAAAAIwBbpRLA2gRaAZoIYaUiYiGlIaUdWKME3B5dHJlZWtpdC5fd3JhcHBlcnOUjAZT"
    "dGF0aWOUk5QpgZR9lCiMBXZhbHVllGgMaA9SlGgRaCqFlIiFlIaUdWKMEmpheGxpYi5famF4LnB5dHJlZZSMCVB5VHJl"
    "ZURlZpSTlCmBlIwSamF4Ll9zcmMudHJlZV91dGlslIwQZGVmYXVsdF9yZWdpc3RyeZSTlF2UKChLAEsATk5LAUsBdJQo"
    "SwZLAYwScHl0cmVla2l0Ll9sYXlvdXRzlIwKbGF5b3V0X2ZvcpSTlGgDaBJoE4eUUpRoCE6HlGgDSwFLAnSUZYaUYmgx"
    "KYGUaDVdlCgoSwBLAE5OSwFLAXSUKEsGSwFoOmgeaCJoI4eUUpRLA4aUaB5LAUsCdJRlhpRiZS4="
)
