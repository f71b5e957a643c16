"""The scan: every module under the given paths, parsed once, and an index of what matters.

As bump-pydantic does, the codemod reads the whole tree before it rewrites anything: a class, its
bases and subclasses, and its registrations may live in different modules. This module finds:

- the files and their module names (the import root is the first directory up without an
  ``__init__.py``);
- in each module, what its imports bind (local name -> qualified name), its top-level classes and
  functions, and every registration with the four JAX APIs, wherever it is (and those with JAX's
  other ``register_*`` APIs, which are never rewritten but register a class all the same);
- the class hierarchy across modules.

Name resolution follows imports only (no type inference): a registration the codemod cannot
resolve is reported, never guessed at.
"""

from __future__ import annotations

import ast
import builtins
import errno
import fnmatch
import io
import os
import re
import stat
import sys
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ._bindings import Binding, module_bindings
from ._codes import COMMENT_PATTERN

APIS = (
    "register_pytree_node_class",
    "register_pytree_node",
    "register_pytree_with_keys_class",
    "register_pytree_with_keys",
)
_API_MODULES = ("jax.tree_util", "jax._src.tree_util")
_API_NAMES = {f"{module}.{api}": api for module in _API_MODULES for api in APIS}
KEY_TYPES = {
    f"{module}.{key}": key
    for module in _API_MODULES
    for key in ("GetAttrKey", "DictKey", "SequenceKey", "FlattenedIndexKey")
}
# A file worth a closer look: it names a registration API, or carries a comment of a past run.
_CANDIDATE = re.compile(r"register_pytree_(node|with_keys)|pytreekit-migrate")
# A file that may register a class with another API of ``jax.tree_util`` (``register_dataclass``,
# ``register_static``): never rewritten, but a subclass so registered keeps its base as it is.
_FOREIGN_TEXT = re.compile(r"tree_util")
_FOREIGN_CALL = re.compile(r"\bregister_\w")


def suite_statements(body: cst.BaseSuite) -> list[cst.BaseSmallStatement | cst.BaseStatement]:
    """The statements of a block, those sharing a line (``a; b``) one by one."""
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    found: list[cst.BaseSmallStatement | cst.BaseStatement] = []
    assert isinstance(body, cst.IndentedBlock)
    for statement in body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            found.extend(statement.body)
        else:
            found.append(statement)
    return found


@dataclass(eq=False, repr=False)
class Registration:
    """One use of a registration API."""

    module: Module
    api: str  # one of APIS
    form: str  # "decorator", "call", or "value" (the API used otherwise: ``map(api, ...)``)
    node: cst.CSTNode  # the Decorator, or the Call
    # Where a comment goes: the decorated ClassDef, or the statement holding the call.
    anchor: cst.ClassDef | cst.SimpleStatementLine | None
    target: str | None  # the registered class's qualified name, when the codemod can tell
    target_text: str  # the class as written ("Linear", "models.Linear", "cls")
    args: dict[str, cst.BaseExpression]  # "flatten", "unflatten", "flatten_with_keys"
    place: str  # "" at module level, else why not: "inside function 'f'", "under an if"
    line: int = 0
    column: int = 1
    class_line: int = 0  # the decorated class statement's line (the decorator form)
    # a helper's registration (inside ``def register(cls)``): the classes the helper registers
    registers: list[str] = field(default_factory=list)
    helper: str = ""  # the helper's qualified name
    # the class the call names wherever it is (``target`` is None under a block): a second
    # registration under ``try`` still registers the class again
    named: str | None = None
    # why the API's name may not be JAX's (a star import, a re-export): "" when it resolves
    unresolved: str = ""
    within: str = ""  # the top-level class whose body holds it (qualified), if one does


@dataclass(eq=False, repr=False)
class Foreign:
    """A registration with an API of ``jax.tree_util`` the codemod does not rewrite
    (``register_dataclass``, ``register_static``): its class is registered by hand all the
    same, so pytreekit must not register it again as the subclass of a rewritten base."""

    module: Module
    api: str  # "register_dataclass"
    named: str | None  # the class's qualified name, when the codemod can tell
    target_text: str  # the class as written
    place: str  # "" at module level, else where: "inside function 'f'", "under a 'if' statement"


@dataclass(eq=False, repr=False)
class ClassInfo:
    """A top-level class statement and what the analysis asks of it."""

    module: Module
    node: cst.ClassDef
    qualname: str  # "package.module.Name"
    bases: list[tuple[str | None, str]]  # (qualified name if resolved, as written)

    @property
    def name(self) -> str:
        return self.node.name.value

    def body_statements(self) -> list[cst.BaseSmallStatement | cst.BaseStatement]:
        return suite_statements(self.node.body)

    def methods(self) -> dict[str, cst.FunctionDef]:
        return {
            statement.name.value: statement
            for statement in self.body_statements()
            if isinstance(statement, cst.FunctionDef)
        }

    def defines(self, name: str) -> bool:
        """Whether the class body binds ``name`` (a def, an assignment, an annotation)."""
        return name in self.methods() or name in self.assigned_names()

    def assigned_names(self) -> dict[str, cst.BaseSmallStatement]:
        names: dict[str, cst.BaseSmallStatement] = {}
        for statement in self.body_statements():
            if isinstance(statement, cst.Assign):
                for target in statement.targets:
                    if isinstance(target.target, cst.Name):
                        names[target.target.value] = statement
            elif (
                isinstance(statement, cst.AnnAssign)
                and isinstance(statement.target, cst.Name)
                and statement.value is not None
            ):
                names[statement.target.value] = statement
        return names

    def annotations(self) -> list[cst.AnnAssign]:
        """The annotated names of the body, in order (``x: int`` and ``x: int = 0``)."""
        return [
            statement
            for statement in self.body_statements()
            if isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name)
        ]


@dataclass(frozen=True)
class HiddenClass:
    """A class made other than by a module-level class statement."""

    name: str
    place: str  # "under an 'if' statement", "inside function 'f'", "built by type(...)"
    bases: tuple[str, ...]  # dotted, as written


@dataclass(eq=False, repr=False)
class Module:
    """One scanned file."""

    path: Path
    display: str  # as reports name it
    name: str  # dotted module name
    root: Path  # the directory its top-level package is imported from
    source: str
    tree: cst.Module | None = None
    error: str | None = None  # why it could not be read, decoded or parsed (a failure)
    skipped: str | None = None  # why it was deliberately not looked at (not a failure)
    encoding: str = "utf-8"  # what it is decoded and written back with ("utf-8-sig": a BOM)
    attempted: bool = False  # parsed (or tried): the pre-filter leaves most modules unparsed
    names: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    # imported names that may be bound to something else at run time (an import under
    # ``try``/``if``, or a def or assignment of the same name): local name -> why
    conditional: dict[str, str] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)  # from X import *: the X
    # a module-level ``ABC = abc.ABC``, bound once: local name -> the qualified name it binds
    aliases: dict[str, str] = field(default_factory=dict)
    # a registration API bound by a module-level assignment (``register = jtu.register_...``):
    # local name -> (the API, the assignment as written)
    api_aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    lambdas: dict[str, cst.Lambda] = field(default_factory=dict)  # name = lambda ...
    registrations: list[Registration] = field(default_factory=list)
    foreign: list[Foreign] = field(default_factory=list)  # the other APIs' registrations
    candidate: bool = False
    # class statements not at module level (under ``if``/``try``, in a function or a class) and
    # ``type(name, (bases...), ns)`` calls: how they are placed, and their bases as written
    hidden: list[HiddenClass] = field(default_factory=list)
    # module-level names a class statement binds and something else binds again (a second
    # class statement, an assignment, a def, an import): name -> what binds it again
    rebound_classes: dict[str, str] = field(default_factory=dict)
    # every dotted name it may be imported by (a namespace package's), longest first; ``name``
    # is the shortest (the one its classes are qualified by)
    import_names: tuple[str, ...] = ()
    # classes made by calls whose bases the codemod cannot read (``type("D", bases, {})``,
    # ``types.new_class(...)``), as written
    opaque: list[str] = field(default_factory=list)
    _lines: list[int] = field(default_factory=list)  # where each top-level statement starts
    _words: frozenset[str] | None = None
    _texts: list[str] | None = None
    _statement_words: list[frozenset[str]] | None = None
    _syntax: ast.Module | None = None
    _bindings: dict[str, list[Binding]] | None = None
    _round_trip: int | None = None  # 0: LibCST gives the source back unchanged

    def syntax(self) -> ast.Module:
        """The module as Python's own parser reads it (once; empty if it cannot)."""
        if self._syntax is None:
            try:
                self._syntax = ast.parse(self.source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._syntax = ast.Module(body=[], type_ignores=[])
        return self._syntax

    def bindings(self) -> dict[str, list[Binding]]:
        """Every binding of each module-level name (``_bindings.module_bindings``)."""
        if self._bindings is None:
            self._bindings = module_bindings(self.syntax())
        return self._bindings

    def changed_line(self) -> int:
        """0 when LibCST's code of the parsed module is the source, byte for byte; else the
        first line where it is not (a form feed opening a statement's line is dropped): such a
        module is never written, or bytes outside the edits would change."""
        if self._round_trip is None:
            assert self.tree is not None
            # the last line ending of a CR-only file: ``_rewrite._apply`` puts it back
            tree = self.tree.with_changes(has_trailing_newline=self.source.endswith(("\n", "\r")))
            code = tree.code
            self._round_trip = 0
            if code != self.source:
                same = next(
                    (i for i, (a, b) in enumerate(zip(code, self.source, strict=False)) if a != b),
                    min(len(code), len(self.source)),
                )
                self._round_trip = len(physical_lines(self.source[: same + 1]))
        return self._round_trip

    @property
    def package(self) -> str:
        # the longest name: a relative import in a namespace package is relative to it
        name = self.import_names[0] if self.import_names else self.name
        return name if self.path.name == "__init__.py" else name.rpartition(".")[0]

    def named(self, name: str) -> bool:
        """Whether ``name`` is one of the dotted names this module may be imported by."""
        return name == self.name or name in self.import_names

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The qualified name an expression (``jtu.register_pytree_node``) refers to, or None."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        head = node.value
        if head in self.names:
            base = self.names[head]
        elif head in self.classes or head in self.functions or head in self.lambdas:
            base = f"{self.name}.{head}"
        elif head in self.aliases:
            base = self.aliases[head]
        elif hasattr(builtins, head):
            base = f"builtins.{head}"
        else:
            return None
        return ".".join([base, *reversed(parts)])

    def position_of(
        self, node: cst.CSTNode, top: cst.SimpleStatementLine | cst.BaseCompoundStatement
    ) -> tuple[int, int]:
        """The line and column of ``node`` inside the top-level statement ``top``.

        LibCST's positions cost a pass over the whole module with position tracking; here only
        the top-level statement holding the node gets one, and the lines above it are known
        from where each top-level statement starts (``statement_lines``)."""
        assert self.tree is not None
        index = next(i for i, statement in enumerate(self.tree.body) if statement is top)
        before = self.statement_lines()[index] - 1
        alone = MetadataWrapper(cst.Module(body=[top]), unsafe_skip_copy=True)
        start = alone.resolve(PositionProvider)[node].start
        return before + start.line, start.column + 1

    def locate(
        self, node: cst.CSTNode, hints: Sequence[cst.CSTNode] = ()
    ) -> tuple[int, int] | None:
        """The line and column (from 1) of a node of this module. The top-level statements
        ``hints`` names are looked in first (positions cost a pass over a statement)."""
        if self.tree is None:
            return None
        tops = [top for top in self.tree.body if any(top is hint for hint in hints)]
        for top in tops:
            alone = MetadataWrapper(cst.Module(body=[top]), unsafe_skip_copy=True)
            if node in alone.resolve(PositionProvider):
                return self.position_of(node, top)
        return None

    def words(self) -> frozenset[str]:
        """Every identifier-like word of the source, for the analysis's cheap looks across
        modules (one pass per module, instead of one search per class and module)."""
        if self._words is None:
            self._words = frozenset(_WORD.findall(self.source))
        return self._words

    def statement_words(self) -> list[frozenset[str]]:
        """The identifier-like words of each top-level statement's text (``statement_texts``)."""
        if self._statement_words is None:
            self._statement_words = [frozenset(_WORD.findall(t)) for t in self.statement_texts()]
        return self._statement_words

    def statement_lines(self) -> list[int]:
        """The line each top-level statement starts on, its leading blank lines and comments
        included. Python's own parser (``ast``, in C) gives the lines far faster than LibCST's
        code generation; where the two do not agree statement for statement, the code of each
        statement is generated and its lines counted."""
        assert self.tree is not None
        if self._lines:
            return self._lines
        body = self.tree.body
        starts: list[int] = []
        try:
            for node in ast.parse(self.source).body:
                decorators = getattr(node, "decorator_list", [])
                line = min([node.lineno, *(d.lineno for d in decorators)])
                if not starts or line != starts[-1]:  # "a; b" is one statement line
                    starts.append(line)
        except (SyntaxError, ValueError, RecursionError):
            starts = []
        if len(starts) == len(body):
            self._lines = [
                line - len(s.leading_lines) for line, s in zip(starts, body, strict=True)
            ]
        else:
            code = self.tree.code_for_node
            line = 1 + sum(len(physical_lines(code(e))) for e in self.tree.header)
            for statement in body:
                self._lines.append(line)
                line += len(physical_lines(code(statement)))
        return self._lines

    def statement_texts(self) -> list[str]:
        """The source of each top-level statement, its leading lines included."""
        if self._texts is None:
            starts = self.statement_lines()
            lines = physical_lines(self.source)
            ends = [*starts[1:], len(lines) + 1][: len(starts)]  # no statement: no text
            self._texts = ["".join(lines[a - 1 : b - 1]) for a, b in zip(starts, ends, strict=True)]
        return self._texts


def physical_lines(text: str) -> list[str]:
    """``text``'s lines, their ends kept, split where Python's tokenizer splits them (``\n``,
    ``\r\n``, ``\r``): ``str.splitlines`` also splits at a form feed, ``\v``, U+2028 and
    others, and its line numbers then no longer match ``ast``'s or LibCST's."""
    return _PHYSICAL_LINE.findall(text)


_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass(eq=False, repr=False)
class Project:
    """Everything scanned, and the indexes across modules."""

    modules: list[Module]
    classes: dict[str, ClassInfo]  # qualified name -> class
    _registered: frozenset[str] | None = None
    _by_name: dict[str, Module | None] | None = None
    _hidden_bases: list[tuple[Module, HiddenClass, ClassInfo]] | None = None
    # qualified names two scanned files define (two top-level ``util.py`` under different roots):
    # an import of one cannot say which file it means
    ambiguous: set[str] = field(default_factory=set)

    def parse(self, module: Module) -> cst.Module | None:
        """The module's tree, parsed and indexed on first use (None: it did not parse, or was
        skipped). Analysis steps call it on the modules whose text may matter to them."""
        if module.attempted:
            return module.tree
        module.attempted = True
        if module.error is not None or module.skipped is not None:
            return None
        try:
            module.tree = cst.parse_module(module.source)
        except cst.ParserSyntaxError as error:
            module.error = f"line {error.raw_line}, column {error.raw_column}: {error.message}"
            return None
        except Exception as error:  # LibCST's own failure: this module's, not the run's
            module.error = f"not parsed ({type(error).__name__}: {error})"
            return None
        module.error = _not_compiling(module)
        if module.error is not None:
            module.tree = None
            return None
        try:
            _index(module)
        except Exception as error:  # a bug of the codemod: nothing is changed in this module
            module.tree, module.registrations, module.classes = None, [], {}
            module.error = f"the codemod failed on it ({type(error).__name__}: {error})"
            return None
        for info in module.classes.values():
            known = self.classes.setdefault(info.qualname, info)
            if known is not info:
                self.ambiguous.add(info.qualname)
        return module.tree

    def lookup(self, module: Module, qualname: str | None) -> ClassInfo | None:
        """The class ``qualname`` names as seen from ``module``: its own class first (so that
        what is decided about a file does not depend on the other files of the run), else the
        one scanned class of that name (None when two files define it). A name another scanned
        module binds (``Finalizable = misc.Finalizable``, a package's ``from .a import Base``
        or ``from .a import *``) is followed to its class; None where it cannot be for sure."""
        if qualname is None:
            return None
        owner, _, name = qualname.rpartition(".")
        if module.named(owner) and name in module.classes:
            return module.classes[name]
        seen: set[str] = set()
        for _ in range(8):
            if qualname in self.ambiguous:
                return None
            found = self.classes.get(qualname)
            if found is not None:
                return found
            holder = self.module_named(owner)
            if holder is None or self.parse(holder) is None:
                return None
            if name in holder.classes:  # parsed just now
                return None if qualname in self.ambiguous else holder.classes[name]
            seen.add(qualname)
            qualname = self.rebinds(holder, name) or ""
            if not qualname or qualname in seen:
                return None
            owner, _, name = qualname.rpartition(".")
        return None

    def rebinds(self, holder: Module, name: str) -> str | None:
        """What a module-level name of ``holder`` is bound to by an assignment or an import
        (relative or absolute, or a star import of a scanned module), when the text binds it
        no other way; None when the codemod cannot tell."""
        if name in holder.aliases:
            return holder.aliases[name]
        if name in holder.classes or name in holder.functions or name in holder.conditional:
            return None
        if _other_bindings(holder, name):
            return None
        if name in holder.names:
            # a star import may bind it again, before or after: the order is not kept
            if any(self._star_binds(s, name) is not False for s in holder.star_imports):
                return None
            return holder.names[name]
        for source in reversed(holder.star_imports):  # the last one binding it wins
            binds = self._star_binds(source, name)
            if binds is None:
                return None  # it may bind the name: no telling which class it is
            if binds:
                return f"{source}.{name}"
        return None

    def _star_binds(self, source: str, name: str) -> bool | None:
        """Whether ``from source import *`` binds ``name`` (None: cannot tell)."""
        origin = self.module_named(source)
        if origin is None or self.parse(origin) is None:
            return None
        exported = _all_names(origin.source)
        if exported is not None:
            return name in exported
        if "__all__" in origin.source:
            return None  # built some other way than one literal
        if name.startswith("_"):
            return False  # a star import binds no private name (without ``__all__``)
        bound = {*origin.classes, *origin.names, *origin.aliases, *origin.functions}
        return True if name in bound else None if origin.star_imports else False

    def module_named(self, name: str) -> Module | None:
        """The one scanned module of that dotted name (None: none, or two files)."""
        if self._by_name is None:
            self._by_name = {}
            for module in self.modules:
                for known in dict.fromkeys((module.name, *module.import_names)):
                    self._by_name[known] = None if known in self._by_name else module
        return self._by_name.get(name)

    @property
    def registrations(self) -> list[Registration]:
        return [r for module in self.modules for r in module.registrations]

    def registered(self) -> frozenset[str]:
        """The qualified names of the scanned classes some registration names."""
        if self._registered is None:
            self._registered = frozenset(
                r.target for r in self.registrations if r.target in self.classes
            )
        return self._registered

    def base_classes(self, info: ClassInfo) -> list[ClassInfo]:
        """The scanned classes among ``info``'s direct bases."""
        found = [self.lookup(info.module, name) for name, _ in info.bases]
        return [base for base in found if base is not None]

    def mro(self, info: ClassInfo) -> list[ClassInfo]:
        """``info`` and its scanned ancestors, nearest first (depth-first, each once)."""
        seen: list[ClassInfo] = []
        stack = [info]
        while stack:
            current = stack.pop(0)
            if current not in seen:
                seen.append(current)
                stack[0:0] = self.base_classes(current)
        return seen

    def subclasses(self, info: ClassInfo) -> list[ClassInfo]:
        """Every scanned class that has ``info`` among its ancestors."""
        return [
            other
            for module in self.modules
            for other in module.classes.values()
            if other is not info and info in self.mro(other)
        ]

    def hidden_subclasses(self, info: ClassInfo) -> list[tuple[Module, HiddenClass]]:
        """The classes made other than by a module-level class statement (under ``if``, in a
        function, by ``type(...)``) one of whose bases is ``info`` or a subclass of it."""
        if self._hidden_bases is None:  # once: parsing the bases' text is the cost
            self._hidden_bases = [
                (module, hidden, base)
                for module in self.modules
                if module.tree is not None
                for hidden in module.hidden
                for written in hidden.bases
                for base in [self.lookup(module, module.qualify(cst.parse_expression(written)))]
                if base is not None
            ]
        found: list[tuple[Module, HiddenClass]] = []
        for module, hidden, base in self._hidden_bases:
            if info in self.mro(base) and (module, hidden) not in found:
                found.append((module, hidden))
        return found

    def unsure_bases(self, info: ClassInfo) -> list[tuple[Module, str, str]]:
        """Bases of scanned classes that may be ``info`` but that the codemod cannot resolve
        (a name a scanned module binds under ``try``, or twice): (module, class, base)."""
        found: list[tuple[Module, str, str]] = []
        for module in self.modules:
            if module.tree is None:
                found += _unreadable_subclasses(module, info.name)
                continue
            made = [(c.name, [w for _, w in c.bases]) for c in module.classes.values()]
            made += [(h.name, list(h.bases)) for h in module.hidden]
            for name, bases in made:
                for written in bases:
                    head = re.split(r"[\[(]", written)[0]
                    try:
                        qualified = module.qualify(cst.parse_expression(head))
                    except cst.ParserSyntaxError:
                        continue
                    # under another name (``from pkg import Base as B``): the name it imports
                    spelled = {head.rpartition(".")[2], (qualified or "").rpartition(".")[2]}
                    if info.name not in spelled:
                        continue
                    if qualified is None or self.lookup(module, qualified) is not None:
                        continue
                    # ``pkg.impl.Base`` where ``impl`` is a submodule bound under another
                    # name: a scanned package above it is enough to be unsure
                    owner = qualified.rpartition(".")[0].split(".")
                    heads = (".".join(owner[:n]) for n in range(len(owner), 0, -1))
                    if any(self.module_named(h) is not None for h in heads):
                        found.append((module, name, written))
        return found

    def opaque_makers(self, info: ClassInfo) -> list[tuple[Module, str]]:
        """Calls that make a class from bases the codemod cannot read (``type("D", bases,
        {})``, ``types.new_class``) in a module that may reach ``info``: (module, call)."""
        names = {info.module.name, *info.module.import_names}
        found: list[tuple[Module, str]] = []
        for module in self.modules:
            if not module.opaque:
                continue
            bound = {*module.names.values(), *module.star_imports, module.name}
            if any(
                n == q or n.startswith(f"{q}.") or q.startswith(f"{n}.")
                for n in names
                for q in bound
            ):
                found.append((module, module.opaque[0]))
        return found


# -- finding and parsing the files --------------------------------------------------------------


def python_files(paths: Sequence[Path], exclude: Sequence[str] = ()) -> list[Path]:
    """The ``.py`` files under ``paths`` (hidden directories, caches and venvs skipped, and what
    an ``exclude`` glob matches: a file or directory name, or a path below the working
    directory, as ruff's ``--extend-exclude`` reads them), sorted."""
    found: set[Path] = set()
    # a link given is a place given, not its target's: the codemod writes through no link to a
    # place it was not given
    roots = [
        resolved(path.parent) / path.name if path.is_symlink() else resolved(path) for path in paths
    ]
    for path in paths:
        if path.is_symlink() and path.is_dir():
            if not _inside(resolved(path), roots) and not excluded(path, exclude):
                found.add(path.absolute())  # skipped by _read, named
            continue
        if not path.is_dir():  # a file, or what _read skips (a FIFO, a socket, a device)
            if not excluded(path, exclude):
                found.add(_known_as(path, roots))
            continue
        for directory, subdirectories, files in os.walk(path):
            subdirectories[:] = sorted(
                name
                for name in subdirectories
                if not name.startswith(".")
                and name != "__pycache__"
                and not (Path(directory, name) / "pyvenv.cfg").exists()
                and not excluded(Path(directory, name), exclude)
            )
            # os.walk does not follow a directory link: one to outside is named as skipped
            found.update(
                Path(directory, name).absolute()
                for name in subdirectories
                if Path(directory, name).is_symlink()
                and not _inside(resolved(Path(directory, name)), roots)
            )
            found.update(
                _known_as(Path(directory, name), roots)
                for name in files
                if name.endswith(".py") and not excluded(Path(directory, name), exclude)
            )
    return sorted(found)


def _known_as(path: Path, roots: Sequence[Path]) -> Path:
    """The path a file is read by: resolved, so that two spellings of one file are one; what
    is skipped (a dangling link, a link to a device or to a file outside the given paths) by
    its own name, as it was found."""
    target = resolved(path)
    return target if target.is_file() and _inside(target, roots) else path.absolute()


def resolved(path: Path) -> Path:
    """``path.resolve()``, or the path as it is (absolute) where a symbolic link loops: Python
    3.11's pathlib raises RuntimeError there, later ones OSError; ``_read`` names such a file as
    skipped."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def loops(path: Path) -> bool:
    """Whether ``path`` is a symbolic link that leads back to itself (directly or not)."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _inside(resolved: Path, roots: Sequence[Path]) -> bool:
    return any(root == resolved or root in resolved.parents for root in roots)


def excluded(path: Path, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    shown = _display(resolved(path))
    return any(
        fnmatch.fnmatch(path.name, pattern)
        or fnmatch.fnmatch(shown, pattern)
        or fnmatch.fnmatch(shown, pattern.rstrip("/") + "/*")
        for pattern in patterns
    )


_TYPE_PARAMS_TEXT = r"(?:\[[^\]]*\][ \t]*)?"


def module_name(path: Path) -> tuple[str, Path]:
    """The dotted name a file is imported by, and the directory it is imported from."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.stem, directory


def module_names(path: Path, roots: Sequence[Path] = ()) -> tuple[str, ...]:
    """Every dotted name a file may be imported by: a directory without ``__init__.py`` below
    a given path may be a namespace package (``pkg/sub/base.py`` is ``pkg.sub.base`` from the
    given directory) or a directory on ``sys.path`` (``base``, ``src/pkg/a.py`` is ``pkg.a``);
    which one is not in the text, so each is a name of the module. Longest first."""
    name, directory = module_name(path)
    names = [name]
    place = resolved(directory)
    while any(root in place.parents for root in roots):
        name = f"{place.name}.{name}"
        names.insert(0, name)
        place = place.parent
    return tuple(names)


def _display(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def scan(
    paths: Sequence[Path],
    exclude: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Project:
    """Read every file under ``paths``; parse and index those that matter.

    A text pre-filter comes first, as LibCST's own parse is the cost of a run: a module is
    parsed when it names a registration API or carries a comment of a past run, or when it
    defines a class that a parsed class inherits from, inherits from a parsed class, or defines
    a decorator a parsed class uses (followed until nothing new is found). Other modules are
    parsed only when an analysis step needs them and their text says it might
    (``Project.parsed``)."""
    roots = [resolved(path) for path in paths if path.is_dir()]
    modules = [_read(path, roots) for path in python_files(paths, exclude)]
    project = Project(modules, {})
    pending = [module for module in modules if module.error is None and module.skipped is None]
    wanted = [module for module in pending if _CANDIDATE.search(module.source) or _foreign(module)]
    parsed = 0
    while wanted:
        for index, module in enumerate(wanted):
            project.parse(module)
            parsed += 1
            if progress is not None:  # the total grows as hierarchies are followed
                progress(parsed, parsed + len(wanted) - index - 1)
        pending = [module for module in pending if not module.attempted]
        pattern = _related(project)
        # a class registered elsewhere (PTK203): the module that defines it
        homes = {
            r.target.rpartition(".")[0]
            for r in project.registrations
            if r.target is not None and r.target not in project.classes
        }
        wanted = [
            module
            for module in pending
            if any(module.named(name) for name in homes)
            or (pattern and pattern.search(module.source))
        ]
    return project


def _related(project: Project) -> re.Pattern[str] | None:
    """Text that marks a module as part of the hierarchy of a registered class (its bases, its
    subclasses, the decorators they use): classes unrelated to a registration that a candidate
    module also defines are not followed."""
    registered = {r.target for r in project.registrations if r.target is not None}
    relevant: dict[str, ClassInfo] = {}
    # a copy: following a base through an alias may parse (and index) another module
    for info in list(project.classes.values()):
        chain = project.mro(info)
        if any(ancestor.qualname in registered for ancestor in chain):
            relevant.update((ancestor.qualname, ancestor) for ancestor in chain)
    bases: set[str] = set()
    names: set[str] = set()
    decorators: set[str] = set()
    for info in relevant.values():
        names.add(info.name)
    _add_renames(project, names)
    for info in relevant.values():
        for qualified, written in info.bases:
            bases.add(re.split(r"[\[(]", written)[0].rpartition(".")[2])
            if qualified is not None:  # imported under another name
                bases.add(qualified.rpartition(".")[2])
        for decorator in info.node.decorators:
            expression = decorator.decorator
            target = expression.func if isinstance(expression, cst.Call) else expression
            decorators.add(_code(target).rpartition(".")[2])
    parts = []
    start = _LINE_START
    if bases:
        parts.append(rf"{start}class[ \t]+(?:{'|'.join(map(re.escape, sorted(bases)))})\b")
    if names:
        joined = "|".join(map(re.escape, sorted(names)))
        parts.append(rf"{start}class[ \t]+\w+[ \t]*{_TYPE_PARAMS}\([^)]*\b(?:{joined})\b")
        # the class bound under another name (``from pkg.a import Base as _Base``, ``B2 =
        # pkg.Base``), or built by ``type(...)``: a subclass there spells the other name
        parts.append(rf"\b(?:{joined})[ \t]+as[ \t]+\w")
        parts.append(rf"{start}\w+[ \t]*=[ \t]*[\w.]*\b(?:{joined})[ \t]*(?:#|$)")
        # a name bound to an expression of the class (``_B = Base if c else object``,
        # ``_bases = (Base,)``), which a class statement may take as its base
        parts.append(rf"{start}\w+[ \t]*(?::[^=\r\n]*)?=[^=\r\n][^\r\n]*\b(?:{joined})\b")
        # a base that is not a name (``class Sub(make_base())``, ``class Sub(*bases)``)
        parts.append(rf"{start}class[ \t]+\w+[ \t]*{_TYPE_PARAMS}\([^)]*[*(]")
        parts.append(rf"\btype[ \t]*\([^)]*\([^)]*\b(?:{joined})\b")
        parts.append(_OPAQUE_CALL.pattern)
    if decorators:
        parts.append(rf"{start}def[ \t]+(?:{'|'.join(map(re.escape, sorted(decorators)))})\b")
    return re.compile("|".join(parts), re.MULTILINE) if parts else None


_CLASS_LINE = re.compile(
    rf"^[ \t]*class[ \t]+(\w+)[ \t]*{_TYPE_PARAMS_TEXT}\(([^)]*)\)", re.MULTILINE
)


def _unreadable_subclasses(module: Module, name: str) -> list[tuple[Module, str, str]]:
    """Classes of a module the codemod could not parse (newer syntax: ``class Sub[T](Base)``
    on 3.11) whose bases' text names ``name``: they may be its subclasses."""
    if module.error is None or name not in module.source:
        return []
    word = re.compile(rf"\b{re.escape(name)}\b")
    return [
        (module, match.group(1), match.group(2).strip())
        for match in _CLASS_LINE.finditer(module.source)
        if word.search(match.group(2))
    ]


_ALL = re.compile(r"^__all__[ \t]*(?::[^=]*)?=[ \t]*[\[(]([^\])]*)[\])]", re.MULTILINE)


def _all_names(source: str) -> frozenset[str] | None:
    """The names a module-level ``__all__ = [...]`` of string literals lists, when it is the
    only mention of ``__all__`` (None otherwise)."""
    found = _ALL.findall(source)
    if len(found) != 1 or source.count("__all__") != 1:
        return None
    items = [item.strip() for item in found[0].split(",") if item.strip()]
    if not all(re.fullmatch(r"""(['"])\w+\1""", item) for item in items):
        return None
    return frozenset(item[1:-1] for item in items)


def _add_renames(project: Project, names: set[str]) -> None:
    """Add the names parsed modules bind ``names`` under (``from .a import Base as
    PublicBase``, ``Thing = Core``), and those names' own renames: a subclass may spell any."""
    while True:
        found = {
            local
            for module in project.modules
            if module.tree is not None
            for local, qualified in (*module.names.items(), *module.aliases.items())
            if qualified.rpartition(".")[2] in names and local not in names
        }
        if not found:
            return
        names.update(found)


def _read(path: Path, roots: Sequence[Path] = ()) -> Module:
    name, root = module_name(path)
    module = Module(path=path, display=_display(path), name=name, root=root, source="")
    module.import_names = module_names(path, roots)
    raw = _regular_bytes(module)
    if raw is None:
        return module
    decoded = decode(raw)
    if isinstance(decoded, str):
        module.error = decoded
        return module
    module.source, module.encoding = decoded
    if _GENERATED.search(module.source[:2048]):
        module.skipped = "marked @generated"
    return module


def _not_compiling(module: Module) -> str | None:
    """Why the module does not compile on the running Python, if it does not: newer syntax
    (LibCST parses it) or code no Python runs. Its rewrite could not be checked by compiling
    it, so it is left: a failure of the run (nothing looked at it), not of the codemod."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        compile(module.source, module.display, "exec", dont_inherit=True)
    except SyntaxError as error:
        detail = f"{error.msg}, line {error.lineno}"
    except (ValueError, RecursionError, MemoryError) as error:
        detail = f"{type(error).__name__}: {error}"
    else:
        return None
    return f"does not compile on this Python ({version}): left as it is ({detail})"


def _regular_bytes(module: Module) -> bytes | None:
    """The file's bytes; None when it is no regular file (skipped: reading a FIFO or a device
    would block or never end) or cannot be read (a failure), the module saying which."""
    path = module.path
    try:
        if path.is_symlink() and loops(path):
            module.skipped = f"a symbolic link that loops (to {os.readlink(path)})"
            return None
        if path.is_symlink() and not path.exists():
            module.skipped = f"a dangling symbolic link (to {os.readlink(path)})"
            return None
        if path.is_symlink() and resolved(path).is_dir():
            module.skipped = (
                f"a symbolic link to the directory {resolved(path)}, outside the given paths: "
                f"not followed (give that path to rewrite its files)"
            )
            return None
        if path.is_symlink() and resolved(path).is_file():
            # python_files resolved every other link: the user did not give the target's place
            module.skipped = (
                f"a symbolic link to {resolved(path)}, outside the given paths: not written "
                f"through (give that path to rewrite it)"
            )
            return None
        if not stat.S_ISREG(path.stat().st_mode):
            module.skipped = f"not a regular file ({_kind(path.stat().st_mode)})"
            return None
        # non-blocking, and checked again once open: it may have been replaced since
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(handle, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                module.skipped = "not a regular file"
                return None
            return file.read()
    except OSError as error:
        module.error = f"not read: {error.strerror or error}"
        return None


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISSOCK: "a socket",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISDIR: "a directory",
    }
    return next((kind for test, kind in kinds.items() if test(mode)), "not a file")


_WORD = re.compile(r"[A-Za-z_]\w*")
# A line's start, with MULTILINE: after a "\r" too (a file of "\r" endings), its indentation
# with a form feed too (a page break may open a line).
_LINE_START = r"(?:^|(?<=\r))[ \t\f]*"
# An import statement inside a block (a function, an if): the whole tree is walked for imports.
# ``^`` alone would miss the lines of a file whose lines end with ``\r`` only.
_NESTED_IMPORT = re.compile(r"(?:^|(?<=\r))[ \t\f]+(import|from)[ \t]", re.MULTILINE)
# LibCST's codemod runner and ruff skip generated files the same way.
_GENERATED = re.compile(r"@generated\b")


def decode(raw: bytes) -> tuple[str, str] | str:
    """The text of a source file and the encoding to write it back with (PEP 263's cookie, or
    ``utf-8-sig`` when it starts with a BOM); or why it cannot be read without losing a byte."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:  # an unknown cookie, or a BOM with a cookie other than utf-8
        return f"not decoded: {error}; nothing changed there"
    try:
        source = raw.decode(encoding)
    except UnicodeDecodeError as error:
        return (
            f"not decoded: byte {error.start} is not valid {encoding}; nothing changed there "
            f"(declare the file's encoding with a '# -*- coding: ... -*-' line)"
        )
    # a file whose bytes would not come back the same is never written
    if source.encode(encoding) != raw:
        return f"not decoded: its bytes do not round-trip through {encoding}; nothing changed there"
    return source, encoding


def encode(module: Module, text: str) -> bytes:
    """``text`` in the module's own encoding (its BOM kept): every byte not edited as it was."""
    return text.encode(module.encoding)


def encodable(module: Module, text: str) -> str:
    """``text`` (a comment's) with each character the module's encoding cannot hold written as
    a Python escape (``\\u4e2d``): a reason quoting another module's code goes into a latin-1
    file all the same, and reads the same on the next run (a stable comment)."""
    try:
        text.encode(module.encoding)
    except UnicodeEncodeError:
        return text.encode(module.encoding, "backslashreplace").decode(module.encoding)
    return text


def _foreign(module: Module) -> bool:
    """Whether the module's text may register a class with another API of ``jax.tree_util``."""
    return bool(_FOREIGN_TEXT.search(module.source) and _FOREIGN_CALL.search(module.source))


def _index(module: Module) -> None:
    assert module.tree is not None
    module.candidate = bool(_CANDIDATE.search(module.source))
    for statement in module.tree.body:
        if isinstance(statement, cst.ClassDef):
            module.classes[statement.name.value] = ClassInfo(module, statement, "", [])
        elif isinstance(statement, cst.FunctionDef):
            module.functions[statement.name.value] = statement
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(small.value, cst.Lambda)
                ):
                    module.lambdas[small.targets[0].target.value] = small.value
    _hidden_and_rebound(module)
    imports = _Imports(module)
    if _NESTED_IMPORT.search(module.source):
        module.tree.visit(imports)
    else:  # imports only at module level: no walk through the rest of the tree
        for statement in module.tree.body:
            if isinstance(statement, cst.SimpleStatementLine):
                statement.visit(imports)
    _aliases(module)
    for info in module.classes.values():
        info.qualname = f"{module.name}.{info.name}"
        info.bases = [(_base_name(module, arg.value), _code(arg.value)) for arg in info.node.bases]
        # ``class Sub(Base if c else object)``, ``class Sub(*bases)``: it may subclass any class
        if any(
            arg.star or (name is None and not _namedtuple(module, arg.value))
            for arg, (name, _) in zip(info.node.bases, info.bases, strict=True)
        ):
            shown = ", ".join(f"{arg.star}{_code(arg.value)}" for arg in info.node.bases)
            module.opaque.append(f"class {info.name}({shown})")
    if module.candidate:
        _rebound(module)
        _api_aliases(module)
    if module.candidate or _foreign(module):
        # Only the top-level statements whose code names a registration API (or an alias of
        # one) are walked: most of a module's nodes are in others.
        aliases = [
            name
            for name, qualified in module.names.items()
            if qualified in _API_NAMES or _foreign_name(qualified)
        ]
        aliases += list(module.api_aliases)
        names = re.compile("|".join(["register_", *(rf"\b{a}\b" for a in aliases)]))
        visitor = _Registrations(module)
        for statement, text in zip(module.tree.body, module.statement_texts(), strict=True):
            if names.search(text):
                visitor.top = statement
                statement.visit(visitor)


def _hidden_and_rebound(module: Module) -> None:
    """Classes made other than by a module-level class statement (their subclasses of a
    registered class cannot be enumerated as the others are), and module-level class names
    bound again (which class a registration names then depends on where it runs). Python's
    own parser, which is fast, reads them; only statements are walked."""
    if not module.classes and not _MAYBE_HIDDEN.search(module.source):
        return
    try:
        tree = ast.parse(module.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    counts: dict[str, list[str]] = {}

    def bind(name: str, how: str) -> None:
        counts.setdefault(name, []).append(how)

    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, places = stack.pop()
        nested = any(p.startswith(("inside", "in the body")) for p in places)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                continue
            here = places
            if isinstance(child, ast.ClassDef):
                if places:
                    bases = tuple(filter(None, (_ast_dotted(b) for b in child.bases)))
                    module.hidden.append(HiddenClass(child.name, places[-1], bases))
                    if len(bases) < len(child.bases):  # ``class Sub(*bases)`` under an ``if``
                        module.opaque.append(f"class {child.name}(...), {places[-1]}")
                else:
                    bind(child.name, "a class statement")
                here = (*places, f"in the body of class '{child.name}'")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not nested:
                    bind(child.name, "a def")
                here = (*places, f"inside function '{child.name}'")
            else:
                if not nested:
                    _module_binding(child, bind)
                if isinstance(child, _AST_BLOCKS):
                    kind = type(child).__name__.lower().replace("star", "")
                    here = (*places, f"under a '{kind}' statement")
            stack.append((child, here))
    if _TYPE_CALL.search(module.source):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                _type_call(module, node)
    for name, hows in counts.items():
        if "a class statement" in hows and len(hows) > 1:
            others = [how for how in hows if how != "a class statement"]
            module.rebound_classes[name] = others[0] if others else "a second class statement"


_AST_BLOCKS: tuple[type[ast.stmt], ...] = (
    ast.If,
    ast.Try,
    ast.TryStar,
    ast.With,
    ast.AsyncWith,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Match,
)


def _module_binding(node: ast.AST, bind: Callable[[str, str], None]) -> None:
    """The names a statement at module scope binds other than by class or def."""
    if isinstance(node, ast.Assign):
        value = node.value
        for target in node.targets:
            for name in _ast_targets(target):
                # ``A = register_pytree_node_class(A)``: the same class, decorated
                same = (
                    isinstance(value, ast.Call)
                    and bool(value.args)
                    and isinstance(value.args[0], ast.Name)
                    and value.args[0].id == name.id
                )
                if not same:
                    bind(name.id, "an assignment")
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        if not isinstance(node, ast.AnnAssign) or node.value is not None:
            bind(node.target.id, "an assignment")
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                bind(alias.asname or alias.name.partition(".")[0], "an import")
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        for name in _ast_targets(node.target):
            bind(name.id, "a loop")


def _ast_targets(target: ast.expr) -> list[ast.Name]:
    """The names an assignment target binds (``A.x = ...`` and ``A[0] = ...`` bind none)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _ast_targets(element)]
    if isinstance(target, ast.Starred):
        return _ast_targets(target.value)
    return []


def _type_call(module: Module, call: ast.Call) -> None:
    """``type("D", (B,), {})``: a class made by a call, its bases named. One whose bases are
    computed (``type("D", bases, {})``, ``types.new_class``) is kept as opaque."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    bases = call.args[1] if len(call.args) == 3 else None
    empty = (  # ``tuple()``: no base
        isinstance(bases, ast.Call)
        and isinstance(bases.func, ast.Name)
        and bases.func.id in ("tuple", "list")
        and not bases.args
        and not bases.keywords
    )
    if called == "new_class" or (
        called == "type"
        and bases is not None
        and not empty
        and not (
            isinstance(bases, (ast.Tuple, ast.List)) and all(_ast_dotted(b) for b in bases.elts)
        )
    ):
        module.opaque.append(ast.unparse(call)[:80])
        return
    if not (
        isinstance(func, ast.Name)
        and func.id == "type"
        and len(call.args) == 3
        and isinstance(call.args[1], (ast.Tuple, ast.List))
    ):
        return
    name = call.args[0]
    shown = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else "?"
    named = tuple(filter(None, (_ast_dotted(b) for b in call.args[1].elts)))
    module.hidden.append(HiddenClass(shown, "built by type(...)", named))


def _ast_dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        head = _ast_dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return node.id if isinstance(node, ast.Name) else None


# A class statement inside a block, or a call of ``type``: worth a walk of the module.
_MAYBE_HIDDEN = re.compile(
    r"(?:^|(?<=\r))[ \t\f]+class[ \t]|\btype[ \t]*\(|\bnew_class[ \t]*\(", re.MULTILINE
)
_TYPE_CALL = re.compile(r"\btype[ \t]*\([^)]*,|\bnew_class[ \t]*\(")
# a class made by a call whose bases may not be written out: ``type("D", bases, {})``,
# ``types.new_class("D", (B,))``
_OPAQUE_CALL = re.compile(r"\btype[ \t]*\([^(),]*,|\bnew_class[ \t]*\(")
_TYPE_PARAMS = _TYPE_PARAMS_TEXT  # ``class Sub[T](Base)`` (3.12)


_NAMEDTUPLES = frozenset({"collections.namedtuple", "typing.NamedTuple"})


def _namedtuple(module: Module, node: cst.BaseExpression) -> bool:
    """``namedtuple("P", "x y")`` as a base: a new class, not one of the scanned files'."""
    return isinstance(node, cst.Call) and module.qualify(node.func) in _NAMEDTUPLES


def _base_name(module: Module, node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Subscript):  # Generic[T]
        node = node.value
    return module.qualify(node)


def _code(node: cst.CSTNode) -> str:
    """A node's source on one line, without its comments (a report quotes code, not notes)."""
    text = cst.Module(body=[]).code_for_node(node)
    if "#" in text:
        text = _without_comments(text)
    return " ".join(text.split())


def _without_comments(text: str) -> str:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    lines = physical_lines(text)
    for token in reversed(tokens):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:column] + line[token.end[1] :]
    return "".join(lines)


def code(node: cst.CSTNode, limit: int = 60) -> str:
    """A node's source on one line, shortened for a report."""
    text = _code(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- imports ------------------------------------------------------------------------------------


class _Imports(cst.CSTVisitor):
    """What each import binds, in every scope (a function-local import of a registration API
    counts: the registration it serves is reported all the same)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.blocks: list[str] = []  # the compound statements around the node, at module scope
        self.scopes = 0  # the functions and classes around the node

    def on_visit(self, node: cst.CSTNode) -> bool:
        # imports are statements: no expression holds one
        if isinstance(node, cst.BaseExpression):
            return False
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.scopes += 1
        elif isinstance(node, _CONDITIONAL):
            self.blocks.append(type(node).__name__.lower().replace("star", ""))
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self.scopes -= 1
        elif isinstance(original_node, _CONDITIONAL):
            self.blocks.pop()
        super().on_leave(original_node)

    def _bind(self, local: str, qualified: str) -> None:
        self.module.names[local] = qualified
        if self.blocks and not self.scopes:
            # ``try: from jax.tree_util import X`` / ``except ImportError: def X(cls): ...``
            self.module.conditional[local] = f"imported under a '{self.blocks[-1]}' statement"

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, name)
            else:
                head = name.partition(".")[0]
                self._bind(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        source = _dotted(node.module) if node.module is not None else ""
        if node.relative:
            package = self.module.package.split(".") if self.module.package else []
            up = len(node.relative) - 1
            base = package[: len(package) - up] if up else package
            source = ".".join([*base, source] if source else base)
        if isinstance(node.names, cst.ImportStar):
            self.module.star_imports.append(source or ".")
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else name
            )
            self._bind(local, f"{source}.{name}" if source else name)


def _rebound(module: Module) -> None:
    """Imported names a def, class or assignment at module scope binds again (a fallback
    ``def register_pytree_node_class(cls): return cls``): which one holds at run time is not
    known from the text."""
    assert module.tree is not None
    bound: set[str] = set()

    class Bindings(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            bound.add(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            bound.add(node.name.value)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                bound.add(node.target.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name) and node.value is not None:
                bound.add(node.target.value)

    module.tree.visit(Bindings())
    for name in bound & set(module.names):
        module.conditional.setdefault(name, "also bound by a def or an assignment of this module")


def _aliases(module: Module) -> None:
    """Module-level ``ABC = abc.ABC`` or ``Finalizable = misc.Finalizable``, the name bound
    nowhere else in the module: the name qualifies as what it is bound to (a registration API
    so bound is not followed: ``_api_aliases`` reports its registrations)."""
    assert module.tree is not None
    for statement in module.tree.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, (cst.Name, cst.Attribute))
            ):
                continue
            name = small.targets[0].target.value
            if name in module.names or name in module.classes or name in module.functions:
                continue
            qualified = module.qualify(small.value)
            if qualified is None or qualified in _API_NAMES or not _bound_once(module, name):
                continue
            module.aliases[name] = qualified


def _bound_once(module: Module, name: str) -> bool:
    """Whether the module's text binds ``name`` once (an assignment, a def, a class, an import
    ``as``, a ``global``, a loop or ``with`` target: any of them a second time). A keyword
    argument of that name counts too (the cheap, conservative side)."""
    word = re.escape(name)
    binding = re.compile(
        rf"\b{word}\s*(?::[^=\r\n]*)?=(?!=)|\b(?:def|class|global|nonlocal|as|for)\s+{word}\b"
        rf"|\b{word}\s*:=|\b{word}\s*[-+*/%&|^@<>]+="
    )
    return len(binding.findall(module.source)) == 1


def _other_bindings(module: Module, name: str) -> bool:
    """Whether the module's text binds ``name`` other than by an import (an assignment, a def,
    a class, a loop target; a keyword argument of that name counts too, the cautious side)."""
    word = re.escape(name)
    binding = re.compile(
        rf"\b{word}\s*(?::[^=\r\n]*)?=(?!=)|\b(?:def|class|global|nonlocal|for)\s+{word}\b"
        rf"|\b{word}\s*:=|\b{word}\s*[-+*/%&|^@<>]+="
    )
    return binding.search(module.source) is not None


def _api_aliases(module: Module) -> None:
    """Names a module-level assignment binds to a registration API (``_base =
    jax.tree_util.register_pytree_node_class``): a registration through one is found and
    reported, never rewritten (the name may be bound again anywhere)."""
    assert module.tree is not None
    for statement in module.tree.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign):
                continue
            api = api_of(module, small.value)
            if api is None:
                continue
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    module.api_aliases[target.target.value] = (api, _code(small))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    assert isinstance(node, cst.Name)
    return node.value


# -- registrations ------------------------------------------------------------------------------


def api_of(module: Module, node: cst.BaseExpression) -> str | None:
    """The registration API an expression names, or None."""
    name = module.qualify(node)
    return _API_NAMES.get(name) if name is not None else None


def _foreign_name(qualified: str | None) -> str | None:
    """The API of ``jax.tree_util`` other than the four a qualified name is
    (``register_dataclass``, ``register_static``, any later ``register_*``), or None."""
    owner, _, api = (qualified or "").rpartition(".")
    if owner in _API_MODULES and api.startswith("register_") and api not in APIS:
        return api
    return None


def foreign_api(module: Module, node: cst.BaseExpression) -> str | None:
    """The other registration API of ``jax.tree_util`` an expression names, or None."""
    return _foreign_name(module.qualify(node))


def _foreign_in(module: Module, expression: cst.BaseExpression) -> str | None:
    """The other registration API a decorator names anywhere in it (``@register_static``,
    ``@partial(jax.tree_util.register_dataclass, data_fields=...)``), or None."""
    found: list[str] = []

    class Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            api = foreign_api(module, node)
            if api is not None:
                found.append(api)
            return api is None

        def visit_Name(self, node: cst.Name) -> None:
            api = foreign_api(module, node)
            if api is not None:
                found.append(api)

    expression.visit(Names())
    return found[0] if found else None


def _last_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def _lookalike(module: Module, node: cst.BaseExpression) -> str | None:
    """An API's name the imports do not tie to JAX (``from jax.tree_util import *``, or a
    re-export ``from models import register_pytree_node_class``), or a name an assignment binds
    to an API: reported, never rewritten."""
    if isinstance(node, cst.Name) and node.value in module.api_aliases:
        return module.api_aliases[node.value][0]
    name = _last_name(node)
    if name not in APIS:
        return None
    qualified = module.qualify(node)
    if qualified is not None and qualified.partition(".")[0] in _OTHER_REGISTRIES:
        return None  # optree's or torch's registry: not JAX's, and nothing to rewrite
    return name


# Packages whose registration functions share JAX's names but fill registries of their own.
_OTHER_REGISTRIES = frozenset({"optree", "torch"})


def _unresolved(module: Module, registration: cst.CSTNode) -> str:
    """Why the API a registration (a Decorator, or a Call) names may not be JAX's; ""."""
    node = registration.decorator if isinstance(registration, cst.Decorator) else registration
    if isinstance(node, cst.Call):
        node = node.func
    if not isinstance(node, cst.BaseExpression) or api_of(module, node) is not None:
        return ""
    if isinstance(node, cst.Name) and node.value in module.api_aliases:
        return (
            f"reached through '{node.value}', bound by an assignment the codemod does not "
            f"follow ({module.api_aliases[node.value][1]})"
        )
    qualified = module.qualify(node)
    owner = qualified.rpartition(".")[0] if qualified is not None else ""
    if module.named(owner):
        return "defined in this module, not imported from jax.tree_util"
    if owner:
        return f"imported from {owner}, not from jax.tree_util"
    if module.star_imports:
        return f"reached through 'from {module.star_imports[0]} import *'"
    return "not imported by name"


_CONDITIONAL = (cst.If, cst.Try, cst.TryStar, cst.With, cst.For, cst.While, cst.Match)


class _Registrations(cst.CSTVisitor):
    """Every use of a registration API: decorators on classes, and calls anywhere."""

    def __init__(self, module: Module) -> None:
        self.module = module
        # the top-level statement being visited
        self.top: cst.SimpleStatementLine | cst.BaseCompoundStatement | None = None
        self.scopes: list[str] = []  # why the current position is not plain module level
        self.statement: cst.SimpleStatementLine | None = None
        self.decorators: set[cst.Decorator] = set()
        self.function = ""  # the module-level function being visited
        # the API expressions read as registrations (called, or decorating): any other use of
        # the API (passed to ``map``, put in a tuple) registers classes no one can name
        self.read: set[cst.CSTNode] = set()

    # The enclosing blocks, innermost last.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.read.add(node.name)
        self.scopes.append(f"inside function '{node.name.value}'")
        if len(self.scopes) == 1:
            self.function = node.name.value

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.read.add(node.name)
        for decorator in node.decorators:
            expression = decorator.decorator
            api = api_of(self.module, expression) or _lookalike(self.module, expression)
            if api is None:
                foreign = _foreign_in(self.module, expression)
                if foreign is not None:
                    named = f"{self.module.name}.{node.name.value}" if not self.scopes else None
                    self._foreign(foreign, named, node.name.value)
                continue
            self.decorators.add(decorator)
            self.read.add(expression)
            target = f"{self.module.name}.{node.name.value}" if not self.scopes else None
            self._add(api, "decorator", decorator, node, target, node.name.value, {})
            self.module.registrations[-1].named = target
        self.scopes.append(f"in the body of class '{node.name.value}'")

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statement = node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.statement = None

    def _compound(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.For):
            self.read.add(node.target)
        kind = type(node).__name__.lower().replace("star", "")
        self.scopes.append(f"under a '{kind}' statement")

    def _leave_compound(self, original_node: cst.CSTNode) -> None:
        self.scopes.pop()

    visit_If = visit_Try = visit_TryStar = visit_With = visit_For = visit_While = _compound
    visit_Match = _compound
    leave_If = leave_Try = leave_TryStar = leave_With = leave_For = _leave_compound
    leave_While = leave_Match = _leave_compound

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.scopes.append("inside a lambda")

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.scopes.pop()

    def visit_Call(self, node: cst.Call) -> None:
        api = api_of(self.module, node.func) or _lookalike(self.module, node.func)
        if api is None:
            foreign = foreign_api(self.module, node.func)
            if foreign is not None:
                self._foreign_call(foreign, node)
            self._getattr(node)
            return
        self.read.add(node.func)
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        names = _PARAMETERS[api]
        values = dict(zip(names, positional, strict=False))
        for keyword, value in keywords.items():
            values[_KEYWORDS.get(keyword, keyword)] = value
        if any(arg.star for arg in node.args):
            values["*"] = node  # arguments the codemod cannot read
        target_node = values.pop("class", None)
        target = self.module.qualify(target_node) if target_node is not None else None
        target_text = _code(target_node) if target_node is not None else "?"
        named = target
        if self.scopes:
            target = None
        self._add(api, "call", node, self.statement, target, target_text, values)
        self.module.registrations[-1].named = named

    # A name bound (``def register_pytree_node_class(cls)`` as a fallback) is no use of the API.
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_Param(self, node: cst.Param) -> None:
        self.read.add(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.read.add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.read.add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.read.add(node.target)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        # the module-level alias assignments are followed (``_api_aliases``); their targets
        # and values are no use of the API
        return bool(self.scopes) or not any(
            isinstance(t.target, cst.Name) and t.target.value in self.module.api_aliases
            for t in node.targets
        )

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if node in self.read:
            return False
        if api_of(self.module, node) is not None:
            self._value(node)
            return False
        node.value.visit(self)  # ``obj.register_pytree_node`` is not the imported name
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node in self.read:
            return
        api = api_of(self.module, node)
        if api is not None or node.value in self.module.api_aliases:
            self._value(node)

    def _getattr(self, node: cst.Call) -> None:
        """``getattr(jax.tree_util, "register_pytree_node_class")``: a use of the API too."""
        if self.module.qualify(node.func) != "builtins.getattr" or len(node.args) < 2:
            return
        name = node.args[1].value
        if isinstance(name, cst.SimpleString) and name.evaluated_value in APIS:
            self._add(str(name.evaluated_value), "value", node, self.statement, None, "?", {})

    def _value(self, node: cst.Name | cst.Attribute) -> None:
        """A use of the API the codemod cannot read (``map(register_pytree_node_class, ...)``,
        ``for f in (register_pytree_node_class,)``): reported, and no class is safe from it."""
        api = api_of(self.module, node) or _lookalike(self.module, node)
        assert api is not None
        self._add(api, "value", node, self.statement, None, "?", {})

    def _foreign_call(self, api: str, node: cst.Call) -> None:
        """``jax.tree_util.register_dataclass(Sub, ...)``: the class is its first argument
        (``nodetype``/``cls`` by keyword)."""
        positional = [arg for arg in node.args if arg.keyword is None]
        keywords = [
            arg.value
            for arg in node.args
            if arg.keyword is not None and _KEYWORDS.get(arg.keyword.value) == "class"
        ]
        if positional and not positional[0].star:
            target: cst.BaseExpression | None = positional[0].value
        else:  # ``*args`` first: no telling which class (None names none)
            target = keywords[0] if keywords and not positional else None
        if target is None:
            self.module.foreign.append(Foreign(self.module, api, None, "?", self._place()))
            return
        self._foreign(api, self.module.qualify(target), _code(target))

    def _foreign(self, api: str, named: str | None, target_text: str) -> None:
        self.module.foreign.append(Foreign(self.module, api, named, target_text, self._place()))

    def _place(self) -> str:
        """Why the current position is not plain module level ("" when it is): the innermost
        function or class body, else the innermost block."""
        return next(
            (s for s in reversed(self.scopes) if s.startswith(("inside", "in the body"))),
            self.scopes[-1] if self.scopes else "",
        )

    def _add(
        self,
        api: str,
        form: str,
        node: cst.CSTNode,
        anchor: cst.ClassDef | cst.SimpleStatementLine | None,
        target: str | None,
        target_text: str,
        args: dict[str, cst.BaseExpression],
    ) -> None:
        place = self.scopes[-1] if self.scopes else ""
        # Inside a function, the innermost reason is the one that matters most ("inside function
        # 'register'"); an 'if' inside a function is still inside the function.
        for scope in reversed(self.scopes):
            if scope.startswith(("inside", "in the body")):
                place = scope
                break
        registration = Registration(
            self.module, api, form, node, anchor, target, target_text, args, place
        )
        registration.unresolved = _unresolved(self.module, node)
        if isinstance(self.top, cst.ClassDef) and form != "decorator":
            registration.within = f"{self.module.name}.{self.top.name.value}"
        if place.startswith("inside function") and self.scopes[0].startswith("inside function"):
            registration.helper = f"{self.module.name}.{self.function}"
        assert self.top is not None
        registration.line, registration.column = self.module.position_of(node, self.top)
        if isinstance(anchor, cst.ClassDef):
            registration.class_line = self.module.position_of(anchor.name, self.top)[0]
        self.module.registrations.append(registration)


# The parameters of each API, by position (JAX's names; "class" is the registered type).
_PARAMETERS: dict[str, tuple[str, ...]] = {
    "register_pytree_node_class": ("class",),
    "register_pytree_with_keys_class": ("class",),
    "register_pytree_node": ("class", "flatten", "unflatten", "flatten_with_keys"),
    "register_pytree_with_keys": ("class", "flatten_with_keys", "unflatten", "flatten"),
}
_KEYWORDS = {
    "cls": "class",
    "nodetype": "class",
    "flatten_func": "flatten",
    "unflatten_func": "unflatten",
    "flatten_with_keys_func": "flatten_with_keys",
    "flatten_with_keys": "flatten_with_keys",
}


def existing_comments(lines: Iterable[cst.EmptyLine]) -> list[str]:
    """The codes of the codemod's comments among ``lines``."""
    codes = []
    for line in lines:
        if line.comment is not None:
            match = COMMENT_PATTERN.match(line.comment.value)
            if match:
                codes.append(match.group(1))
    return codes
