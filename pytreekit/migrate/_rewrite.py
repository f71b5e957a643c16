"""The edits, made with LibCST so that comments and formatting survive.

For a rewritten class: ``@pytree_class(...)`` (replacing the registration decorator, or on top of
the class's decorators), its flatten/unflatten methods removed (kept where a base declares them
abstract or other code calls them), the registration call and module-level flatten/unflatten
functions deleted, ``from pytreekit import pytree_class`` added once and the imports the deleted
code alone used removed (``_imports``).

For every other registration: one comment above it (``_codes.comment``), replacing the comment a
previous run left there, so a second run changes nothing.
"""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from ._analyze import Outcome, Rewrite
from ._codes import COMMENT_PATTERN, CONTINUATION, comment, reason_of
from ._imports import add_import, decorator_name, names_in, remove_unused, unused_names
from ._scan import Module, Project, encodable, encode

Anchor = cst.ClassDef | cst.SimpleStatementLine


@dataclass(eq=False)
class _Edits:
    """Everything to change in one module, keyed by the nodes the scan parsed."""

    decorate: dict[cst.ClassDef, tuple[cst.Decorator | None, str]] = field(default_factory=dict)
    drop_methods: dict[cst.ClassDef, set[str]] = field(default_factory=dict)
    drop: set[cst.CSTNode] = field(default_factory=set)
    comments: dict[Anchor, str | None] = field(default_factory=dict)
    nested: bool = False  # an edit inside a block (a comment above a registration in a def)
    # words of the other modules that name this one: an import they may take from it stays
    imported_elsewhere: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.decorate or self.drop_methods or self.drop or self.comments)


def rewrite(
    project: Project,
    outcomes: Sequence[Outcome],
    *,
    line_length: int = 88,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[Module, str], dict[Module, str]]:
    """The new source of every module the outcomes change, and why a module could not be
    rewritten (its new source does not compile, or the rewrite failed): a failure is per
    module, and such a module is left as it was."""
    edits: dict[Module, _Edits] = {}

    def of(module: Module) -> _Edits:
        return edits.setdefault(module, _Edits())

    for outcome in outcomes:
        registration = outcome.registration
        anchor = registration.anchor
        if outcome.verdict == "rewritten" and outcome.rewrite is not None:
            plan = outcome.rewrite
            node = plan.cls.node
            class_edits = of(plan.cls.module)
            replaced = registration.node if registration.form == "decorator" else None
            assert replaced is None or isinstance(replaced, cst.Decorator)
            class_edits.decorate[node] = (replaced, decorator_source(plan))
            if plan.remove_methods:
                class_edits.drop_methods.setdefault(node, set()).update(plan.remove_methods)
            if registration.form == "decorator":
                class_edits.comments[node] = None
            else:
                call_edits = of(registration.module)
                assert anchor is not None
                call_edits.drop.add(_small_statement(anchor, registration.node))
            for module, function in plan.remove_functions:
                of(module).drop.add(function)
        elif anchor is not None and outcome.comment:
            code = outcome.code
            assert code is not None
            # a nested registration's comment is indented: keep it within the line length
            width = line_length - (8 if registration.place else 0)
            module_edits = of(registration.module)
            reason = encodable(registration.module, outcome.reason)
            module_edits.comments[anchor] = comment(code, reason, width)
            module_edits.nested |= bool(registration.place)
    work = [(m, e) for m, e in edits.items() if e and m.tree is not None]
    for module, module_edits in work:
        module_edits.imported_elsewhere = _imported_elsewhere(project, module)
    results = _in_workers(work, jobs, progress) if jobs > 1 and len(work) > 1 else None
    sources: dict[Module, str] = {}
    failures: dict[Module, str] = {}
    for index, (module, module_edits) in enumerate(work):
        if results is None:
            result = _module_result(module, module_edits)
            if progress is not None:
                progress(index + 1, len(work))
        else:
            result = results[index]
        kind, text = result
        if kind == "failed":
            failures[module] = text
        elif text != module.source:
            sources[module] = text
    return sources, failures


def _module_result(module: Module, edits: _Edits) -> tuple[str, str]:
    """("new", the module's new source), or ("failed", why): a failure is this module's."""
    if module.changed_line():  # the analysis leaves its registrations: never reached
        return (
            "failed",
            f"not written: LibCST does not give its text back unchanged (line "
            f"{module.changed_line()}); please report it",
        )
    try:
        new = _apply(module, edits)
        compile(new, module.display, "exec", dont_inherit=True)
        # here, not only when writing: --check and --diff then name the same failure
        encode(module, new)
    except UnicodeEncodeError as error:
        return (
            "failed",
            f"not written: the new text cannot be written in the file's encoding ({error}); "
            f"please report it",
        )
    except SyntaxError as error:
        return (
            "failed",
            f"the rewritten module does not compile ({error.msg}, line {error.lineno}): not "
            f"written; please report it",
        )
    except Exception as error:  # a bug of the codemod is one module's failure, not the run's
        return (
            "failed",
            f"the codemod failed on it ({type(error).__name__}: {error}): not written; please "
            f"report it",
        )
    return "new", new


# The modules and their edits, for forked workers: they inherit the parsed trees (sending a
# LibCST tree to another process costs as much as parsing it again).
_WORK: list[tuple[Module, _Edits]] = []


def _work_item(index: int) -> tuple[str, str]:
    module, edits = _WORK[index]
    return _module_result(module, edits)


def _in_workers(
    work: list[tuple[Module, _Edits]],
    jobs: int,
    progress: Callable[[int, int], None] | None,
) -> list[tuple[str, str]] | None:
    """The modules' results from ``jobs`` forked processes; None where processes cannot be
    forked (the caller then works alone)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    _WORK[:] = work
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(min(jobs, len(work))) as pool:
            results: list[tuple[str, str]] = []
            for result in pool.imap(_work_item, range(len(work))):
                results.append(result)
                if progress is not None:
                    progress(len(results), len(work))
            return results
    except OSError:
        return None
    finally:
        _WORK.clear()


def decorator_source(plan: Rewrite) -> str:
    """``pytree_class`` with the options the rewrite needs."""
    options = []
    if plan.static:
        names = ", ".join(f'"{name}"' for name in plan.static)
        options.append(f"static=({names}{',' if len(plan.static) == 1 else ''})")
    if plan.write_eq:
        options.append("eq=False")
    if plan.write_repr:
        options.append("repr=False")
    return f"pytree_class({', '.join(options)})" if options else "pytree_class"


def _small_statement(anchor: Anchor, call: cst.CSTNode) -> cst.CSTNode:
    """The statement of a line that holds the call (``register(A)`` or ``A = register(A)``)."""
    assert isinstance(anchor, cst.SimpleStatementLine)
    return next(
        small
        for small in anchor.body
        if isinstance(small, (cst.Expr, cst.Assign)) and small.value is call
    )


def _apply(module: Module, edits: _Edits) -> str:
    assert module.tree is not None
    defined = [*module.classes, *module.functions, *module.lambdas]
    name = decorator_name(module.names, defined)
    transformer = _Transformer(edits, name)
    new = module.tree.visit(transformer)
    # LibCST drops the last line ending of a CR-only file (it finds no trailing newline there)
    new = new.with_changes(has_trailing_newline=module.source.endswith(("\n", "\r")))
    if edits.decorate:
        new = add_import(new, name)
    code = new.code
    # the module's leading comments (a license, a source line) do not keep an import
    header = "".join(new.code_for_node(line) for line in new.header)
    unused = unused_names(code[len(header) :], transformer.removed) - edits.imported_elsewhere
    # Only JAX's names go: any other may be what the module re-exports (a package's __init__
    # importing the class it registers), which code outside the scanned files imports from it.
    unused = {n for n in unused if _from_jax(module.names.get(n, ""))}
    return remove_unused(new, unused).code if unused else code


def _from_jax(qualified: str) -> bool:
    return qualified == "jax" or qualified.startswith("jax.")


def _imported_elsewhere(project: Project, module: Module) -> frozenset[str]:
    """The imported names of this module that another scanned module takes from it
    (``from models import register_pytree_node_class``, ``models.jnp``, ``from models import
    *``): the rewrite keeps those imports, or the other module would no longer import."""
    short = re.escape(module.name.rpartition(".")[2])
    source = rf"from\s+[.\w]*\b{short}\s+import\s+"
    found: set[str] = set()
    for other in project.modules:
        if other is module or module.name.rpartition(".")[2] not in other.words():
            continue
        if re.search(source + r"\*", other.source):
            return frozenset(module.names)
        found.update(
            name
            for name in module.names
            if name in other.words()
            and re.search(
                rf"\b{short}\s*\.\s*{name}\b|{source}(?:\([^)]*|[^\n;]*)\b{name}\b",
                other.source,
            )
        )
    return frozenset(found)


class _Transformer(cst.CSTTransformer):
    def __init__(self, edits: _Edits, decorator: str) -> None:
        super().__init__()
        self.edits = edits
        self.decorator = decorator  # how the module names pytree_class
        self.removed: set[str] = set()  # the names the deleted code used
        # Blank lines: a statement that follows deleted ones takes their place, so it keeps the
        # blank lines above them (none at the top of a block), not fewer.
        self.depth = 0
        self.carry: dict[int, int] = {}  # depth -> blank lines above the deleted statements
        self.started: dict[int, bool] = {}  # depth -> a statement of this block was kept
        # depth -> comment lines above the deleted statements set off from them by a blank
        # line (a section's banner): they go to the next statement kept, if it is of the section
        self.banner: dict[int, list[cst.EmptyLine]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Every edit is of a statement: expressions need not be walked (most of the nodes);
        # and every edit is of a top-level statement (its decorators, its methods, itself)
        # unless one is nested: then the blocks of the top-level statements need no walk.
        if isinstance(node, cst.BaseExpression):
            return False
        if not self.edits.nested and self.depth == 0 and isinstance(node, _STATEMENTS):
            super().on_visit(node)
            return False
        return super().on_visit(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.depth += 1
        self.started[self.depth] = False

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.BaseSuite:
        self.carry.pop(self.depth, None)
        self.banner.pop(self.depth, None)
        self.depth -= 1
        return updated_node

    def on_leave(
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        result = super().on_leave(original_node, updated_node)
        if not isinstance(original_node, _STATEMENTS):
            return result
        if isinstance(result, cst.RemovalSentinel):
            self._carry(original_node)
        elif isinstance(result, _STATEMENTS):
            return cast(cst.CSTNodeT, self._place(result))
        return result

    def _carry(self, removed: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> None:
        blank = _blank_lines(removed.leading_lines)
        self.carry[self.depth] = max(self.carry.get(self.depth, 0), blank)
        detached = _detached(_with_comment(removed.leading_lines, None))
        if detached:
            self.banner[self.depth] = [*self.banner.get(self.depth, []), *detached]

    def _place(
        self, statement: cst.SimpleStatementLine | cst.BaseCompoundStatement
    ) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
        first = not self.started.get(self.depth, True)
        self.started[self.depth] = True
        carry = self.carry.pop(self.depth, None)
        banner = self.banner.pop(self.depth, None)
        if carry is None:
            return statement
        statement = _spaced(statement, carry, first=first)
        lines = list(statement.leading_lines)
        if banner and not _detached(_with_comment(lines, None)):
            # no banner of its own (a comment right above it, or the codemod's, is none): it
            # goes on the section the banner heads, above the statement's own comments
            blank = 0 if first else _blank_lines(lines)
            lines = lines[:blank] + banner[_blank_lines(banner) :] + lines[blank:]
            if first:
                lines = lines[_blank_lines(lines) :]
            statement = statement.with_changes(leading_lines=lines)
        return statement

    def _removed(self, node: cst.CSTNode) -> None:
        # The imports only the removed code used go too (if nothing else uses them).
        self.removed |= names_in([node])

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef | cst.RemovalSentinel:
        node = updated_node
        methods = self.edits.drop_methods.get(original_node)
        if methods:
            node = node.with_changes(body=self._without_methods(original_node, node, methods))
        decoration = self.edits.decorate.get(original_node)
        if decoration is not None:
            replaced, source = decoration
            node = node.with_changes(
                decorators=self._decorators(original_node, node, replaced, source)
            )
        if original_node in self.edits.comments:
            node = node.with_changes(
                leading_lines=_with_comment(node.leading_lines, self.edits.comments[original_node])
            )
        return node

    def _without_methods(
        self, original: cst.ClassDef, updated: cst.ClassDef, names: set[str]
    ) -> cst.BaseSuite:
        body = updated.body
        assert isinstance(body, cst.IndentedBlock)
        kept: list[cst.BaseStatement] = []
        carry: int | None = None
        for before, after in zip(_block(original.body), body.body, strict=True):
            if isinstance(before, cst.FunctionDef) and before.name.value in names:
                self._removed(before)
                carry = max(carry or 0, _blank_lines(before.leading_lines))
                continue
            if carry is not None:
                assert isinstance(after, _STATEMENTS)
                after = _spaced(after, carry, first=not kept)
                carry = None
            kept.append(after)
        if not kept:
            kept = [cst.SimpleStatementLine(body=[cst.Pass()])]
        return body.with_changes(body=kept)

    def _decorators(
        self,
        original: cst.ClassDef,
        updated: cst.ClassDef,
        replaced: cst.Decorator | None,
        source: str,
    ) -> list[cst.Decorator]:
        expression = cst.parse_expression(self.decorator + source.removeprefix("pytree_class"))
        decorators: list[cst.Decorator] = []
        if replaced is None:
            decorators.append(cst.Decorator(decorator=expression))
        for before, after in zip(original.decorators, updated.decorators, strict=True):
            if before is replaced:
                self._removed(before)
                decorators.append(after.with_changes(decorator=expression))
            else:
                decorators.append(after)
        return decorators

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        if original_node in self.edits.drop:
            self._removed(original_node)
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        node = updated_node
        dropped = [
            small
            for small in original_node.body
            if small in self.edits.drop or self._drops_lambda(small)
        ]
        if dropped:
            for small in dropped:
                self._removed(small)
            kept = [
                after
                for before, after in zip(original_node.body, updated_node.body, strict=True)
                if before not in dropped
            ]
            if not kept:
                return cst.RemovalSentinel.REMOVE
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            node = node.with_changes(body=kept)
        if original_node in self.edits.comments:
            node = node.with_changes(
                leading_lines=_with_comment(node.leading_lines, self.edits.comments[original_node])
            )
        return node

    def _drops_lambda(self, small: cst.BaseSmallStatement) -> bool:
        """``flatten = lambda ...``, when that lambda is to be deleted."""
        return isinstance(small, cst.Assign) and small.value in self.edits.drop


def _blank_lines(lines: Sequence[cst.EmptyLine]) -> int:
    """How many blank lines (no comment) a statement's leading lines start with."""
    count = 0
    for line in lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _detached(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The leading lines down to the last blank one below a comment: comments set off from
    the statement by a blank line (a banner), not those right above it. Empty: none."""
    last = -1
    seen_comment = False
    for index, line in enumerate(lines):
        if line.comment is not None:
            seen_comment = True
        elif seen_comment:
            last = index
    return list(lines[: last + 1])


_BLANK = cst.EmptyLine(indent=False)
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def _spaced(statement: _Statement, carry: int, *, first: bool) -> _Statement:
    """``statement`` in the place of deleted ones: at least their blank lines above it, or none
    when it is now the first of its block."""
    lines = list(statement.leading_lines)
    blank = _blank_lines(lines)
    wanted = 0 if first else max(carry, blank)
    return statement.with_changes(leading_lines=[_BLANK] * wanted + lines[blank:])


def _block(body: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    assert isinstance(body, cst.IndentedBlock)
    return body.body


def _with_comment(lines: Iterable[cst.EmptyLine], text: str | None) -> list[cst.EmptyLine]:
    """``lines`` without the codemod's comments (their continuation lines too), then ``text``
    (if any) as the last lines."""
    kept: list[cst.EmptyLine] = []
    previous: list[str] = []  # the codemod's comment there now
    ours = False  # the line above was one of the codemod's
    for line in lines:
        value = line.comment.value if line.comment is not None else ""
        ours = bool(COMMENT_PATTERN.match(value)) or (ours and value.startswith(CONTINUATION))
        if not ours:
            kept.append(line)
        else:
            previous.append(value)
    if text is not None and previous and _same_but_lines(previous, text.split("\n")):
        # the line numbers a reason quotes move by the comment's own lines: a second run
        # keeps the comment it wrote rather than renumber it
        text = "\n".join(previous)
    if text is not None:
        kept.extend(cst.EmptyLine(comment=cst.Comment(part)) for part in text.split("\n"))
    return kept


_LINE_NUMBER = re.compile(r"\bline (\d+)")


def _same_but_lines(old: Sequence[str], new: Sequence[str]) -> bool:
    """Two of the codemod's comments with one code and one reason but for its line numbers."""
    first, second = COMMENT_PATTERN.match(old[0]), COMMENT_PATTERN.match(new[0])
    if first is None or second is None or first.group(1) != second.group(1):
        return False
    before, after = reason_of(old), reason_of(new)
    return before != after and _LINE_NUMBER.sub("line", before) == _LINE_NUMBER.sub("line", after)
