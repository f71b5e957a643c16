"""Instances pickled by pytreekit 0.3.0, for the test that loads them with this version.

The bytes below were written by the 0.3.0 release (commit 43b0d82, tag v0.3.0) with this module
on the path, by ``_write()`` at the bottom. They name every module path 0.3.0's pickles store:
``pytreekit._layouts.layout_for`` (a layout), ``pytreekit._references.import_by_name`` (a
stand-in for ``jnp.tanh``) and ``pytreekit._wrappers.Static``; the last two items are layouts
(a treedef's, whose pickle is specific to the jaxlib that wrote it).
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
        jax.tree.structure(Shifting(5.0, fn=None)).node_data()[1][0],
        jax.tree.structure(Frozen(6.0)).node_data()[1][0],
    ]
    return pickle.dumps(plain, protocol=4)


PICKLED = base64.b64decode(
    "gASVswEAAAAAAABdlCiMDnBpY2tsZWRfYnlfMDMwlIwIU2hpZnRpbmeUk5QpgZR9lCiMAXeURz/wAAAAAAAAjARtb2Rl"
    "lIwFcGxhaW6UjAJmbpSMFXB5dHJlZWtpdC5fcmVmZXJlbmNlc5SMDmltcG9ydF9ieV9uYW1llJOUjAlqYXgubnVtcHmU"
    "jAR0YW5olIaUUpSMFF9fcHl0cmVla2l0X2ZpZWxkc19flGgGaAdoCYeUiYiIh5SGlHViaAMpgZR9lChoBkdAAAAAAAAA"
    "AGgHjAZzY2FsZWSUaAloDGgPUpSMBWV4dHJhlEdACAAAAAAAAGgRKGgGaAdoCWgZdJQoiYiIiXSUhpR1YmgBjAZGcm96"
    "ZW6Uk5QpgZR9lChoBkdAEAAAAAAAAIwBbpRLA2gRaAZoIYaUiYiGlIaUdWKME3B5dHJlZWtpdC5fd3JhcHBlcnOUjAZT"
    "dGF0aWOUk5QpgZR9lCiMBXZhbHVllGgMaA9SlGgRaCqFlIiFlIaUdWKMEnB5dHJlZWtpdC5fbGF5b3V0c5SMCmxheW91"
    "dF9mb3KUk5RoA2gSaBOHlFKUaDFoHmgiaCOHlFKUZS4="
)
