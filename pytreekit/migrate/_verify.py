"""``--verify``: the rewrites checked against the user's own code.

1. Run the user's command (their tests, by default) on the original code with the recorder
   installed (``_recorder``): it keeps the constructor arguments of each class to rewrite.
2. Write the rewritten modules into a scratch copy of their packages.
3. Rebuild every recorded instance twice, in two processes (``_worker``): with the original
   modules importable, then with the rewritten ones first on the path; compare the fingerprints.
4. A class whose instances differ in any way (or fail to build: an unhashable static) is left as
   it was, with a PTK120 comment; so are the rewritten bases that needed it. The run fails.
"""

from __future__ import annotations

import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._analyze import Options, Outcome, decide_hierarchies
from ._recorder import ENVIRONMENT, read, sitecustomize
from ._rewrite import rewrite
from ._scan import Project

DEFAULT_COMMAND = "python -m pytest"
SAMPLES = 5  # recorded constructor calls per class
_LONGEST = 400  # characters of an error message kept in a PTK120 comment
_STEPS = {
    "construct": "building the instance",
    "leaves": "the leaves (order, dtype, shape, values)",
    "statics": "the static values",
    "treedef_equal": "treedef equality of two instances built alike",
    "round_trip": "the round trip through flatten and unflatten",
    "jit": "jax.jit of the identity",
    "grad": "jax.grad of a sum of squares",
}


class VerificationError(Exception):
    """The command could not run on the original code: nothing can be verified."""


def verify(project: Project, outcomes: Sequence[Outcome], command: str, options: Options) -> bool:
    """Check the rewrites the outcomes hold; revert those that differ. True when none did."""
    targets = [o for o in outcomes if o.verdict == "rewritten" and o.rewrite is not None]
    if not targets:
        return True
    with tempfile.TemporaryDirectory(prefix="pytreekit-migrate-") as directory:
        work = Path(directory)
        spec = _spec(targets, work)
        records = _record(project, spec, work, command)
        original_roots = _roots(project)
        scratch_roots = _scratch(project, outcomes, work)
        before = _measure(spec, records, original_roots, work / "before.json")
        after = _measure(spec, records, [*scratch_roots, *original_roots], work / "after.json")
    failed = []
    for outcome in targets:
        assert outcome.rewrite is not None
        key = outcome.rewrite.cls.qualname
        calls = len(records.get(key, []))
        if calls == 0:
            outcome.rewrite.unproven.append("no instance was built while the command ran")
            continue
        difference = compare(before.get(key, {}), after.get(key, {}))
        if difference:
            failed.append(outcome)
            outcome.verdict, outcome.code = "failed", "PTK120"
            outcome.reason = f"{difference}; delete this comment to try again"
            outcome.rewrite = None
        else:
            outcome.verified = (
                f"{calls} recorded instance{'s' if calls > 1 else ''} rebuilt alike "
                f"(leaves, statics, treedefs, round trip, jit, grad)"
            )
    # a rewritten base whose hand-registered subclass failed goes back too
    decide_hierarchies(project, outcomes, options)
    return not failed


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The first difference between two fingerprints of a class, as a sentence, or ''."""
    if "import" in after:
        return f"the rewritten module does not import: {after['import'][1]}: {after['import'][2]}"
    for index, (one, two) in enumerate(
        zip(before.get("calls", []), after.get("calls", []), strict=True)
    ):
        for step, what in _STEPS.items():
            if one.get(step) != two.get(step):
                detail = ""
                if isinstance(two.get(step), list) and two[step][:1] == ["error"]:
                    # the whole message (its advice is often the second sentence), bounded:
                    # a repr in it may be as long as the value
                    message = " ".join(str(two[step][2]).split())
                    if len(message) > _LONGEST:
                        message = message[:_LONGEST].rsplit(" ", 1)[0] + " ..."
                    detail = f": {two[step][1]}: {message}"
                return f"recorded call {index + 1} differs in {what}{detail}"
    return ""


def _spec(targets: Sequence[Outcome], work: Path) -> dict[str, Any]:
    classes = []
    for outcome in targets:
        assert outcome.rewrite is not None
        info = outcome.rewrite.cls
        registration = outcome.registration.module.name
        classes.append(
            {
                "module": info.module.name,
                "name": info.name,
                "static": list(outcome.rewrite.static),
                # the original registers the class here (PTK203): imported first
                "imports": [registration] if registration != info.module.name else [],
            }
        )
    records = work / "records"
    records.mkdir()
    spec = {"classes": classes, "records": str(records), "samples": SAMPLES}
    (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    return spec


def _roots(project: Project) -> list[str]:
    return list(dict.fromkeys(str(module.root) for module in project.modules))


def _environment(paths: Sequence[str]) -> dict[str, str]:
    environment = dict(os.environ)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = os.pathsep.join([*paths, *([existing] if existing else [])])
    return environment


def _record(
    project: Project, spec: dict[str, Any], work: Path, command: str
) -> dict[str, list[bytes]]:
    shim = work / "recorder"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(sitecustomize(), encoding="utf-8")
    environment = _environment([str(shim), *_roots(project)])
    environment[ENVIRONMENT] = str(work / "spec.json")
    if command == DEFAULT_COMMAND:
        argv: list[str] | str = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    else:
        argv = command
    result = subprocess.run(
        argv,
        shell=isinstance(argv, str),
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode not in (0, 5):  # 5: pytest collected no tests
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise VerificationError(
            f"the command {shlex.join(argv) if isinstance(argv, list) else argv} failed on the "
            f"original code (exit {result.returncode}); nothing was verified or written:\n"
            + "\n".join(tail)
        )
    return read(spec["records"], SAMPLES)


def _scratch(project: Project, outcomes: Sequence[Outcome], work: Path) -> list[str]:
    """Copies of the packages that change, with the rewritten modules written in."""
    sources, _ = rewrite(project, outcomes)
    roots: dict[Path, Path] = {}
    for module in sources:
        copy_root = roots.setdefault(module.root, work / "rewritten" / str(len(roots)))
        top = module.name.partition(".")[0]
        source = module.root / top
        if source.is_dir():
            if not (copy_root / top).exists():
                shutil.copytree(
                    source, copy_root / top, ignore=shutil.ignore_patterns("__pycache__", ".*")
                )
        else:
            copy_root.mkdir(parents=True, exist_ok=True)
    for module, new in sources.items():
        target = roots[module.root] / module.path.relative_to(module.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(new.encode("utf-8"))
    return [str(path) for path in roots.values()]


def _measure(
    spec: dict[str, Any], records: dict[str, list[bytes]], paths: Sequence[str], out: Path
) -> dict[str, Any]:
    records_path = out.with_suffix(".records")
    records_path.write_bytes(pickle.dumps(records))
    spec_path = out.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    # The pytreekit this codemod belongs to, for the rewritten modules' "from pytreekit import".
    home = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytreekit.migrate._worker",
            str(spec_path),
            str(records_path),
            str(out),
        ],
        env=_environment([*paths, home]),
        cwd=out.parent,  # not the user's directory: "-m" puts the working directory first
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise VerificationError(
            f"rebuilding the recorded instances failed:\n{result.stderr.strip()[-2000:]}"
        )
    results: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return results
