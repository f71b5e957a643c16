"""Where a scope binds its names, read with Python's own parser.

The codemod reads a function by the name a registration (or a class body) gives it. That is the
function JAX registers only when nothing else binds the name: a second def, a tuple assignment,
an import under ``try``, a ``global`` statement in a function, a ``del``, a walrus. Each binding
is kept here, with how and where it is made, so that the analysis can refuse what it cannot
prove instead of reading the wrong function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# Pseudo-names: a star import may bind any name, and so may a write through ``globals()``.
STAR = "*"
GLOBALS = "globals()"

_GLOBALS_WRITERS = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
)


@dataclass(frozen=True)
class Binding:
    """One statement (or expression) that binds a name."""

    how: str  # "a def", "an assignment", "an import", "a 'global' statement in function 'f'"
    line: int
    end: int  # the last line of its statement
    direct: bool  # a statement of the scope's own body, not under a block
    lambda_: bool = False  # ``name = lambda ...``, the name its only target

    def describe(self) -> str:
        return f"{self.how} (line {self.line})"


def scope_bindings(body: Sequence[ast.stmt]) -> dict[str, list[Binding]]:
    """Every binding the statements of one scope (a module's, a class body's) make, under its
    blocks too; the bodies of its functions and classes are other scopes."""
    found: dict[str, list[Binding]] = {}
    for statement in body:
        _statement(statement, True, found)
    return found


def module_bindings(tree: ast.Module) -> dict[str, list[Binding]]:
    """``scope_bindings`` of a module, with what binds its names from elsewhere in it: a
    ``global`` statement in a function, a write through ``globals()``."""
    found = scope_bindings(tree.body)
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, function = stack.pop()
        for child in ast.iter_child_nodes(node):
            inside = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inside = getattr(child, "name", "<lambda>")
            elif isinstance(child, ast.Global):
                for name in child.names:
                    how = f"a 'global' statement in function '{function or '?'}'"
                    _add(found, name, how, child, False)
            elif isinstance(child, ast.expr) and _writes_globals(child):
                _add(found, GLOBALS, "a write through globals()", child, False)
            stack.append((child, inside))
    return found


def _writes_globals(node: ast.AST) -> bool:
    if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
        return _is_globals(node.value)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _GLOBALS_WRITERS
        and _is_globals(node.func.value)
    )


def _is_globals(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("globals", "vars")
        and not node.args
    )


def _add(
    found: dict[str, list[Binding]],
    name: str,
    how: str,
    node: ast.stmt | ast.expr | ast.excepthandler | ast.pattern,
    direct: bool,
    lambda_: bool = False,
) -> None:
    end = getattr(node, "end_lineno", None) or node.lineno
    found.setdefault(name, []).append(Binding(how, node.lineno, end, direct, lambda_))


def _targets(target: ast.expr) -> Iterator[ast.Name]:
    """The names an assignment target binds (``A.x = ...`` and ``A[0] = ...`` bind none)."""
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _targets(element)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)


def _statement(statement: ast.stmt, direct: bool, found: dict[str, list[Binding]]) -> None:
    """The bindings of one statement of the scope, and of the blocks it holds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        how = "a class statement" if isinstance(statement, ast.ClassDef) else "a def"
        _add(found, statement.name, how, statement, direct)
        # decorators, defaults and bases run in this scope: a walrus there binds here
        outer: list[ast.expr] = [*statement.decorator_list]
        if isinstance(statement, ast.ClassDef):
            outer += [*statement.bases, *(k.value for k in statement.keywords)]
        else:
            outer += [*statement.args.defaults, *filter(None, statement.args.kw_defaults)]
        for expression in outer:
            _walruses(expression, found, statement)
        return
    if isinstance(statement, ast.Assign):
        single = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
        lambda_ = single and isinstance(statement.value, ast.Lambda)
        for target in statement.targets:
            for name in _targets(target):
                _add(found, name.id, "an assignment", statement, direct, lambda_)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        if isinstance(statement.target, ast.Name) and (
            not isinstance(statement, ast.AnnAssign) or statement.value is not None
        ):
            _add(found, statement.target.id, "an assignment", statement, direct)
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        for alias in statement.names:
            if alias.name == "*":
                level = "." * (getattr(statement, "level", 0) or 0)
                source = f"{level}{getattr(statement, 'module', None) or ''}"
                _add(found, STAR, f"from {source} import *", statement, direct)
            else:
                bound = alias.asname or alias.name.partition(".")[0]
                _add(found, bound, "an import", statement, direct)
    elif isinstance(statement, ast.Delete):
        for target in statement.targets:
            for name in _targets(target):
                _add(found, name.id, "a del statement", statement, direct)
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        for name in _targets(statement.target):
            _add(found, name.id, "a loop", statement, direct)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        for item in statement.items:
            if item.optional_vars is not None:
                for name in _targets(item.optional_vars):
                    _add(found, name.id, "a with statement", statement, direct)
    elif isinstance(statement, (ast.Try, ast.TryStar)):
        for handler in statement.handlers:
            if handler.name:
                _add(found, handler.name, "an except clause", handler, False)
    elif isinstance(statement, ast.Match):
        for case in statement.cases:
            for node in ast.walk(case.pattern):
                captured = getattr(node, "name", None) or getattr(node, "rest", None)
                if isinstance(captured, str):
                    _add(found, captured, "a match pattern", statement, False)
    elif type(statement).__name__ == "TypeAlias":  # pragma: Python 3.12+
        name_node = getattr(statement, "name", None)
        if isinstance(name_node, ast.Name):
            _add(found, name_node.id, "a type statement", statement, direct)
    for field_name, value in ast.iter_fields(statement):
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            for inner in value:
                _statement(inner, False, found)
        elif isinstance(value, list) and value and isinstance(value[0], ast.excepthandler):
            for handler in value:
                for inner in handler.body:
                    _statement(inner, False, found)
        elif isinstance(value, list) and value and isinstance(value[0], ast.match_case):
            for case in value:
                if case.guard is not None:
                    _walruses(case.guard, found, statement)
                for inner in case.body:
                    _statement(inner, False, found)
        elif isinstance(value, ast.expr) and field_name != "body":
            _walruses(value, found, statement)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.expr):
                    _walruses(item, found, statement)
                elif isinstance(item, ast.withitem):
                    _walruses(item.context_expr, found, statement)


def _walruses(expression: ast.expr, found: dict[str, list[Binding]], statement: ast.stmt) -> None:
    """``(name := ...)`` in an expression of the scope (a lambda's body is its own scope; a
    comprehension's walrus binds in the scope around it)."""
    stack: list[ast.AST] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            _add(found, node.target.id, "an assignment expression (:=)", statement, False)
        stack.extend(ast.iter_child_nodes(node))


# Attributes of a function whose write swaps the code Python runs under the same name.
_CODE_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__", "__globals__"})


def namespace_writer(tree: ast.Module, is_self: Callable[[str], bool]) -> tuple[str, int] | None:
    """The first construct that may write a module's (or a class body's) namespace in a way
    ``module_bindings`` cannot follow: ``exec``/``eval``, ``locals()`` outside a function,
    ``globals()``/``vars()`` other than subscripted, ``sys.modules``, a ``__dict__`` write, a
    ``setattr``/``delattr`` on anything but a local of a function or a class of the module, a
    write to a function's ``__code__``, an import of the module itself (``is_self`` tells its
    names). Refusing on these is simpler, and safer, than following them."""
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    stack: list[tuple[ast.AST, ast.AST | None, frozenset[str] | None]] = [(tree, None, None)]
    while stack:
        node, parent, local = stack.pop()
        found = _writer(node, parent, local, classes, is_self)
        if found is not None:
            return found, getattr(node, "lineno", 0)
        inner = local
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = frozenset(
                {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
                | {
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
            )
        stack.extend((child, node, inner) for child in ast.iter_child_nodes(node))
    return None


def _writer(
    node: ast.AST,
    parent: ast.AST | None,
    local: frozenset[str] | None,
    classes: set[str],
    is_self: Callable[[str], bool],
) -> str | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if is_self(alias.name):
                return f"an import of the module itself (import {alias.name})"
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for alias in node.names:
            if is_self(f"{node.module}.{alias.name}"):
                return f"an import of the module itself (from {node.module} import {alias.name})"
    elif isinstance(node, ast.Attribute):
        if node.attr in _CODE_ATTRIBUTES and not isinstance(node.ctx, ast.Load):
            return f"a write to {ast.unparse(node)}"
        if (
            node.attr == "__dict__"
            and not _only_read(node, parent)
            and not _is_local(node.value, local)
        ):
            return f"a write through {ast.unparse(node)}"
        if (
            node.attr == "modules"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            and not (isinstance(parent, ast.Compare) and parent.left is not node)
        ):
            return "a use of sys.modules"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name in ("exec", "eval"):
            return f"a call of {name}()"
        if name == "locals" and local is None:
            return "locals() outside a function"
        if name == "globals" and not isinstance(parent, ast.Subscript):
            return "globals() other than subscripted"
        if name == "vars" and node.args and not _is_local(node.args[0], local):
            if not isinstance(parent, ast.Subscript):
                return "vars() of an object other than subscripted"
            if not _only_read(node, parent):
                return f"a write through {ast.unparse(node)[:60]}"
        if name in ("setattr", "delattr") and node.args:
            first = node.args[0]
            if not (
                _is_local(first, local) or (isinstance(first, ast.Name) and first.id in classes)
            ):
                return f"{name}() on {ast.unparse(first)[:40]}"
    return None


def _only_read(node: ast.expr, parent: ast.AST | None) -> bool:
    """``x.__dict__[k]``, ``x.__dict__.get(k)``: a read of one item."""
    if isinstance(parent, ast.Subscript):
        return isinstance(parent.ctx, ast.Load)
    return isinstance(parent, ast.Attribute) and parent.attr in ("get", "keys", "items", "values")


def _is_local(node: ast.expr, local: frozenset[str] | None) -> bool:
    """A name the enclosing function binds (``self``, ``cls``, ``obj``): not the module."""
    return isinstance(node, ast.Name) and local is not None and node.id in local
