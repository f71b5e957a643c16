"""``__init__``, followed symbolically: which attributes every path through it sets, in which
order, from which arguments, and what else it does (checks, conversions, calls). It is followed
into ``super().__init__`` and ``Base.__init__(self, ...)`` of scanned bases, and a dataclass's
generated ``__init__`` into ``__post_init__``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from ._scan import ClassInfo, Module, Project, code, suite_statements
from ._values import (
    IDEMPOTENT,
    Converted,
    Opaque,
    Param,
    Refusal,
    Seq,
    Value,
    describe_value,
    is_docstring,
    strip,
)

# Bases that add no attributes, no __init__ and no abstract flatten: safe to build on.
NEUTRAL_BASES = {
    "builtins.object",
    "abc.ABC",
    "typing.Generic",
    "typing_extensions.Generic",
    "numpy.lib.mixins.NDArrayOperatorsMixin",
}
DATACLASS = {"dataclasses.dataclass"}


def _own_annotations(info: ClassInfo) -> list[str]:
    """The names the class body annotates, ``ClassVar`` aside (dataclasses' fields)."""
    names: list[str] = []
    for statement in info.annotations():
        annotation = code(statement.annotation.annotation)
        if "ClassVar" in annotation:
            continue
        if "InitVar" in annotation or "KW_ONLY" in annotation:
            raise Refusal(
                "PTK108",
                f"{info.name} declares {code(statement.target)}: {annotation}",
                statement,
            )
        assert isinstance(statement.target, cst.Name)
        names.append(statement.target.value)
    return names


def dataclass_options(info: ClassInfo) -> dict[str, bool] | None:
    """The class's ``@dataclass(...)`` options, if it is a dataclass."""
    for decorator in info.node.decorators:
        expression = decorator.decorator
        call = expression if isinstance(expression, cst.Call) else None
        target = call.func if call is not None else expression
        if info.module.qualify(target) not in DATACLASS:
            continue
        options: dict[str, bool] = {}
        for arg in call.args if call is not None else ():
            if arg.keyword is not None and isinstance(arg.value, cst.Name):
                options[arg.keyword.value] = arg.value.value == "True"
        return options
    return None


@dataclass
class InitRun:
    """What running ``__init__`` does, symbolically: the attributes it sets, in the order it first
    sets them, their final values, and what else it does."""

    attributes: dict[str, Value] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    transforming: dict[str, str] = field(default_factory=dict)  # attribute -> why
    nodes: dict[str, cst.CSTNode] = field(default_factory=dict)  # where each is first set
    failure: Refusal | None = None


@dataclass(frozen=True)
class _Parameter:
    name: str
    default: cst.BaseExpression | None
    has_default: bool
    keyword_only: bool = False


class Fields:
    """How instances of a class get their attributes: its ``__init__`` (its own, inherited, or a
    dataclass's), followed symbolically."""

    def __init__(self, project: Project, info: ClassInfo) -> None:
        self.project = project
        self.info = info
        self.annotated_why = ""  # why pytreekit takes the fields from annotations
        self.annotated = self._annotated()
        self.defaults: dict[str, cst.BaseExpression] = {}
        found = self._init_of(info)
        self.init = found
        if found is not None:
            self.defaults = {p.name: p.default for p in found[1] if p.default is not None}

    def _annotated(self) -> tuple[str, ...] | None:
        """The field names when pytreekit treats the class as annotated (makes it a dataclass and
        takes its fields from annotations), None when it follows ``__init__``.

        As pytreekit decides: the nearest registered ancestor (rewritten with the class, or the
        hierarchy is left whole) decides for its subclasses; otherwise the class is annotated when
        its own body annotates a name, it or a base is a dataclass, or no ``__init__`` but
        object's is found. Its fields are then those of its dataclass (or annotated, registered)
        bases and its own annotations: a ``@dataclass`` without annotations has none."""
        mro = self.project.mro(self.info)
        registered = self.project.registered()
        decider = next((a for a in mro[1:] if a.qualname in registered), None)
        subject = self.info
        if decider is not None:
            subject = decider
        sub_mro = self.project.mro(subject)
        dataclasses = [a for a in sub_mro if dataclass_options(a) is not None]
        if _own_annotations(subject):
            why = f"{subject.name} annotates fields"
        elif dataclasses:
            why = f"{dataclasses[0].name} is a dataclass"
        elif self._init_of(subject) is None:
            why = f"{subject.name} has no __init__ of its own or inherited"
        else:
            return None
        if subject is not self.info:
            why += f", and {subject.name}'s rewrite decides for its subclasses"
        self.annotated_why = why
        names: list[str] = []
        for ancestor in reversed(mro):
            is_field_source = (
                ancestor is self.info
                or dataclass_options(ancestor) is not None
                or ancestor.qualname in registered
            )
            if not is_field_source:
                continue
            for name in _own_annotations(ancestor):
                if name not in names:
                    names.append(name)
        return tuple(names)

    def _init_of(
        self, info: ClassInfo
    ) -> tuple[ClassInfo, list[_Parameter], cst.FunctionDef | None] | None:
        """The class providing ``__init__``, its parameters, and its def (None: a dataclass's)."""
        for ancestor in self.project.mro(info):
            method = ancestor.methods().get("__init__")
            if method is not None:
                return ancestor, _parameters(method), method
            options = dataclass_options(ancestor)
            if options is not None and options.get("init", True):
                return ancestor, self._dataclass_parameters(ancestor, options), None
        return None

    def _dataclass_parameters(self, info: ClassInfo, options: dict[str, bool]) -> list[_Parameter]:
        parameters: list[_Parameter] = []
        for ancestor in reversed(self.project.mro(info)):
            if dataclass_options(ancestor) is None:
                continue
            for statement in ancestor.annotations():
                if "ClassVar" in code(statement.annotation.annotation):
                    continue
                assert isinstance(statement.target, cst.Name)
                value = statement.value
                has_default = value is not None
                default = value
                if isinstance(value, cst.Call) and code(value.func).endswith("field"):
                    arguments = {a.keyword.value: a.value for a in value.args if a.keyword}
                    init = arguments.get("init")
                    if isinstance(init, cst.Name) and init.value == "False":
                        raise Refusal(
                            "PTK108",
                            f"field {statement.target.value} of {ancestor.name} is not an "
                            f"__init__ parameter (init=False)",
                        )
                    default = arguments.get("default")
                    has_default = "default" in arguments or "default_factory" in arguments
                parameters = [p for p in parameters if p.name != statement.target.value]
                parameters.append(
                    _Parameter(
                        statement.target.value, default, has_default, options.get("kw_only", False)
                    )
                )
        return parameters

    def bind_syntax(self, call: cst.Call) -> dict[str, cst.BaseExpression]:
        """Which argument expression of a call reaches which parameter (best effort)."""
        assert self.init is not None  # a class with statics sets them in its __init__
        parameters = [p for p in self.init[1] if not p.keyword_only]
        bound: dict[str, cst.BaseExpression] = {}
        position = 0
        for arg in call.args:
            if arg.star:
                return bound
            if arg.keyword is not None:
                bound[arg.keyword.value] = arg.value
            elif position < len(parameters):
                bound[parameters[position].name] = arg.value
                position += 1
        return bound

    def run(self, positional: list[Value], keywords: dict[str, Value]) -> InitRun:
        """``__init__`` as unflatten's constructor call runs it."""
        if self.init is None:
            if positional or keywords:
                raise Refusal(
                    "PTK107",
                    f"unflatten passes arguments, but {self.info.name} has no __init__ the "
                    f"codemod can read (its own, or a scanned base's)",
                )
            return InitRun()
        owner, parameters, method = self.init
        values = _bind_arguments(owner, parameters, positional, keywords)
        return self._execute(owner, parameters, method, values)

    def run_symbolic(self) -> InitRun:
        """``__init__`` with each parameter standing for itself (the field order)."""
        if self.init is None:
            return InitRun()
        owner, parameters, method = self.init
        values: dict[str, Value] = {p.name: Param(p.name) for p in parameters}
        return self._execute(owner, parameters, method, values)

    def _execute(
        self,
        owner: ClassInfo,
        parameters: list[_Parameter],
        method: cst.FunctionDef | None,
        values: dict[str, Value],
    ) -> InitRun:
        run = InitRun()
        interpreter = _Interpreter(self.project, run)
        try:
            if method is None:
                for parameter in parameters:
                    run.attributes[parameter.name] = values[parameter.name]
                interpreter.post_init(self.info)
            else:
                interpreter.call(owner, method, values)
        except Refusal as refusal:
            run.failure = refusal
        return run


def _parameters(method: cst.FunctionDef) -> list[_Parameter]:
    params = method.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        raise Refusal(
            "PTK107", "__init__ takes *args or **kwargs: which attribute gets what is unknown"
        )
    found = [
        _Parameter(p.name.value, p.default, p.default is not None)
        for p in (*params.posonly_params, *params.params)
    ][1:]
    found += [
        _Parameter(p.name.value, p.default, p.default is not None, True)
        for p in params.kwonly_params
    ]
    return found


def _bind_arguments(
    owner: ClassInfo,
    parameters: list[_Parameter],
    positional: Sequence[Value],
    keywords: dict[str, Value],
) -> dict[str, Value]:
    values: dict[str, Value] = {}
    by_position = [p for p in parameters if not p.keyword_only]
    if len(positional) > len(by_position):
        raise Refusal(
            "PTK107",
            f"unflatten passes {len(positional)} positional arguments; {owner.name}.__init__ "
            f"takes {len(by_position)}",
        )
    for parameter, value in zip(by_position, positional, strict=False):
        values[parameter.name] = value
    names = {p.name for p in parameters}
    for name, value in keywords.items():
        if name not in names or name in values:
            raise Refusal(
                "PTK107", f"unflatten passes {name}=, which {owner.name}.__init__ does not take"
            )
        values[name] = value
    for parameter in parameters:
        if parameter.name not in values:
            if not parameter.has_default:
                raise Refusal(
                    "PTK107", f"unflatten does not pass {parameter.name} to {owner.name}.__init__"
                )
            values[parameter.name] = Opaque(f"default {parameter.name}")
    return values


class _Interpreter:
    """Follows ``__init__`` statement by statement, into ``super().__init__`` and
    ``__post_init__``; refuses what it cannot follow."""

    def __init__(self, project: Project, run: InitRun) -> None:
        self.project = project
        self.run = run
        self.depth = 0

    def call(self, owner: ClassInfo, method: cst.FunctionDef, values: dict[str, Value]) -> None:
        self.depth += 1
        if self.depth > 20:
            raise Refusal("PTK108", "__init__ calls nest too deep to follow")
        params = (*method.params.posonly_params, *method.params.params)
        this = params[0].name.value
        frame = _Frame(owner, this, dict(values))
        self.block(frame, suite_statements(method.body))
        self.depth -= 1

    def post_init(self, info: ClassInfo) -> None:
        for ancestor in self.project.mro(info):
            method = ancestor.methods().get("__post_init__")
            if method is not None:
                self.run.notes.append(f"ran {ancestor.name}.__post_init__")
                self.call(ancestor, method, {})
                return

    def block(self, frame: _Frame, statements: Sequence[cst.CSTNode], *, tail: bool = True) -> None:
        """``tail``: nothing of the method runs after this block (a ``return`` in it is then
        the method's end, not a path that skips what follows)."""
        for index, statement in enumerate(statements):
            last = tail and index == len(statements) - 1
            if not last and _returns(statement):
                raise _returning_early(frame.owner.name, statement)
            self.statement(frame, statement, tail=last)

    def statement(self, frame: _Frame, statement: cst.CSTNode, *, tail: bool = True) -> None:
        if is_docstring(statement) or isinstance(statement, (cst.Pass, cst.Del, cst.Return)):
            return
        if isinstance(statement, cst.Assign):
            value = frame.evaluate(statement.value)
            for target in statement.targets:
                self.assign(frame, target.target, value, statement.value)
            return
        if isinstance(statement, cst.AnnAssign):
            if statement.value is not None:
                self.assign(
                    frame, statement.target, frame.evaluate(statement.value), statement.value
                )
            return
        if isinstance(statement, cst.AugAssign):
            self.assign(frame, statement.target, Opaque(code(statement)), statement)
            return
        if isinstance(statement, cst.Assert):
            self.run.notes.append(f"checked assert {code(statement.test, 40)}")
            return
        if isinstance(statement, cst.Expr):
            self.expression(frame, statement.value)
            return
        if isinstance(statement, cst.If) and _only_checks(statement, frame.this):
            self.run.notes.append(f"checked if {code(statement.test, 40)}: raise ...")
            return
        if isinstance(statement, cst.If) and self.branches(frame, statement, tail=tail):
            return
        if isinstance(statement, cst.Raise):
            raise Refusal(
                "PTK108", f"__init__ of {frame.owner.name} raises unconditionally", statement
            )
        kind = type(statement).__name__.lower()
        if _touches(statement, frame.this):
            raise Refusal(
                "PTK108",
                f"__init__ of {frame.owner.name} sets attributes under a '{kind}' statement "
                f"({code(statement, 40)})",
                statement,
            )
        for name in _assigned_names(statement):
            frame.local[name] = Opaque(f"{name} (computed under a '{kind}')")
        self.run.notes.append(f"ran {code(statement, 40)}")

    def branches(self, frame: _Frame, statement: cst.If, *, tail: bool) -> bool:
        """``if``/``elif``/``else`` whose every branch that does not raise sets the same
        attributes, each to the same value up to conversions that keep it (``jnp.asarray``):
        followed as one path. False when that does not hold (the caller refuses)."""
        paths: list[cst.BaseSuite] = []
        branch: cst.If | cst.Else | None = statement
        complete = False
        while branch is not None:
            paths.append(branch.body)
            if isinstance(branch, cst.Else):
                complete = True
            branch = branch.orelse if isinstance(branch, cst.If) else None
        runs: list[tuple[InitRun, _Frame]] = []
        for body in paths:
            statements = suite_statements(body)
            if _only_checks_block(statements, frame.this) and _always_raises(statements):
                continue  # a path that raises sets nothing (one that only warns goes on)
            run = InitRun()
            inner = _Interpreter(self.project, run)
            inner.depth = self.depth
            copy = _Frame(frame.owner, frame.this, dict(frame.local))
            try:
                inner.block(copy, statements, tail=tail)
            except Refusal:
                return False
            runs.append((run, copy))
        if not complete:
            # the path that takes no branch sets nothing: then no branch may set anything
            runs.append((InitRun(), _Frame(frame.owner, frame.this, dict(frame.local))))
        # (some path does not raise: were every branch a raising check, _only_checks took it)
        first = runs[0][0]
        if not _set_alike([run for run, _ in runs]):
            return False
        if (
            not first.attributes
            and all(not r.attributes for r, _ in runs)
            and any(_touches(body, frame.this) for body in paths)
        ):
            return False
        _merge_paths(self.run, frame, runs)
        # the value with the most conversions stands for all (each is checked idempotent)
        for name in first.attributes:
            values = [run.attributes[name] for run, _ in runs]
            value = max(values, key=lambda v: len(strip(v)[1]))
            self.set_attribute(frame, name, value, statement)
        self.run.notes.append(f"followed if {code(statement.test, 40)}: every branch alike")
        return True

    def assign(
        self, frame: _Frame, target: cst.BaseExpression, value: Value, node: cst.CSTNode
    ) -> None:
        if isinstance(target, cst.Name):
            frame.local[target.value] = value
            return
        if isinstance(target, cst.Attribute) and frame.is_self(target.value):
            self.set_attribute(frame, target.attr.value, value, node)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if isinstance(value, Seq) and len(value.items) == len(elements):
                for element, item in zip(elements, value.items, strict=True):
                    self.assign(frame, element.value, item, node)
                return
            for element in elements:
                self.assign(frame, element.value, Opaque(f"part of {code(node)}"), node)
            return
        if _touches(target, frame.this):
            raise Refusal(
                "PTK108", f"__init__ of {frame.owner.name} assigns {code(target)}", target
            )
        # a store into something else (a dict, a global): not an attribute of the instance

    def set_attribute(self, frame: _Frame, name: str, value: Value, node: cst.CSTNode) -> None:
        _, functions = strip(value)
        if functions:
            self.run.notes.append(f"converted {name} with {functions[0]}")
            if not all(_idempotent(frame.owner.module, f) for f in functions):
                self.run.transforming[name] = (
                    f"__init__ stores {describe_value(value)} in {name}, not the argument itself"
                )
        self.run.attributes[name] = value
        self.run.nodes.setdefault(name, node)

    def expression(self, frame: _Frame, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Call):
            base = self.super_init(frame, node)
            if base is not None:
                return
            if _is_object_setattr(node, frame):
                attribute = node.args[1].value
                assert isinstance(attribute, cst.SimpleString)
                value = frame.evaluate(node.args[2].value)
                self.set_attribute(frame, str(attribute.evaluated_value), value, node)
                return
            if not _touches(node, frame.this):
                self.run.notes.append(f"called {code(node.func, 40)}()")
                return
        if isinstance(node, (cst.SimpleString, cst.Ellipsis)):
            return
        raise Refusal(
            "PTK108",
            f"__init__ of {frame.owner.name} runs {code(node, 50)}, which may set attributes",
            node,
        )

    def super_init(self, frame: _Frame, call: cst.Call) -> ClassInfo | None:
        """Follow ``super().__init__(...)`` or ``Base.__init__(self, ...)``; None if not one."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "__init__"):
            return None
        owner = func.value
        args = list(call.args)
        if isinstance(owner, cst.Call) and code(owner.func) == "super":
            _refuse_other_super(self.project, frame, owner)
            bases = self.project.base_classes(frame.owner)
        elif (
            named := self.project.lookup(frame.owner.module, frame.owner.module.qualify(owner))
        ) is not None and (args and frame.is_self(args[0].value)):
            bases = [named]
            args = args[1:]
            # Base.__init__(self): that class's own __init__ (or what it inherits)
            found = Fields(self.project, bases[0]).init
            return self._enter(frame, found, args, bases[0])
        else:
            return None
        neutral = _unscanned_bases(self.project, frame.owner)
        if len(bases) > 1 or (bases and neutral and any(q not in NEUTRAL_BASES for q in neutral)):
            raise Refusal(
                "PTK108",
                f"{frame.owner.name} has several bases: super().__init__ is not followed",
            )
        if not bases:
            if args:
                raise Refusal("PTK108", f"{frame.owner.name} passes arguments to object.__init__")
            return frame.owner
        found = Fields(self.project, bases[0]).init
        return self._enter(frame, found, args, bases[0])

    def _enter(
        self,
        frame: _Frame,
        found: tuple[ClassInfo, list[_Parameter], cst.FunctionDef | None] | None,
        args: list[cst.Arg],
        base: ClassInfo,
    ) -> ClassInfo:
        if found is None:
            if args:
                raise Refusal("PTK108", f"{frame.owner.name} passes arguments to object.__init__")
            return base
        owner, parameters, method = found
        positional: list[Value] = []
        keywords: dict[str, Value] = {}
        for arg in args:
            if arg.star:
                raise Refusal(
                    "PTK108", f"{frame.owner.name} passes *{code(arg.value)} to super().__init__"
                )
            if arg.keyword is not None:
                keywords[arg.keyword.value] = frame.evaluate(arg.value)
            else:
                positional.append(frame.evaluate(arg.value))
        values = _bind_arguments(owner, parameters, positional, keywords)
        if method is None:
            for parameter in parameters:
                self.run.attributes[parameter.name] = values[parameter.name]
            self.post_init(owner)
        else:
            self.call(owner, method, values)
        return owner


def _idempotent(module: Module, function: str) -> bool:
    """A conversion known to give back an argument of its result type unchanged. ``function`` is
    an excerpt: one cut short ("jnp.asarray(x).re...", a method of a call) names no function."""
    try:
        expression = cst.parse_expression(function)
    except cst.ParserSyntaxError:
        return False
    return module.qualify(expression) in IDEMPOTENT


def _merge_paths(into: InitRun, frame: _Frame, runs: Sequence[tuple[InitRun, _Frame]]) -> None:
    """What the followed paths of an ``if`` noted goes into ``into``; a local variable a path set
    differently becomes opaque."""
    for run, copy in runs:
        into.notes.extend(run.notes)
        into.transforming.update(run.transforming)
        for name, value in copy.local.items():
            if frame.local.get(name) != value:
                frame.local[name] = Opaque(f"{name} (set under an 'if')")


def _set_alike(runs: Sequence[InitRun]) -> bool:
    """Whether every run set the same attributes, in one order, to the same values up to
    conversions that keep them."""
    first = runs[0]
    return all(
        list(run.attributes) == list(first.attributes)
        and all(strip(v)[0] == strip(first.attributes[n])[0] for n, v in run.attributes.items())
        for run in runs[1:]
    )


@dataclass
class _Frame:
    owner: ClassInfo
    this: str  # the name of self in this method
    local: dict[str, Value]

    def is_self(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value == self.this

    def evaluate(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, cst.Name) and node.value in self.local:
            return self.local[node.value]
        if isinstance(node, (cst.Tuple, cst.List)) and not any(
            isinstance(e, cst.StarredElement) for e in node.elements
        ):
            return Seq(tuple(self.evaluate(e.value) for e in node.elements))
        if (
            isinstance(node, cst.Call)
            and len(node.args) == 1
            and not node.args[0].keyword
            and not node.args[0].star
        ):
            inner = self.evaluate(node.args[0].value)
            if not isinstance(inner, Opaque):
                return Converted(code(node.func), inner)
        return Opaque(code(node))


def _only_checks(statement: cst.If, this: str) -> bool:
    """``if ...: raise ...`` (elif/else too, nested ifs, asserts, warnings, calls that do not
    touch self): a check, not a path that sets attributes. Its tests may read anything."""
    branch: cst.If | cst.Else | None = statement
    while branch is not None:
        body = suite_statements(branch.body)
        if not body or not _only_checks_block(body, this):
            return False
        branch = branch.orelse if isinstance(branch, cst.If) else None
    return _raises(statement)


def _only_checks_block(body: Sequence[cst.CSTNode], this: str) -> bool:
    for statement in body:
        if isinstance(statement, (cst.Raise, cst.Pass, cst.Assert)) or _is_warning(statement):
            continue
        if isinstance(statement, cst.If) and _only_checks(statement, this):
            continue
        if (
            isinstance(statement, cst.Expr)
            and isinstance(statement.value, cst.Call)
            and not _touches(statement, this)
        ):
            continue
        return False
    return True


def _always_raises(statements: Sequence[cst.CSTNode]) -> bool:
    """Whether a block ends by raising on every path (a warning or an assert does not)."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.Raise):
        return True
    if isinstance(last, cst.If):
        branch: cst.If | cst.Else | None = last
        while isinstance(branch, cst.If):
            if not _always_raises(suite_statements(branch.body)):
                return False
            branch = branch.orelse
        return branch is not None and _always_raises(suite_statements(branch.body))
    return False


def _raises(statement: cst.CSTNode) -> bool:
    if isinstance(statement, (cst.Raise, cst.Assert)) or _is_warning(statement):
        return True
    if isinstance(statement, cst.If):
        branch: cst.If | cst.Else | None = statement
        while branch is not None:
            if any(_raises(s) for s in suite_statements(branch.body)):
                return True
            branch = branch.orelse if isinstance(branch, cst.If) else None
    return False


def _is_warning(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.Expr)
        and isinstance(statement.value, cst.Call)
        and code(statement.value.func).endswith("warn")
    )


def _is_object_setattr(node: cst.Call, frame: _Frame) -> bool:
    return (
        code(node.func) == "object.__setattr__"
        and len(node.args) == 3
        and frame.is_self(node.args[0].value)
        and isinstance(node.args[1].value, cst.SimpleString)
    )


def _returning_early(owner: str, statement: cst.CSTNode) -> Refusal:
    # A path that returns early skips the stores below: those are not set on every path,
    # whatever the other paths do.
    return Refusal(
        "PTK108",
        f"__init__ of {owner} may return early ({code(statement, 40)}): what it sets after that "
        f"is not set on every path",
        statement,
    )


def _returns(node: cst.CSTNode) -> bool:
    """Whether a ``return`` of the method itself is in ``node`` (one of a nested def is not)."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            nonlocal found
            found = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    node.visit(Finder())
    return found


def _touches(node: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` (self) appears anywhere in ``node``."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            if node.value == name:
                found = True

    node.visit(Finder())
    return found


def _assigned_names(node: cst.CSTNode) -> list[str]:
    names: list[str] = []

    class Finder(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                names.append(node.target.value)

        def visit_For(self, node: cst.For) -> None:
            if isinstance(node.target, cst.Name):
                names.append(node.target.value)

    node.visit(Finder())
    return names


def _unscanned_bases(project: Project, info: ClassInfo) -> list[str | None]:
    """The bases of ``info`` that are no scanned class (through an alias too)."""
    return [q for q, _ in info.bases if project.lookup(info.module, q) is None]


def _refuse_other_super(project: Project, frame: _Frame, call: cst.Call) -> None:
    """Refuse (PTK108) a ``super(...)`` other than ``super()`` or ``super(C, self)`` in ``C``:
    only those call the next class after the owner's."""
    args = call.args
    if not args:
        return
    if len(args) == 2 and not any(a.star or a.keyword is not None for a in args):
        first, second = (a.value for a in args)
        named = project.lookup(frame.owner.module, frame.owner.module.qualify(first))
        if named is frame.owner and frame.is_self(second):
            return
    raise Refusal(
        "PTK108",
        f"{frame.owner.name}.__init__ calls {code(call, 40)}.__init__: only super() and "
        f"super({frame.owner.name}, self) are followed",
        call,
    )
