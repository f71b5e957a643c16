"""The report: one entry per registration, then a summary; as text, or as JSON (``--report json``).

The JSON form is the data; the text form is rendered from it, so both always say the same.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._analyze import Outcome
from ._codes import TITLES
from ._rewrite import decorator_source
from ._scan import Module, Project


def build(
    project: Project,
    outcomes: Sequence[Outcome],
    changed: Sequence[Module],
    *,
    verify: str | None,
) -> dict[str, Any]:
    """The report as JSON-able data."""
    entries = [_entry(outcome, verify) for outcome in outcomes]
    left = Counter(o.code for o in outcomes if o.verdict == "left" and o.code)
    unparsed = [
        {"file": module.display, "error": module.error}
        for module in project.modules
        if module.error is not None
    ]
    summary = {
        "files_scanned": len(project.modules),
        "files_not_parsed": len(unparsed),
        "registrations": len(outcomes),
        "rewritten": sum(o.verdict == "rewritten" for o in outcomes),
        "unsafe": sum(o.verdict == "unsafe" for o in outcomes),
        "left": dict(sorted(left.items())),
        "failed": sum(o.verdict == "failed" for o in outcomes),
        "files_changed": sorted(module.display for module in changed),
    }
    return {"registrations": entries, "not_parsed": unparsed, "summary": summary}


def _entry(outcome: Outcome, verify: str | None) -> dict[str, Any]:
    registration = outcome.registration
    entry: dict[str, Any] = {
        "file": registration.module.display,
        "line": registration.line,
        "class": registration.target_text,
        "api": registration.api,
        "verdict": outcome.verdict,
        "code": outcome.code,
        "title": TITLES.get(outcome.code or "", ""),
        "reason": outcome.reason,
    }
    plan = outcome.rewrite
    if plan is not None:
        entry["changes"] = {
            "decorator": f"@{decorator_source(plan)}",
            "statics": list(plan.static),
            "leaf_order": {
                "kept": plan.order_kept,
                "before": list(plan.children),
                "after": list(plan.leaves),
            },
            "key_paths": [
                {"before": before, "after": f".{name}"}
                for before, name in zip(plan.keys_before, plan.children, strict=True)
            ],
            "init_on_unflatten": plan.init_notes if plan.rebuilt_by_init else None,
            "hashing": plan.hashing,
            "removed": list(plan.remove_methods)
            + [_function_name(node) for _, node in plan.remove_functions],
            "kept": dict(plan.kept_methods),
            "unsafe": [{"code": u.code, "reason": u.reason} for u in plan.unsafe],
        }
        entry["proven"] = plan.proven
        entry["not_proven"] = plan.unproven if verify is None else []
        entry["verified"] = outcome.verified or None
    return entry


def _function_name(node: object) -> str:
    name = getattr(node, "name", None)
    return str(name.value) if name is not None else "lambda"


def as_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def as_text(report: dict[str, Any]) -> str:
    """The report for people: an entry per registration, then the summary."""
    lines: list[str] = []
    for entry in report["registrations"]:
        head = f"{entry['file']}:{entry['line']}: {entry['class']} ({entry['api']}): "
        verdict, code = entry["verdict"], entry["code"]
        labels = {
            "rewritten": f"rewritten, unsafe {code}",
            "unsafe": f"not rewritten, unsafe {code} (--unsafe applies it)",
            "left": f"left, {code}",
            "failed": f"failed verification, left, {code}",
        }
        lines.append(head + ("rewritten" if code is None else labels[verdict]))
        if code is not None:
            lines.append(f"    {entry['reason']}")
        changes = entry.get("changes")
        if changes is not None:
            lines.extend(f"    {line}" for line in _changes(entry, changes))
    summary = report["summary"]
    for failure in report["not_parsed"]:
        lines.append(f"{failure['file']}: not parsed ({failure['error']}); nothing changed there")
    left = ", ".join(f"{code}: {count}" for code, count in summary["left"].items())
    not_parsed = summary["files_not_parsed"]
    lines.append(
        f"Summary: {_count(summary['files_scanned'], 'file')} scanned"
        + (f" ({not_parsed} not parsed)" if not_parsed else "")
        + f", {_count(summary['registrations'], 'registration')} found:"
    )
    lines.append(
        f"    {summary['rewritten']} rewritten, {summary['unsafe']} unsafe (not applied), "
        f"{sum(summary['left'].values())} left{f' ({left})' if left else ''}, "
        f"{summary['failed']} failed verification; "
        f"{_count(len(summary['files_changed']), 'file')} changed."
    )
    return "\n".join(lines) + "\n"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _changes(entry: dict[str, Any], changes: dict[str, Any]) -> list[str]:
    lines = [changes["decorator"]]
    statics = changes["statics"]
    lines.append(f"statics: {', '.join(statics) if statics else 'none'}")
    order = changes["leaf_order"]
    if order["kept"]:
        lines.append(f"leaf order: kept ({', '.join(order['after']) or 'no leaves'})")
    else:
        lines.append(
            f"leaf order: changed from ({', '.join(order['before'])}) to "
            f"({', '.join(order['after'])})"
        )
    paths = [
        f"{p['before']} -> {p['after']}" for p in changes["key_paths"] if p["before"] != p["after"]
    ]
    lines.append(f"key paths: {', '.join(paths) if paths else 'unchanged'}")
    init = changes["init_on_unflatten"]
    if init is None:
        lines.append("unflatten: without __init__, as before")
    else:
        did = "; ".join(init) if init else "it only stored its arguments"
        lines.append(f"__init__ no longer runs on unflatten: {did}")
    lines.append(f"hashing: {changes['hashing']}")
    if changes["removed"]:
        lines.append(f"removed: {', '.join(changes['removed'])}")
    for method, why in changes["kept"].items():
        lines.append(f"kept {method}: {why}")
    for unsafe in changes["unsafe"][1:]:
        lines.append(f"also unsafe, {unsafe['code']}: {unsafe['reason']}")
    lines.append(f"proven: {', '.join(entry['proven'])}")
    if entry.get("verified"):
        lines.append(f"verified: {entry['verified']}")
    elif entry["not_proven"]:
        lines.append(f"not proven: {', '.join(entry['not_proven'])} (--verify checks them)")
    return lines
