"""Names that pickles and artifacts already written store: each stays importable where it was
(issue 33 moved the artifacts code into ``pytreekit/_artifacts/``; none of these moved with it).
A fresh process imports each by the name a pickle would, as pickle's ``find_class`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT

# (module, qualified name): what they are stored by.
PERSISTED = [
    # Every pickled Layout (instances written by pytreekit 0.2.0 among them).
    ("pytreekit._layouts", "layout_for"),
    # Stand-ins of pickled instances and of pickled static data (formats 1 to 4).
    ("pytreekit._references", "import_by_name"),
    ("pytreekit._references", "new_object"),
    # Classes pickled by value.
    ("pytreekit._decorator", "_arrive"),
    # Static(...) pickled, and named by static data ("pytreekit:Static").
    ("pytreekit._wrappers", "Static"),
    ("pytreekit", "Static"),
]


def test_every_persisted_name_imports_in_a_fresh_process():
    script = (
        "import importlib, json, pickle, sys\n"
        "names = json.loads(sys.argv[1])\n"
        "found = []\n"
        "for module, name in names:\n"
        "    obj = importlib.import_module(module)\n"
        "    for part in name.split('.'):\n"
        "        obj = getattr(obj, part)\n"
        "    found.append(callable(obj))\n"
        "print(json.dumps(found))\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(PERSISTED)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == [True] * len(PERSISTED)


def test_loaded_nan_and_partial_pickle_under_no_name_of_the_wing():
    """What static data reads back (LoadedNaN, LoadedPartial) pickles as a plain float and
    functools.partial: no pickle names a class of the wing."""
    import functools
    import math
    import pickle

    from pytreekit._artifacts.static_data import dumps, loads

    data = pickle.dumps(
        (loads(dumps(float("nan"))), loads(dumps(functools.partial(math.pow, 2.0))))
    )
    assert b"_artifacts" not in data and b"Loaded" not in data
