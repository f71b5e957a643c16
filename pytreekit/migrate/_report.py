"""The report: one entry per registration, then a summary; as text, or as JSON (``--report json``).

The JSON form is the data; the text form is rendered from it, so both always say the same.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._analyze import Outcome
from ._codes import TITLES
from ._rewrite import decorator_source
from ._scan import Module, Project, code
from ._values import Refusal


def build(
    project: Project,
    outcomes: Sequence[Outcome],
    changed: Sequence[Module],
    *,
    verify: str | None,
    failures: dict[str, str] | None = None,
    written: bool = True,
) -> dict[str, Any]:
    """The report as JSON-able data."""
    entries = [_entry(outcome, verify) for outcome in outcomes]
    _mark_unwritten(project, outcomes, entries, failures or {})
    counted = [o for o in outcomes if not o.suppressed]
    left = Counter(o.code for o in counted if o.verdict == "left" and o.code)
    unparsed = [
        {"file": module.display, "error": module.error}
        for module in project.modules
        if module.error is not None
    ]
    failed_files = [*unparsed, *({"file": f, "error": e} for f, e in (failures or {}).items())]
    skipped = [
        {"file": module.display, "reason": module.skipped}
        for module in project.modules
        if module.skipped is not None
    ]
    warnings = sum(o.verdict != "rewritten" or o.code is not None for o in counted)
    runtime = sorted(
        {
            o.rewrite.cls.module.display
            for o in outcomes
            if o.rewrite is not None and o.verdict == "rewritten"
        }
    )
    summary = {
        "files_scanned": len(project.modules),
        "files_not_parsed": len(unparsed),
        "registrations": len(outcomes),
        "rewritten": sum(e["verdict"] == "rewritten" for e in entries),
        "not_written": sum(e["verdict"] == "not written" for e in entries),
        "unsafe": sum(o.verdict == "unsafe" for o in counted),
        "left": dict(sorted(left.items())),
        "failed": sum(o.verdict == "failed" for o in outcomes),
        "suppressed": sum(bool(o.suppressed) for o in outcomes),
        "files_changed": sorted(module.display for module in changed),
        "written": written,
        # the final count line's numbers (as LibCST's codemod runner gives them)
        "transformed": len(changed),
        "skipped": len(skipped),
        "warnings": warnings,
        "failures": len(failed_files),
        "imports_pytreekit": [m for m in runtime if m in {c.display for c in changed}],
    }
    return {
        "registrations": entries,
        "not_parsed": unparsed,
        "failed_files": failed_files,
        "skipped_files": skipped,
        "summary": summary,
    }


def _mark_unwritten(
    project: Project,
    outcomes: Sequence[Outcome],
    entries: list[dict[str, Any]],
    failures: dict[str, str],
) -> None:
    """A rewrite counts once written (with --diff/--check: once its files could be): one whose
    file failed says so instead."""
    failing = set(failures) | {m.display for m in project.modules if m.error is not None}
    for outcome, entry in zip(outcomes, entries, strict=True):
        if outcome.verdict == "rewritten" and _touched(outcome) & failing:
            entry["verdict"] = "not written"


def _touched(outcome: Outcome) -> set[str]:
    """The files a rewrite edits: its class's, its registration's, its functions'."""
    plan = outcome.rewrite
    if plan is None:
        return set()
    modules = [plan.cls.module, outcome.registration.module]
    return {m.display for m in [*modules, *(m for m, _ in plan.remove_functions)]}


def _entry(outcome: Outcome, verify: str | None) -> dict[str, Any]:
    registration = outcome.registration
    entry: dict[str, Any] = {
        "file": registration.module.display,
        "line": registration.line,
        "column": registration.column,
        "class": registration.target_text,
        "classes": list(registration.registers),
        "api": registration.api,
        "verdict": outcome.verdict,
        "code": outcome.code,
        "title": TITLES.get(outcome.code or "", ""),
        "reason": outcome.reason,
        "reasons": [_reason(registration.module, refusal) for refusal in outcome.reasons],
        "suppressed": outcome.suppressed or None,
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
            "dataclass": plan.becomes_dataclass or None,
            "removed": list(plan.remove_methods)
            + [_function_name(node) for _, node in plan.remove_functions],
            "kept": dict(plan.kept_methods),
            "unsafe": [{"code": u.code, "reason": u.reason} for u in plan.unsafe],
        }
        entry["proven"] = plan.proven
        # a rewrite --verify saw no instance of keeps what it could not prove
        entry["not_proven"] = [] if outcome.verified else plan.unproven
        entry["verified"] = outcome.verified or None
    return entry


def _reason(module: Module, refusal: Refusal) -> dict[str, Any]:
    """A reason with where it is: file:line:col of the code it names, and that code."""
    found: dict[str, Any] = {"code": refusal.code, "reason": refusal.reason}
    node = refusal.node
    if node is not None:
        for where, top in refusal.where:
            position = where.locate(node, [top])
            if position is not None:
                found["file"] = where.display
                found["line"], found["column"] = position
                break
        found["excerpt"] = code(node, 80)
    return found


def _function_name(node: object) -> str:
    name = getattr(node, "name", None)
    return str(name.value) if name is not None else "lambda"


def as_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def as_text(report: dict[str, Any]) -> str:
    """The report for people: an entry per registration, then the summary, then the final
    count line."""
    lines: list[str] = []
    for entry in report["registrations"]:
        if entry.get("suppressed"):
            continue
        classes = f" [registers {', '.join(entry['classes'])}]" if entry.get("classes") else ""
        head = (
            f"{entry['file']}:{entry['line']}:{entry.get('column', 1)}: {entry['class']}{classes} "
            f"({entry['api']}): "
        )
        verdict, code = entry["verdict"], entry["code"]
        labels = {
            "rewritten": f"rewritten, unsafe {code}",
            "unsafe": f"not rewritten, unsafe {code} (--unsafe applies it)",
            "left": f"left, {code}",
            "failed": f"failed verification, left, {code}",
            "not written": "not written: its file failed (below)",
        }
        plain = "rewritten" if verdict == "rewritten" else labels[verdict]
        lines.append(head + (plain if code is None else labels[verdict]))
        if code is not None:
            lines.append(f"    {entry['reason']}")
        for reason in entry.get("reasons", [])[1:]:
            lines.append(f"    also {reason['code']}: {reason['reason']}")
        for reason in entry.get("reasons", []):
            if "line" in reason:
                lines.append(
                    f"    {reason['code']} at {reason['file']}:{reason['line']}:"
                    f"{reason['column']}: {reason['excerpt']}"
                )
        changes = entry.get("changes")
        if changes is not None:
            lines.extend(f"    {line}" for line in _changes(entry, changes))
    summary = report["summary"]
    for failure in report.get("failed_files", report["not_parsed"]):
        lines.append(f"{failure['file']}: failed: {failure['error']}")
    for skipped in report.get("skipped_files", []):
        lines.append(f"{skipped['file']}: skipped ({skipped['reason']})")
    left = ", ".join(f"{code}: {count}" for code, count in summary["left"].items())
    not_parsed = summary["files_not_parsed"]
    lines.append(
        f"Summary: {_count(summary['files_scanned'], 'file')} scanned"
        + (f" ({not_parsed} not parsed)" if not_parsed else "")
        + f", {_count(summary['registrations'], 'registration')} found:"
    )
    suppressed = summary.get("suppressed", 0)
    lines.append(
        f"    {summary['rewritten']} rewritten, "
        + (f"{summary['not_written']} not written, " if summary.get("not_written") else "")
        + f"{summary['unsafe']} unsafe (not applied), "
        f"{sum(summary['left'].values())} left{f' ({left})' if left else ''}, "
        f"{summary['failed']} failed verification"
        + (f", {suppressed} suppressed" if suppressed else "")
        + f"; {_count(len(summary['files_changed']), 'file')} "
        + ("changed." if summary.get("written", True) else "would change.")
    )
    runtime = summary.get("imports_pytreekit", [])
    if runtime:
        lines.append(
            f"    {_count(len(runtime), 'module')} now import{'s' if len(runtime) == 1 else ''} "
            f"pytreekit at run time: add "
            f"pytreekit to your package's dependencies."
        )
    lines.append(final_line(summary))
    return "".join(_wrapped(line) for line in lines)


WIDTH = 100  # the text report's lines, as a terminal and the guide's code blocks show them


def _wrapped(line: str) -> str:
    """A report line, folded at word boundaries under ``WIDTH`` columns; a continuation is
    indented four columns deeper than the line it continues."""
    if len(line) <= WIDTH:
        return line + "\n"
    indent = line[: len(line) - len(line.lstrip())]
    return (
        textwrap.fill(
            line.strip(),
            WIDTH,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        + "\n"
    )


def final_line(summary: dict[str, Any]) -> str:
    """The last line of every text report, whatever happened (LibCST's runner's four counts)."""
    transformed = summary.get("transformed", len(summary["files_changed"]))
    verb = "transformed" if summary.get("written", True) else "would be transformed"
    return (
        f"{_count(transformed, 'file')} {verb}, {summary.get('skipped', 0)} skipped, "
        f"{_count(summary.get('warnings', 0), 'warning')}, "
        f"{_count(summary.get('failures', 0), 'failure')}."
    )


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
    if changes.get("dataclass"):
        lines.append(f"dataclass: {changes['dataclass']}")
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
