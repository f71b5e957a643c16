"""Writes, in any scanned module, that may change a registered class or the functions its
registration uses after their statements: ``K.tree_flatten = f`` whatever ``K`` is (an import
alias, a parameter, a loop variable, ``type(obj)``), ``setattr(cls, name, f)``,
``_flat.__code__ = ...``. Names are not followed one by one: a write of an attribute the rewrite
relies on is refused unless its target is provably some other object."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

import libcst as cst

from ._bindings import STAR
from ._scan import ClassInfo, Module, Project
from ._values import Refusal

FLATTEN_METHODS = frozenset({"tree_flatten", "tree_unflatten", "tree_flatten_with_keys"})
# The methods the analysis reads by their defs: a class body binding one otherwise is refused.
READ_METHODS = FLATTEN_METHODS | {"__init__", "__post_init__", "__new__"}
# Attributes of a function whose write changes what calling it does (or what it is said to be).
FUNCTION_INTERNALS = frozenset(
    {"__code__", "__defaults__", "__kwdefaults__", "__globals__", "__wrapped__", "__closure__"}
)
# The dunders whose write changes how instances are built, compared, hashed, pickled, read or
# set (a project's own dunder, ``__galsim_wrapped__``, does not count).
_BEHAVIOUR = frozenset(
    {
        "__init__", "__new__", "__post_init__", "__init_subclass__", "__class_getitem__",
        "__setattr__", "__delattr__", "__getattr__", "__getattribute__", "__class__",
        "__dict__", "__slots__", "__eq__", "__ne__", "__hash__", "__repr__", "__reduce__",
        "__reduce_ex__", "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__",
        "__copy__", "__deepcopy__", "__replace__", "__dataclass_fields__",
        "__dataclass_params__", "__match_args__", "__set_name__", "__get__", "__set__",
        "__delete__", "__call__", "__bases__",
    }
)  # fmt: skip
# First parameters that are the class, not an instance, in a method without @classmethod.
_IMPLICIT_CLASS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})

_UNRELATED = "unrelated"  # provably not the class nor a registration's function
_UNKNOWN = "unknown"  # may be anything
_FUNCTION = "function"  # a def of the scanned files
_CLASS = "class"  # exactly the class found
_CLS = "cls"  # the class of a method's ``cls`` (that class or a subclass)
_MADE = "made"  # a class a function makes: a registered one only through a metaclass
_INSTANCE = "instance"  # an instance of that class (or of a subclass): a method's ``self``


@dataclass(frozen=True)
class _Scope:
    """A function around a write: the names it binds, those it binds only by a def or class
    statement (a new object each call), its first parameter when it is a method's."""

    bound: frozenset[str]
    fresh: frozenset[str]
    first: str | None = None
    owner: str | None = None  # the module-level class the method belongs to
    instance: bool = True
    # names bound only to a class made here (``cls = super().__new__(mcs, ...)`` in a metaclass)
    made: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Write:
    """``target.name = ...`` (or ``del``, ``+=``, ``setattr``, ``delattr``); ``name`` None: set
    with a name that is not a constant."""

    module: Module
    target: ast.expr
    name: str | None
    how: str
    line: int
    scopes: tuple[_Scope, ...]
    words: frozenset[str]  # the names and attributes of the target


def writes(project: Project) -> list[Write]:
    """Every attribute write of every scanned module."""
    found: list[Write] = []
    for module in project.modules:
        if module.error is not None or module.skipped is not None:
            continue
        if not any(word in module.source for word in ("=", "attr", "del ", "__setattr__")):
            continue
        _collect(module, found)
    return found


def _collect(module: Module, found: list[Write]) -> None:
    tree = module.syntax()
    # the constant names a loop variable takes (``for attr in ["__name__", "__doc__"]``)
    loops: dict[int, dict[str, tuple[str, ...]]] = {}
    stack: list[tuple[ast.AST, tuple[_Scope, ...], str | None, dict[str, tuple[str, ...]]]]
    stack = [(tree, (), None, {})]
    while stack:
        node, scopes, owner, constant = stack.pop()
        inner_owner = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scopes = (*scopes, _scope(node, owner))
        elif isinstance(node, ast.ClassDef) and node in tree.body:
            inner_owner = node.name
        elif isinstance(node, ast.For):
            names = _constant_loop(node)
            if names is not None:
                loops[id(node)] = {**constant, **names}
        write = _write(node)
        if write is not None:
            target, name, how = write
            words = frozenset(
                n.id if isinstance(n, ast.Name) else n.attr
                for n in ast.walk(target)
                if isinstance(n, (ast.Name, ast.Attribute))
            )
            line = getattr(node, "lineno", 0)
            named = node.args[1] if isinstance(node, ast.Call) else None
            values: tuple[str | None, ...] = (name,)
            if name is None and isinstance(named, ast.Name) and named.id in constant:
                values = constant[named.id]
            for value in values:
                found.append(Write(module, target, value, how, line, scopes, words))
        for child in ast.iter_child_nodes(node):
            body = isinstance(node, ast.For) and any(child is b for b in node.body)
            inner = loops.get(id(node), constant) if body else constant
            stack.append((child, scopes, inner_owner, inner))


def _constant_loop(node: ast.For) -> dict[str, tuple[str, ...]] | None:
    """``for attr in ("__name__", "__doc__"):`` whose body does not bind ``attr`` again."""
    target, values = node.target, node.iter
    if not isinstance(target, ast.Name) or not isinstance(values, (ast.List, ast.Tuple, ast.Set)):
        return None
    names = [e.value for e in values.elts if isinstance(e, ast.Constant)]
    if len(names) != len(values.elts) or not all(isinstance(n, str) for n in names):
        return None
    for statement in node.body:
        for inner in ast.walk(statement):
            if (
                isinstance(inner, ast.Name)
                and inner.id == target.id
                and not isinstance(inner.ctx, ast.Load)
            ):
                return None
    return {target.id: tuple(str(n) for n in names)}


def _write(node: ast.AST) -> tuple[ast.expr, str | None, str] | None:
    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
        how = "del" if isinstance(node.ctx, ast.Del) else "an assignment to"
        return node.value, node.attr, f"{how} {ast.unparse(node)[:60]}"
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return None
    func = node.func
    # setattr(K, "x", v), and object.__setattr__(K, "x", v) / type.__setattr__(...); not
    # super().__setattr__(name, value), whose object is the method's own
    plain = isinstance(func, ast.Name) and func.id in ("setattr", "delattr")
    dunder = (
        isinstance(func, ast.Attribute)
        and func.attr in ("__setattr__", "__delattr__")
        and not isinstance(func.value, ast.Call)
        and len(node.args) == (3 if func.attr == "__setattr__" else 2)
    )
    # mock.patch.object(C, "x", ...), monkeypatch.setattr(C, "x", ...)
    patcher = isinstance(func, ast.Attribute) and (
        func.attr == "setattr" or ast.unparse(func).endswith("patch.object")
    )
    if not (plain or dunder or patcher):
        return None
    named = node.args[1]
    name = named.value if isinstance(named, ast.Constant) else None
    return node.args[0], name if isinstance(name, str) else None, ast.unparse(node)[:60]


def _scope(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, owner: str | None) -> _Scope:
    params = [a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)]
    declared = {
        name
        for n in ast.walk(node)
        if isinstance(n, (ast.Global, ast.Nonlocal))
        for name in n.names
    }
    stored = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    defined = {
        n.name
        for n in ast.walk(node)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node
    }
    imported = {
        alias.asname or alias.name.partition(".")[0]
        for n in ast.walk(node)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for alias in n.names
    }
    bound = frozenset({*params, *stored, *defined, *imported} - declared)
    fresh = frozenset(defined - stored - set(params) - imported - declared)
    made = frozenset(_made_classes(node) - set(params) - defined - imported - declared)
    if owner is None or isinstance(node, ast.Lambda) or not node.args.args:
        return _Scope(bound, fresh, made=made)
    decorators = {ast.unparse(d) for d in node.decorator_list}
    if "staticmethod" in decorators or node.args.args[0].arg in stored:
        return _Scope(bound, fresh, made=made)
    instance = "classmethod" not in decorators and node.name not in _IMPLICIT_CLASS
    return _Scope(bound, fresh, node.args.args[0].arg, owner, instance, made)


def _made_classes(node: ast.AST) -> set[str]:
    """The names a function binds only to a class it makes (``super().__new__(...)``,
    ``type(name, bases, ns)``): that class is a registered one only through a metaclass."""
    made: set[str] = set()
    for inner in ast.walk(node):
        if not (
            isinstance(inner, ast.Assign)
            and len(inner.targets) == 1
            and isinstance(inner.targets[0], ast.Name)
            and isinstance(inner.value, ast.Call)
        ):
            continue
        func = ast.unparse(inner.value.func)
        if func in ("super().__new__", "type", "type.__new__", "types.new_class") or func in (
            "types.FunctionType",
            "FunctionType",
        ):
            made.add(inner.targets[0].id)
    stores = [
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    ]
    return {name for name in made if stores.count(name) == 1}


def _chain(target: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return None  # type(obj), obj.__class__ is a chain but resolves to no known object
    return [target.id, *reversed(parts)]


def resolve(project: Project, write: Write) -> tuple[str, ClassInfo | None]:
    """What the object written to is, as far as the codemod can prove it."""
    chain = _chain(write.target)
    if chain is None or "__class__" in chain:
        return _UNKNOWN, None
    head, rest = chain[0], chain[1:]
    module = write.module
    for depth, scope in enumerate(reversed(write.scopes)):
        if head not in scope.bound:
            continue
        if depth == 0 and head == scope.first and not rest and scope.owner is not None:
            found = project.lookup(module, f"{module.name}.{scope.owner}")
            if found is None or _metaclass(found):
                return _UNKNOWN, None
            return (_INSTANCE if scope.instance else _CLS), found
        if head in scope.fresh and not rest:
            return _UNRELATED, None
        if head in scope.made and not rest:
            return _MADE, None
        return _UNKNOWN, None
    bindings = module.bindings()
    found_bindings = bindings.get(head, [])
    if not found_bindings:
        if STAR not in bindings and hasattr(builtins, head):
            return _UNRELATED, None  # a builtin is no scanned class
        return _UNKNOWN, None
    if len(found_bindings) != 1 or STAR in bindings or head in module.conditional:
        return _UNKNOWN, None
    how = found_bindings[0].how
    if how == "an assignment" and _factory_made(module, head):
        return _MADE, None
    if how == "a def":
        return (_FUNCTION if not rest else _UNKNOWN), None
    if how not in ("a class statement", "an import") and head not in module.aliases:
        return _UNKNOWN, None
    if project.parse(module) is None:
        return _UNKNOWN, None
    qualified = module.qualify(cst.parse_expression(".".join(chain)))
    info = project.lookup(module, qualified)
    if info is not None:
        return _CLASS, info
    if qualified is None or how == "a class statement":
        return _UNKNOWN, None
    return _outside(project, qualified)


_FACTORIES = frozenset({"namedtuple", "NamedTuple", "make_dataclass", "new_class", "type"})


def _factory_made(module: Module, name: str) -> bool:
    """``LayerParams = collections.namedtuple(...)``: a class a factory makes, no class
    statement of the scanned files."""
    for node in module.syntax().body:
        if (
            isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == [name]
            and isinstance(node.value, ast.Call)
        ):
            return ast.unparse(node.value.func).rpartition(".")[2] in _FACTORIES
    return False


def _class_like(target: ast.expr) -> bool:
    """A target that reads as a class: ``type(x)``, ``x.__class__``, a name such as ``cls``,
    ``klass``, ``node_cls``, ``base_class``, ``value_type`` or a capitalised one."""
    if isinstance(target, ast.Call) and ast.unparse(target.func) == "type":
        return True
    chain = _chain(target)
    if chain is None:
        return True  # a call or a subscript: no telling
    last = chain[-1]
    return (
        last == "__class__"
        or last[:1].isupper()
        or last.lower() in ("cls", "klass", "kls", "class_", "typ", "type_", "mcs")
        or last.lower().endswith(("_cls", "_class", "_type", "_klass"))
    )


def _has_metaclass(info: ClassInfo) -> bool:
    return any(k.keyword is not None and k.keyword.value == "metaclass" for k in info.node.keywords)


def _metaclass(info: ClassInfo) -> bool:
    """A class whose ``self`` may be a class (a metaclass), or whose bases are not all plain."""
    return any(written == "type" or "Meta" in written for _, written in info.bases)


def _outside(project: Project, qualified: str) -> tuple[str, ClassInfo | None]:
    """A name imported from elsewhere that is not a scanned class: a scanned module, a def of
    one, or something outside the scanned files (no scanned class)."""
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        holder = project.module_named(".".join(parts[:cut]))
        if holder is None:
            continue
        rest = parts[cut:]
        if not rest:
            return _UNRELATED, None  # a module object
        if len(rest) == 1 and project.parse(holder) is not None:
            found = holder.bindings().get(rest[0], [])
            if len(found) == 1 and found[0].how == "a def":
                return _FUNCTION, None
        return _UNKNOWN, None
    if any(m.named(parts[0]) or m.name.startswith(f"{parts[0]}.") for m in project.modules):
        return _UNKNOWN, None  # a scanned package, a module of it the codemod does not know
    return _UNRELATED, None


def _protocol(name: str) -> bool:
    """An attribute the rewrite relies on whatever the class: a method JAX or ``__init__``
    uses, a dunder of how instances are built, compared, pickled or read."""
    return name in READ_METHODS or name in _BEHAVIOUR


class Patches:
    """The attribute writes of the scanned files, and which registrations they may change."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._writes: list[Write] | None = None
        self._resolved: dict[int, tuple[str, ClassInfo | None]] = {}
        self._module_aliases: dict[int, dict[str, ClassInfo]] = {}

    def _all(self) -> list[Write]:
        if self._writes is None:
            self._writes = writes(self.project)
        return self._writes

    def _resolve(self, write: Write) -> tuple[str, ClassInfo | None]:
        # the target's node lives as long as the module's syntax tree: its id is the key (a
        # write made by _through_method is a new object each time)
        key = id(write.target)
        if key not in self._resolved:
            self._resolved[key] = resolve(self.project, write)
        return self._resolved[key]

    def check_class(self, info: ClassInfo) -> None:
        """No write of the scanned files may change the class (or an ancestor) after its
        statement."""
        mro = self.project.mro(info)
        methods = {name for ancestor in mro for name in ancestor.methods()}
        names = {ancestor.name for ancestor in mro}
        for write in self._all():
            write = _through_method(write)
            name = write.name
            if name is not None and name in FUNCTION_INTERNALS:
                continue
            protocol = name is None or _protocol(name)
            # a method of the hierarchy counts on the class or a classmethod's cls; any other
            # attribute only when written to the class itself, found for sure (data attributes
            # excepted, below)
            hierarchy = name is not None and name in methods
            mentioned = bool(names & write.module.words())
            aliases = self._aliases(write) if mentioned else {}
            head = _head(write.target)
            if not (protocol or hierarchy) and not (names & write.words or head in aliases):
                continue
            kind, found = self._resolve(write)
            alias = aliases.get(head) if head is not None else None
            if kind == _UNKNOWN and alias is not None:
                kind, found = _CLASS, alias
            if kind in (_UNRELATED, _FUNCTION) or (found is not None and found not in mro):
                continue
            if kind == _MADE and not any(_has_metaclass(ancestor) for ancestor in mro):
                continue
            where = f"{write.how} (in {write.module.name}, line {write.line})"
            if kind == _CLASS and found is not None:
                if _data_write(self.project, write, found):
                    continue
                raise Refusal(
                    "PTK112",
                    f"{where} changes class {found.name} after its statement: the codemod "
                    f"cannot follow what it holds then",
                    info.node.name,
                )
            if kind == _INSTANCE:
                if name not in FLATTEN_METHODS and name != "__class__":
                    continue
                what = f"what instances of {info.name} flatten with"
            elif not (protocol or (hierarchy and kind == _CLS)):
                continue
            elif name is None and kind == _UNKNOWN and not _class_like(write.target):
                continue  # ``setattr(config, name, value)``: an object, not a class
            elif name is None:
                what = (
                    f"any attribute of {ast.unparse(write.target)[:40]} (its name is not a "
                    f"constant), class {info.name} too"
                )
            else:
                what = (
                    f"class {info.name} after its statement: the codemod cannot tell which "
                    f"class {ast.unparse(write.target)[:40]} is"
                )
            raise Refusal(
                "PTK112",
                f"{where} may change {what}; remove it, or decorate by hand",
                info.node.name,
            )

    def _aliases(self, write: Write) -> dict[str, ClassInfo]:
        """The names an assignment anywhere in the write's module binds to a scanned class
        (``K = C``, ``K: type = C``, ``(K := C)``)."""
        module = write.module
        key = id(module)
        if key not in self._module_aliases:
            self._module_aliases[key] = _assigned_classes(self.project, module)
        return self._module_aliases[key]

    def check_functions(self, info: ClassInfo) -> None:
        """No write of the scanned files may swap what a function of the scanned files runs
        (``_flat.__code__ = ...``): flatten, unflatten or a method may be that function."""
        for write in self._all():
            # __wrapped__ changes what inspect.unwrap finds, not what a call runs
            if write.name not in FUNCTION_INTERNALS or write.name == "__wrapped__":
                continue
            kind, _ = self._resolve(write)
            if kind not in (_FUNCTION, _UNKNOWN):
                continue
            # a method of a class (LayerParams.__new__.__defaults__): the class's check covers
            # the classes of the hierarchy; another class holds no registration's function
            if isinstance(write.target, ast.Attribute):
                owner, _ = self._resolve(_through_method(write))
                if owner in (_CLASS, _MADE, _CLS, _INSTANCE):
                    continue
            raise Refusal(
                "PTK116",
                f"{write.how} (in {write.module.name}, line {write.line}) may change a function "
                f"the registration of {info.name} uses (flatten, unflatten or a method): the "
                f"codemod cannot tell which function {ast.unparse(write.target)[:40]} is; "
                f"remove it, or decorate by hand",
                info.node.name,
            )


def _head(target: ast.expr) -> str | None:
    chain = _chain(target)
    return chain[0] if chain else None


def _through_method(write: Write) -> Write:
    """``C.__init__.__code__ = ...`` changes the class's ``__init__``: read as a write to
    ``C.__init__``."""
    if write.name in FUNCTION_INTERNALS and isinstance(write.target, ast.Attribute):
        target = write.target
        return Write(
            write.module,
            target.value,
            target.attr,
            write.how,
            write.line,
            write.scopes,
            write.words,
        )
    return write


def _assigned_classes(project: Project, module: Module) -> dict[str, ClassInfo]:
    found: dict[str, ClassInfo] = {}
    if "=" not in module.source:
        return found
    for node in ast.walk(module.syntax()):
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            continue
        value = node.value
        if not isinstance(value, (ast.Name, ast.Attribute)):
            continue
        if project.parse(module) is None:
            return found
        info = project.lookup(module, module.qualify(cst.parse_expression(ast.unparse(value))))
        if info is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    found[name.id] = info
    return found


def _data_write(project: Project, write: Write, info: ClassInfo) -> bool:
    """``C.count += 1``, ``C.version = "1.0"``: an assignment, through the class's own name, to
    a class attribute nothing the rewrite depends on reads."""
    return (
        write.how.startswith("an assignment to ")
        and isinstance(write.target, ast.Name)
        and write.target.id == info.name
        and write.name is not None
        and data_attribute(project, info, write.name)
    )


def data_attribute(project: Project, info: ClassInfo, name: str) -> bool:
    """A class attribute nothing the rewrite depends on reads (``C.count += 1``,
    ``C.version = "1.0"``): no dunder, no method of the hierarchy, and no annotation, no
    ``.name`` other than on the class itself, no string ``"name"`` in the scanned files (not
    a field, not read by flatten, unflatten or ``__init__``)."""
    if name.startswith("__") or name in READ_METHODS:
        return False
    if any(name in ancestor.methods() for ancestor in project.mro(info)):
        return False
    for module in project.modules:
        if name not in module.words() or project.parse(module) is None:
            continue
        for node in ast.walk(module.syntax()):
            if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == name:
                return False
            if (
                isinstance(node, ast.Attribute)
                and node.attr == name
                and not (isinstance(node.value, ast.Name) and node.value.id == info.name)
            ):
                return False
            if isinstance(node, ast.Constant) and node.value == name:
                return False  # getattr(self, "count")
    return True
