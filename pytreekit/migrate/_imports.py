"""The imports of a rewritten module: ``pytree_class`` imported once, and the imports that only
the deleted code used (``register_pytree_node_class``, ``GetAttrKey``, ``jax`` itself) removed.

LibCST's ``AddImportsVisitor`` and ``RemoveImportsVisitor`` do this for any codemod, at the cost
of several passes over the whole module with scope analysis (about 1.5 s for a 200-line module
on the machine the benchmark runs on, against the issue's 10 s for 50 registrations). This
module does the two narrow things the codemod needs without a pass over the tree: it only ever
removes a module-level import of a name the deleted code used and that no longer appears anywhere
else in the module's text (code, strings such as ``__all__`` or annotations, comments).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import libcst as cst


def names_in(nodes: Iterable[cst.CSTNode]) -> set[str]:
    """Every name the nodes use (the head of a dotted name included)."""
    found: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    for node in nodes:
        node.visit(Names())
    return found


def _bound(alias: cst.ImportAlias) -> str:
    """The name an import alias binds (``import a.b`` binds ``a``)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name: cst.BaseExpression = alias.name
    while isinstance(name, cst.Attribute):
        name = name.value
    assert isinstance(name, cst.Name)
    return name.value


# Modules ``import jax`` loads itself, in every JAX version the codemod supports: an import of
# one loads nothing more than ``import jax`` (the codemod imports pytreekit, so JAX, anyway).
CERTAINLY_LOADED = frozenset(
    {"jax", "jax.tree_util", "jax.numpy", "jax.lax", "jax.random", "jax.tree"}
)
# Of those, the plain modules: ``from M import name`` cannot load a submodule of theirs.
_PLAIN_MODULES = frozenset({"jax.tree_util", "jax.tree", "jax.random"})


def _dotted(node: cst.BaseExpression) -> str:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    assert isinstance(node, cst.Name)
    return ".".join([node.value, *reversed(parts)])


def loads_more(small: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> str | None:
    """The module an import loads besides binding its name, which removing the import could
    leave unloaded for other modules (``import jax.experimental.checkify`` makes
    ``jax.experimental.checkify`` an attribute of ``jax.experimental`` for every module): None
    when it loads only a top-level module or modules ``import jax`` loads anyway."""
    if isinstance(small, cst.Import):
        name = _dotted(alias.name)
        return None if "." not in name or name in CERTAINLY_LOADED else name
    if small.relative or small.module is None:
        return None  # not JAX's: the rewrite removes JAX's imports only
    source = _dotted(small.module)
    if source not in CERTAINLY_LOADED:
        return source if "." in source else None
    if source in _PLAIN_MODULES:
        return None
    imported = f"{source}.{_dotted(alias.name)}"
    # a name of a package may be a submodule it does not load itself (jax.experimental)
    return None if imported in CERTAINLY_LOADED or not _may_be_module(alias) else imported


def _may_be_module(alias: cst.ImportAlias) -> bool:
    """A lowercase name (a class is capitalised) that is no function JAX registrations use."""
    name = _dotted(alias.name)
    return name.islower() and not name.startswith(("register_", "tree_"))


def loading_imports(module: cst.Module) -> list[tuple[str, str, str]]:
    """The module-level imports the rewrite keeps because they load a module (``loads_more``):
    (the name bound, the import as written, the module loaded)."""
    found: list[tuple[str, str, str]] = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import | cst.ImportFrom) or isinstance(
                small.names, cst.ImportStar
            ):
                continue
            for alias in small.names:
                loaded = loads_more(small, alias)
                if loaded is not None:
                    found.append((_bound(alias), module.code_for_node(small), loaded))
    return found


def unused_names(code: str, candidates: set[str]) -> set[str]:
    """The ``candidates`` a module's code no longer uses outside its top-level import lines.

    A name counts as used wherever it appears as a word, in code, strings and comments alike: a
    name a comment mentions keeps its import (the cheap and conservative side of the choice).
    The lines of a parenthesised import after its first count as uses too (conservative)."""
    if not candidates:
        return set()
    text = _IMPORT_LINE.sub("", code)
    return {name for name in candidates if not re.search(rf"\b{re.escape(name)}\b", text)}


# A line ends at ``\n``, ``\r\n`` or ``\r`` (a file of ``\r`` endings is not one long line).
_IMPORT_LINE = re.compile(r"(?:^|(?<=\r))(import|from)[ \t][^\r\n]*", re.MULTILINE)


def remove_unused(module: cst.Module, unused: set[str]) -> cst.Module:
    """``module`` without the module-level imports of the ``unused`` names."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] | None = None  # the leading lines of removed imports
    for statement in module.body:
        kept = _without(statement, unused)
        if kept is None:
            assert isinstance(statement, cst.SimpleStatementLine)
            carried = [*(carried or []), *statement.leading_lines]
            continue
        if carried is not None:
            assert isinstance(kept, cst.SimpleStatementLine | cst.BaseCompoundStatement)
            own = kept.leading_lines
            # the new first statement of the module needs no blank line above it
            lines = _merged(carried, own) if body else [*carried, *own[_blank(own) :]]
            kept = kept.with_changes(leading_lines=lines)
            carried = None
        body.append(kept)
    return module.with_changes(body=body)


def _blank(lines: Sequence[cst.EmptyLine]) -> int:
    count = 0
    while count < len(lines) and lines[count].comment is None:
        count += 1
    return count


def _merged(above: Sequence[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """A statement's leading lines once the statement above it is gone: the more blank lines of
    the two, then the comments of both."""
    blank = max(_blank(above), _blank(own))
    return [_EMPTY] * blank + [*above[_blank(above) :], *own[_blank(own) :]]


_EMPTY = cst.EmptyLine(indent=False)


def _without(statement: cst.BaseStatement, unused: set[str]) -> cst.BaseStatement | None:
    if not isinstance(statement, cst.SimpleStatementLine):
        return statement
    smalls: list[cst.BaseSmallStatement] = []
    for small in statement.body:
        if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
            small.names, cst.ImportStar
        ):
            names = small.names
            assert not isinstance(names, cst.ImportStar)
            # an import that loads a submodule stays: another module may use it
            kept = [a for a in names if _bound(a) not in unused or loads_more(small, a)]
            if not kept:
                continue
            if len(kept) < len(names):
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                small = small.with_changes(names=kept)
        smalls.append(small)
    if not smalls:
        return None
    if len(smalls) < len(statement.body):
        smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return statement.with_changes(body=smalls)


def decorator_name(binds: dict[str, str], defined: Sequence[str]) -> str:
    """How the module refers to ``pytree_class``: by that name, unless the module binds it to
    something else (then as ``pytreekit.pytree_class``)."""
    bound = binds.get("pytree_class")
    if bound in (None, "pytreekit.pytree_class") and "pytree_class" not in defined:
        return "pytree_class"
    return "pytreekit.pytree_class"


def add_import(module: cst.Module, name: str) -> cst.Module:
    """``module`` importing ``name`` (``pytree_class`` or ``pytreekit.pytree_class``), once."""
    body = list(module.body)
    if name == "pytree_class":
        for index, statement in enumerate(body):
            small = _pytreekit_import(statement)
            if small is None:
                continue
            names = small.names
            assert not isinstance(names, cst.ImportStar)
            if any(_bound(a) == "pytree_class" for a in names):
                return module
            last = names[-1].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            new = small.with_changes(names=[*names[:-1], last, cst.ImportAlias(cst.Name(name))])
            assert isinstance(statement, cst.SimpleStatementLine)
            body[index] = statement.with_changes(
                body=[new if s is small else s for s in statement.body]
            )
            return module.with_changes(body=body)
        line = cst.parse_statement("from pytreekit import pytree_class\n")
    else:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine) and any(
                isinstance(s, cst.Import)
                and any(_bound(a) == "pytreekit" and a.asname is None for a in s.names)
                for s in statement.body
            ):
                return module
        line = cst.parse_statement("import pytreekit\n")
    position = _after_imports(body)
    body.insert(position, line)
    following = body[position + 1] if position + 1 < len(body) else None
    if isinstance(following, cst.BaseCompoundStatement) and not following.leading_lines:
        body[position + 1] = following.with_changes(leading_lines=[_EMPTY])  # a class, a def
    return module.with_changes(body=body)


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body
    )


def _pytreekit_import(statement: cst.BaseStatement) -> cst.ImportFrom | None:
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if (
            isinstance(small, cst.ImportFrom)
            and not small.relative
            and isinstance(small.module, cst.Name)
            and small.module.value == "pytreekit"
            and not isinstance(small.names, cst.ImportStar)
        ):
            return small
    return None


def _after_imports(body: Sequence[cst.BaseStatement]) -> int:
    """Where a new import goes: after the imports at the top of the module (after its docstring
    if it has none)."""
    position = 0
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        if _is_import(statement):
            position = index + 1
        elif (
            index == 0
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
        ):
            position = 1  # the docstring
        else:
            break
    return position
