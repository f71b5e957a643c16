"""Artifacts written by earlier versions of pytreekit, whose static data is pickled, for
tests/test_artifacts.py: this version refuses them unless loaded inside
``pytreekit.allow_pickled_artifacts()``.

Each was written with this module on the path (classes as below), from ``make_dense()``:
``ARTIFACTS[version]`` is ``jax.export.export(jax.jit(step))(make_dense(), jnp.ones(3))
.serialize()``, and ``TREESPECS[version]`` is ``treespec_dumps`` of torch's ``tree_flatten`` of
``[make_dense()]``. Versions: ``"0.2.0"`` (the release, commit dc2b6aa: format 1) and
``"format 2"`` (commit 4bf22bb, the last before artifacts became data).
"""

from __future__ import annotations

import base64
import importlib.util
from typing import Any

import jax
import jax.numpy as jnp

from pytreekit import field, pytree_class


def relu(x: Any) -> Any:
    return jnp.maximum(x, 0.0)


# The torch backend where torch is installed (its treespecs need it; the jax.export artifacts
# do not, and some cells have no torch).
@pytree_class(backends=("jax", "torch") if importlib.util.find_spec("torch") else ("jax",))
class Dense:
    weight: jax.Array
    activation: Any = field(static=True, default=relu)
    shape: tuple[int, ...] = field(static=True, default=(3,))
    name: str = field(static=True, default="dense")

    def __call__(self, x: jax.Array) -> jax.Array:
        out: jax.Array = self.activation(self.weight * x)
        return out


def make_dense() -> Dense:
    return Dense(jnp.array([1.0, -2.0, 3.0]))


def step(model: Dense, x: jax.Array) -> Any:
    return model(x).sum(), jax.tree.map(lambda a: 2 * a, model)


ARTIFACTS = {
    "0.2.0": base64.b64decode(
        "PAAAADgAYABeAFgAVABQAEwASAAAAEAAPAA4ADQAMAAsACgAJgAgAAAAAABEABwAGAAUABAADAAIAAQAOAAAAFwA"
        "AABkAAAAbAAAAHQAAAB8AAAAfAAAAHwAAACwAAAAAAAKALAAAADMBAAAzAQAAMwEAACwBAAAyAQAANgEAAABAAAA"
        "5AQAABgFAADIBQAAFAYAABgHAAAAAAMAAgAAAAAAAAAAAAAAAgAAAAAAAAAAAAAAAgAAAAEAAAAAAAAAAgAAAAAA"
        "AAAAAAAAAAAAAAAAAAACAAAAGAAAAAQAAABk+v//AAABCgQAAAAAAAAAdPr//wAAAQoEAAAAAQAAAAQAAAABAAAA"
        "MwAAAAIAAAAAAAEACwQAAE1M71INU3RhYmxlSExPX3YxLjE1LjAAASMFAQUTAQMLAxEPExcbHyMnKwOzjRMBbwsH"
        "DwsPDw8LCw8PDw8jCw8LCwsPCw8LCwsbCw8PDxsPGwsPDwsbDw8bCw8PGw8PCxsPDxsLDwsDHwsLDxMLExMLEwsL"
        "Cx8fLwEFCw8DDxMPBwcfExMCEgQFFx8dMTMFGR1TVREDBR0vBQUbBR0VPwUdQ0UdD1sdaWsDBx0fIQsjCwUfEQEA"
        "BSEFIwUlHSkDBScdLQMFKQUrBS0tNQcND4UFLx0PORU7Ex0RPS0BB0VTcR0HQS0BB1cXJwUxFUdNHUlLBTMtAQcv"
        "Fz0VTxMdEVEtAQdFM3MFNRVXBR0HWS0BB1cXMxVdYx1fYQU3LQEHV2VvFWUFHQdnLQEHVzd/BTkdbQMFOw0BHT0f"
        "DwEDBW9vIw0DBXt/DQNxfR0/DQNxgR1BHUMdRR8HCQAAAEAfBwkAAAAAHxERAAAAAAAAAAABCQECAikDDQkpAQkJ"
        "HREFBQUFBwUpAwELKQMFCwTxBQFRAxsBBwTfAwEFC1ADAwcEywMVJwULJwsrAANCDQUDBwNCAwcDBwUGNwMFBQED"
        "B0YVCQMFAwcNBhUDBQUJCw9WCQsDBwUNBwcELQMHCwUPGQ8ZABEGCQMHBQEDCQQJAwUHRhcJAwUDBQUGFwMFBREB"
        "CQQNBQ8TBgMBBQEApgdHDwsjFSEXGS8rCx0hExUFGxMlKTkfHQtXDxUXERUpGRkPCxFidWlsdGluAHZobG8AbW9k"
        "dWxlAGNvbnN0YW50X3YxAG11bHRpcGx5X3YxAGJyb2FkY2FzdF9pbl9kaW1fdjEAcmV0dXJuX3YxAGZ1bmNfdjEA"
        "bWF4aW11bV92MQByZWR1Y2VfdjEAYWRkX3YxAC93b3JrL3d0LWFydGlmYWN0cy90ZXN0cy93cml0dGVuX2JlZm9y"
        "ZS5weQBzdGVwAGppdChzdGVwKS9tdWwARGVuc2UuX19jYWxsX18AamF4LnVzZXNfc2hhcGVfcG9seW1vcnBoaXNt"
        "AG1obG8ubnVtX3BhcnRpdGlvbnMAbWhsby5udW1fcmVwbGljYXMAaml0X3N0ZXAAbW9kZWwud2VpZ2h0AHgAaml0"
        "KHN0ZXApADxtb2R1bGU+AC90bXAvZ2VuX29sZC5weQBqaXQoc3RlcCkvbWF4AHJlbHUAaml0KHN0ZXApL3JlZHVj"
        "ZV9zdW0Ac3RlcC48bG9jYWxzPi48bGFtYmRhPgByZWR1Y2Vfc3VtOgByZWR1Y2Vfc3VtAGpheC5yZXN1bHRfaW5m"
        "bwByZXN1bHRbMF0AcmVzdWx0WzFdLndlaWdodABtYWluAHB1YmxpYwAIJQ0FSwELdXd5g4UDhwOJA3MDiwABAAAA"
        "BAAAAAMAAABjcHUAAAAAAAAAAAAAAAAAAgAAAAwAAAAEAAAAqP3//6z9//8CAAAADAAAAAQAAAC8/f//wP3//wIA"
        "AAAkAAAABAAAAPj+//8AAAEKBAAAAAEAAAAEAAAAAQAAADMAAAAU////AAABCgQAAAAAAAAAyP7//wgAAAAAAAAC"
        "AgAAAKAAAAAEAAAAtv7//xAAAABoAAAAgAAAAAAAAAVYAAAAgASVTQAAAAAAAAAoSwFOjAphY3RpdmF0aW9ulIwF"
        "c2hhcGWUjARuYW1llIeUjA53cml0dGVuX2JlZm9yZZSMBHJlbHWUk5RLA4WUjAVkZW5zZZSHlHSULhQAAAB3cml0"
        "dGVuX2JlZm9yZTpEZW5zZQAAAAABAAAABAAAAKj+//+s/v//AgAAADAAAAAEAAAA5P///wAAAQoEAAAAAQAAAAQA"
        "AAABAAAAMwAAAAwADAAAAAgABwAGAAwAAAAAAAEKBAAAAAEAAAAEAAAAAQAAADMAAADM////CAAAAAAAAAICAAAA"
        "LAAAABAAAAAAAAoADAALAAAABAAKAAAACAAAAAAAAAQAAAAACAAMAAsABAAIAAAACAAAAAAAAAICAAAAIAAAAAgA"
        "AAAEAAYABAAAAAAADgAUABMADAAAAAgABAAOAAAAEAAAAGgAAACAAAAAAAAABVgAAACABJVNAAAAAAAAAChLAU6M"
        "CmFjdGl2YXRpb26UjAVzaGFwZZSMBG5hbWWUh5SMDndyaXR0ZW5fYmVmb3JllIwEcmVsdZSTlEsDhZSMBWRlbnNl"
        "lIeUdJQuFAAAAHdyaXR0ZW5fYmVmb3JlOkRlbnNlAAAAAAEAAAAIAAAABAAEAAQAAAAEAAAAc3RlcAAAAAA="
    ),
    "format 2": base64.b64decode(
        "PAAAADgAYABeAFgAVABQAEwASAAAAEAAPAA4ADQAMAAsACgAJgAgAAAAAABEABwAGAAUABAADAAIAAQAOAAAAFwA"
        "AABkAAAAbAAAAHQAAAB8AAAAfAAAAHwAAACwAAAAAAAKALAAAADMBAAAzAQAAMwEAACwBAAAyAQAANgEAAABAAAA"
        "5AQAABgFAADYBQAAJAYAADgHAAAAAAMAAgAAAAAAAAAAAAAAAgAAAAAAAAAAAAAAAgAAAAEAAAAAAAAAAgAAAAAA"
        "AAAAAAAAAAAAAAAAAAACAAAAGAAAAAQAAABU+v//AAABCgQAAAAAAAAAZPr//wAAAQoEAAAAAQAAAAQAAAABAAAA"
        "MwAAAAIAAAAAAAEACwQAAE1M71INU3RhYmxlSExPX3YxLjE1LjAAASMFAQUTAQMLAxEPExcbHyMnKwOzjRMBbwsH"
        "DwsPDw8LCw8PDw8jCw8LCwsPCw8LCwsbCw8PDxsPGwsPDwsbDw8bCw8PGw8PCxsPDxsLDwsDHwsLDxMLExMLEwsL"
        "Cx8fLwEFCw8DDxMPBwcfExMCEgQFFx8dMTMFGR1TVREDBR0vBQUbBR0VPwUdQ0UdD1sdaWsDBx0fIQsjCwUfEQEA"
        "BSEFIwUlHSkDBScdLQMFKQUrBS0tNQcND4UFLx0PORU7Ex0RPS0BB0VTcR0HQS0BB1cXJwUxFUdNHUlLBTMtAQcv"
        "Fz0VTxMdEVEtAQdFM3MFNRVXBR0HWS0BB1cXMxVdYx1fYQU3LQEHV2VvFWUFHQdnLQEHVzd/BTkdbQMFOw0BHT0f"
        "DwEDBW9vIw0DBXt/DQNxfR0/DQNxgR1BHUMdRR8HCQAAAEAfBwkAAAAAHxERAAAAAAAAAAABCQECAikDDQkpAQkJ"
        "HREFBQUFBwUpAwELKQMFCwTxBQFRAxsBBwTfAwEFC1ADAwcEywMVJwULJwsrAANCDQUDBwNCAwcDBwUGNwMFBQED"
        "B0YVCQMFAwcNBhUDBQUJCw9WCQsDBwUNBwcELQMHCwUPGQ8ZABEGCQMHBQEDCQQJAwUHRhcJAwUDBQUGFwMFBREB"
        "CQQNBQ8TBgMBBQEApgdHDwsjFSEXGS8rCx0hExUFGxMlKTkfHQtXDxUXERUpGRkPCxFidWlsdGluAHZobG8AbW9k"
        "dWxlAGNvbnN0YW50X3YxAG11bHRpcGx5X3YxAGJyb2FkY2FzdF9pbl9kaW1fdjEAcmV0dXJuX3YxAGZ1bmNfdjEA"
        "bWF4aW11bV92MQByZWR1Y2VfdjEAYWRkX3YxAC93b3JrL3d0LWFydGlmYWN0cy90ZXN0cy93cml0dGVuX2JlZm9y"
        "ZS5weQBzdGVwAGppdChzdGVwKS9tdWwARGVuc2UuX19jYWxsX18AamF4LnVzZXNfc2hhcGVfcG9seW1vcnBoaXNt"
        "AG1obG8ubnVtX3BhcnRpdGlvbnMAbWhsby5udW1fcmVwbGljYXMAaml0X3N0ZXAAbW9kZWwud2VpZ2h0AHgAaml0"
        "KHN0ZXApADxtb2R1bGU+AC90bXAvZ2VuX29sZC5weQBqaXQoc3RlcCkvbWF4AHJlbHUAaml0KHN0ZXApL3JlZHVj"
        "ZV9zdW0Ac3RlcC48bG9jYWxzPi48bGFtYmRhPgByZWR1Y2Vfc3VtOgByZWR1Y2Vfc3VtAGpheC5yZXN1bHRfaW5m"
        "bwByZXN1bHRbMF0AcmVzdWx0WzFdLndlaWdodABtYWluAHB1YmxpYwAIJQ0FSwELdXd5g4UDhwOJA3MDiwABAAAA"
        "BAAAAAMAAABjcHUAAAAAAAAAAAAAAAAAAgAAAAwAAAAEAAAAiP3//4z9//8CAAAADAAAAAQAAACc/f//oP3//wIA"
        "AAAkAAAABAAAAOj+//8AAAEKBAAAAAEAAAAEAAAAAQAAADMAAAAE////AAABCgQAAAAAAAAAuP7//wgAAAAAAAAC"
        "AgAAALAAAAAEAAAApv7//xAAAAB4AAAAkAAAAAAAAAVoAAAAgASVXQAAAAAAAAAoSwIojAZ3ZWlnaHSUjAphY3Rp"
        "dmF0aW9ulIwFc2hhcGWUjARuYW1llHSUKImIiIh0lIwOd3JpdHRlbl9iZWZvcmWUjARyZWx1lJOUSwOFlIwFZGVu"
        "c2WUh5R0lC4UAAAAd3JpdHRlbl9iZWZvcmU6RGVuc2UAAAAAAQAAAAQAAACY/v//nP7//wIAAAAwAAAABAAAAOT/"
        "//8AAAEKBAAAAAEAAAAEAAAAAQAAADMAAAAMAAwAAAAIAAcABgAMAAAAAAABCgQAAAABAAAABAAAAAEAAAAzAAAA"
        "zP///wgAAAAAAAACAgAAACwAAAAQAAAAAAAKAAwACwAAAAQACgAAAAgAAAAAAAAEAAAAAAgADAALAAQACAAAAAgA"
        "AAAAAAACAgAAACAAAAAIAAAABAAGAAQAAAAAAA4AFAATAAwAAAAIAAQADgAAABAAAAB4AAAAkAAAAAAAAAVoAAAA"
        "gASVXQAAAAAAAAAoSwIojAZ3ZWlnaHSUjAphY3RpdmF0aW9ulIwFc2hhcGWUjARuYW1llHSUKImIiIh0lIwOd3Jp"
        "dHRlbl9iZWZvcmWUjARyZWx1lJOUSwOFlIwFZGVuc2WUh5R0lC4UAAAAd3JpdHRlbl9iZWZvcmU6RGVuc2UAAAAA"
        "AQAAAAgAAAAEAAQABAAAAAQAAABzdGVwAAAAAA=="
    ),
}

TREESPECS = {
    "0.2.0": (
        '[1, {"type": "builtins.list", "context": "null", "children_spec": [{"type": "written_b'
        'efore.Dense", "context": "gASVTQAAAAAAAAAoSwFOjAphY3RpdmF0aW9ulIwFc2hhcGWUjARuYW1llIeU'
        'jA53cml0dGVuX2JlZm9yZZSMBHJlbHWUk5RLA4WUjAVkZW5zZZSHlHSULg==", "children_spec": [{"typ'
        'e": null, "context": null, "children_spec": []}]}]}]'
    ),
    "format 2": (
        '[1, {"type": "builtins.list", "context": "null", "children_spec": [{"type": "written_b'
        'efore.Dense", "context": "gASVXQAAAAAAAAAoSwIojAZ3ZWlnaHSUjAphY3RpdmF0aW9ulIwFc2hhcGWU'
        'jARuYW1llHSUKImIiIh0lIwOd3JpdHRlbl9iZWZvcmWUjARyZWx1lJOUSwOFlIwFZGVuc2WUh5R0lC4=", "ch'
        'ildren_spec": [{"type": null, "context": null, "children_spec": []}]}]}]'
    ),
}
