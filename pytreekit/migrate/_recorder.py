"""Recording constructor arguments while the user's command runs on the original code.

``--verify`` runs the command with a ``sitecustomize`` that loads this file by its path (so the
user's processes import neither LibCST nor pytreekit for it) and calls ``install``. When a module
holding a registered class is imported, the class's ``__init__`` is wrapped: each call that
builds an instance of exactly that class and returns normally appends its pickled arguments to a
file of the recording directory, up to a bounded number of distinct calls per class and process.

Standard library only: this runs inside the user's test processes.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import pickle
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

ENVIRONMENT = "PYTREEKIT_MIGRATE_RECORD"


def install(spec_path: str) -> None:
    """Wrap the classes that the spec names as soon as their modules are imported."""
    with open(spec_path, encoding="utf-8") as file:
        spec = json.load(file)
    targets: dict[str, list[str]] = {}
    for entry in spec["classes"]:
        targets.setdefault(entry["module"], []).append(entry["name"])
    recorder = _Recorder(spec["records"], int(spec["samples"]))
    finder = _Finder(targets, recorder)
    sys.meta_path.insert(0, finder)
    for name in list(targets):  # modules imported before the hook was installed
        module = sys.modules.get(name)
        if module is not None:
            recorder.wrap(module, targets[name])


class _Recorder:
    def __init__(self, directory: str, samples: int) -> None:
        self.path = os.path.join(directory, f"records-{os.getpid()}.pkl")
        self.samples = samples
        self.seen: dict[str, set[bytes]] = {}

    def wrap(self, module: types.ModuleType, names: Sequence[str]) -> None:
        for name in names:
            cls = getattr(module, name, None)
            if isinstance(cls, type) and "__pytreekit_recorded__" not in cls.__dict__:
                self._wrap_class(cls, f"{module.__name__}.{name}")

    def _wrap_class(self, cls: type, key: str) -> None:
        original: Callable[..., None] = cls.__init__  # type: ignore[misc]  # what instances run
        recorder = self

        @functools.wraps(original)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            if type(self) is cls:
                recorder.record(key, args, kwargs)

        type.__setattr__(cls, "__init__", __init__)
        type.__setattr__(cls, "__pytreekit_recorded__", True)

    def record(self, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen = self.seen.setdefault(key, set())
        if len(seen) >= self.samples or _placeholders(args, kwargs):
            return
        try:
            data = pickle.dumps((args, kwargs))
        except Exception:  # a tracer, a lambda, a lock: not replayable elsewhere
            return
        if data in seen:
            return
        seen.add(data)
        with open(self.path, "ab") as file:
            pickle.dump((key, data), file)


def _placeholders(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """JAX rebuilds trees with ``None`` or ``object()`` in place of leaves (and hand-written
    unflatten passes them to ``__init__``): such calls say nothing about real instances."""
    values = [*args, *kwargs.values()]
    return bool(values) and all(v is None or type(v) is object for v in values)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it lets the other finders find a target module, then wraps its
    loader's ``exec_module`` so that the classes are wrapped once the module body ran."""

    def __init__(self, targets: dict[str, list[str]], recorder: _Recorder) -> None:
        self.targets = targets
        self.recorder = recorder

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        names = self.targets.get(fullname)
        if names is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                self._wrap_loader(spec.loader, names)
            return spec
        return None

    def _wrap_loader(self, loader: importlib.abc.Loader, names: list[str]) -> None:
        execute = loader.exec_module
        recorder = self.recorder

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            recorder.wrap(module, names)

        loader.exec_module = exec_module  # type: ignore[method-assign]


def read(directory: str, samples: int) -> dict[str, list[bytes]]:
    """The recorded arguments by class (``module.Name``), distinct, at most ``samples`` each."""
    found: dict[str, list[bytes]] = {}
    for name in sorted(os.listdir(directory)):
        if not name.startswith("records-"):
            continue
        with open(os.path.join(directory, name), "rb") as file:
            while True:
                try:
                    key, data = pickle.load(file)
                except EOFError:
                    break
                records = found.setdefault(key, [])
                if data not in records and len(records) < samples:
                    records.append(data)
    return found


SITECUSTOMIZE = """\
# Written by pytreekit.migrate --verify: records constructor arguments, then runs the
# sitecustomize this one shadows, if there is one.
import importlib.util as _util
import os as _os
import sys as _sys

_spec = _util.spec_from_file_location("_pytreekit_migrate_recorder", {recorder!r})
_module = _util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_module.install(_os.environ[{environment!r}])

_here = _os.path.dirname(_os.path.abspath(__file__))
_self = _sys.modules.pop("sitecustomize", None)
_path = list(_sys.path)
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
try:
    import sitecustomize  # noqa: F401
except ImportError:
    _sys.modules["sitecustomize"] = _self  # the import system expects a module under the name
finally:
    _sys.path[:] = _path
"""


def sitecustomize() -> str:
    """The ``sitecustomize.py`` source that installs this recorder."""
    return SITECUSTOMIZE.format(recorder=os.path.abspath(__file__), environment=ENVIRONMENT)
