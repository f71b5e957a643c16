"""Instances pickled by pytreekit 0.2.0, for the test that loads them with this version.

``PICKLED`` was written by the 0.2.0 release (commit dc2b6aa) with this module on the path:
``pickle.dumps([Shifting(1.0), jax.tree.map(lambda x: x, Shifting(2.0, "scaled", extra=3.0))],
protocol=4)``, after one flatten of both. The second instance's layout differs from the first's,
so 0.2.0 stored it, as a ``Layout``, in the instance's state.
"""

import base64

from pytreekit import pytree_class


@pytree_class(static=("mode",))
class Shifting:
    def __init__(self, w, mode="plain", extra=None):
        self.w = w
        self.mode = mode
        if extra is not None:
            self.extra = extra


PICKLED = base64.b64decode(
    "gASV2gAAAAAAAABdlCiMDnBpY2tsZWRfYnlfMDIwlIwIU2hpZnRpbmeUk5QpgZR9lCiMAXeURz/wAAAAAAAAjARtb2Rl"
    "lIwFcGxhaW6UjBRfX3B5dHJlZWtpdF9sYXlvdXRfX5SMEnB5dHJlZWtpdC5fbGF5b3V0c5SMCmxheW91dF9mb3KUk5Ro"
    "A2gGaAeGlImIhpSHlFKUdWJoAymBlH2UKGgGR0AAAAAAAAAAaAeMBnNjYWxlZJSMBWV4dHJhlEdACAAAAAAAAGgJaAxo"
    "A2gGaAdoFIeUiYiJh5SHlFKUdWJlLg=="
)
