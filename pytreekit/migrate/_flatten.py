"""Reading flatten and unflatten: what flatten carries (``Carried``: the attribute names of the
children and aux, the aux's shape, the keys), and what unflatten does with it (``Unflatten``: the
arguments of a constructor call, or the stores into ``object.__new__``'s instance). Anything the
reading cannot follow is a ``Refusal`` naming it."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ._scan import KEY_TYPES, ClassInfo, Module, code, suite_statements
from ._values import IDEMPOTENT, Converted, Opaque, Refusal, Seq, Slot, Value, is_docstring


@dataclass(frozen=True)
class Carried:
    """What flatten carries: attribute names, the aux's shape, and the keys if keyed.

    An aux entry read through a child (``self.linear.in_features``) is named with its dot: it
    is no attribute of the class, and no static of the rewrite."""

    children: tuple[str, ...]
    aux: tuple[str, ...]
    # "none" (None), "empty" (() or tuple()), "emptydict" ({} or dict()), "one" (obj.attr),
    # "tuple"
    aux_shape: str
    keys: tuple[str, ...] | None  # the key paths as keystr shows them, when keyed

    @property
    def static(self) -> tuple[str, ...]:
        """The aux attributes of the instance itself: the rewrite's statics."""
        return tuple(name for name in self.aux if "." not in name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every attribute of the instance flatten carries: children, then statics."""
        return self.children + self.static

    def slot_of(self, attribute: str) -> Slot:
        if attribute in self.children:
            return Slot("child", self.children.index(attribute))
        if self.aux_shape == "one":
            return Slot("aux_whole")
        return Slot("aux", self.aux.index(attribute))


@dataclass(frozen=True)
class Function:
    """A flatten or unflatten function as the analysis reads it."""

    node: cst.FunctionDef | cst.Lambda
    owner: ClassInfo | None  # the class whose body defines it (a method)
    module: Module
    name: str
    bound: str | None  # the name of self (a method) or cls (a classmethod), taken off params
    params: tuple[str, ...]
    body: tuple[cst.BaseSmallStatement | cst.BaseStatement, ...]
    deletable: bool = False  # a module-level function the rewrite may delete

    @staticmethod
    def of(
        node: cst.FunctionDef | cst.Lambda,
        owner: ClassInfo | None,
        module: Module,
        *,
        deletable: bool = False,
        attribute: bool = False,
    ) -> Function:
        params = node.params
        if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.star_kwarg:
            raise Refusal("PTK116", f"{_name(node)} takes *args or **kwargs", node.params)
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        bound = None
        if isinstance(node, cst.FunctionDef):
            decorators = {code(d.decorator) for d in node.decorators}
            if owner is not None and "staticmethod" not in decorators and names:
                bound, names = names[0], names[1:]
            if decorators - {"classmethod", "staticmethod"}:
                raise Refusal(
                    "PTK116", f"{_name(node)} is decorated ({', '.join(decorators)})", node.name
                )
            body: tuple[cst.BaseSmallStatement | cst.BaseStatement, ...] = tuple(
                suite_statements(node.body)
            )
        else:
            body = (cst.Return(value=node.body),)
        return Function(node, owner, module, _name(node), bound, tuple(names), body, deletable)


def _name(node: cst.FunctionDef | cst.Lambda) -> str:
    return node.name.value if isinstance(node, cst.FunctionDef) else "lambda"


@dataclass(frozen=True)
class _Read:
    """What flatten's expressions evaluate to."""

    kind: str  # "attr", "seq", "none", "key", "other"
    name: str = ""  # attribute, or key path as keystr shows it
    items: tuple[_Read, ...] = ()
    text: str = ""
    node: cst.CSTNode | None = None  # the expression, for the report's excerpt


def read_flatten(function: Function, *, keyed: bool, info: ClassInfo) -> Carried:
    arguments = (function.bound,) if function.bound else function.params
    if len(arguments) != 1 or (function.params and function.bound):
        raise Refusal(
            "PTK116",
            f"flatten {function.name} does not take the instance alone",
            function.node.params,
        )
    instance = arguments[0]
    local: dict[str, _Read] = {}
    returned: _Read | None = None
    for statement in function.body:
        if is_docstring(statement) or isinstance(statement, (cst.Pass, cst.Del)):
            continue
        if isinstance(statement, cst.Assign) and returned is None:
            value = _evaluate_read(statement.value, instance, local, function.module)
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    local[target.target.value] = value
                else:
                    raise Refusal("PTK104", f"flatten assigns {code(target.target)}", target.target)
            continue
        if isinstance(statement, cst.Return) and statement.value is not None:
            returned = _evaluate_read(statement.value, instance, local, function.module)
            break
        if isinstance(statement, cst.BaseCompoundStatement):
            raise Refusal("PTK104", f"flatten branches or loops ({code(statement, 50)})", statement)
        raise Refusal("PTK104", f"flatten runs {code(statement)}", statement)
    if returned is None:
        raise Refusal("PTK104", "flatten returns nothing the codemod can read")
    if returned.kind != "seq" or len(returned.items) != 2:
        raise Refusal(
            "PTK104",
            f"flatten returns {returned.text or 'something'}, not (children, aux)",
            returned.node,
        )
    children, aux = returned.items
    if children.kind != "seq":
        raise Refusal(
            "PTK104",
            f"flatten returns {children.text or 'a value'} as children, not a tuple of attributes",
            children.node,
        )
    names: list[str] = []
    keys: list[str] = []
    for child in children.items:
        if keyed:
            if child.kind != "seq" or len(child.items) != 2 or child.items[0].kind != "key":
                raise Refusal(
                    "PTK104",
                    f"flatten_with_keys returns {child.text or 'a child'}, not (key, attribute)",
                    child.node,
                )
            keys.append(child.items[0].name)
            child = child.items[1]
        if child.kind != "attr":
            raise Refusal(
                "PTK104",
                f"flatten returns {child.text or 'a derived value'} as a child",
                child.node,
            )
        names.append(child.name)
    if aux.kind == "none":
        return Carried(tuple(names), (), "none", tuple(keys) if keyed else None)
    if aux.kind == "seq" and not aux.items:
        return Carried(tuple(names), (), "empty", tuple(keys) if keyed else None)
    if aux.kind == "emptydict":
        return Carried(tuple(names), (), "emptydict", tuple(keys) if keyed else None)
    if aux.kind == "attr":
        return Carried(tuple(names), (aux.name,), "one", tuple(keys) if keyed else None)
    if aux.kind == "seq" and all(item.kind in ("attr", "subattr") for item in aux.items):
        return Carried(
            tuple(names),
            tuple(item.name for item in aux.items),
            "tuple",
            tuple(keys) if keyed else None,
        )
    refusal = Refusal("PTK105", f"aux data is {aux.text or 'derived'}", aux.node)
    if aux.kind == "dict" and all(item.kind == "attr" for item in aux.items):
        # what flatten carries all the same: the other checks run on it, for every reason
        refusal.partial = Carried(
            tuple(names),
            tuple(item.name for item in aux.items),
            "dict",
            tuple(keys) if keyed else None,
        )
    raise refusal


def _evaluate_read(
    node: cst.BaseExpression, instance: str, local: dict[str, _Read], module: Module
) -> _Read:
    text = code(node)
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == instance
    ):
        return _Read("attr", node.attr.value, text=text, node=node)
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Attribute)
        and isinstance(node.value.value, cst.Name)
        and node.value.value.value == instance
    ):  # self.linear.in_features: a value of a child, which _check_derived judges
        return _Read("subattr", f"{node.value.attr.value}.{node.attr.value}", text=text)
    if isinstance(node, cst.Call) and not node.args:
        # tuple() and dict() are () and {}, nothing else: builtins only, not shadowed names
        called = module.qualify(node.func)
        if called == "builtins.tuple":
            return _Read("seq", text=text)
        if called == "builtins.dict":
            return _Read("emptydict", text=text)
    if isinstance(node, cst.Dict) and not node.elements:
        return _Read("emptydict", text=text)
    if isinstance(node, (cst.Tuple, cst.List)):
        items = []
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                return _Read("other", text=text, node=node)
            items.append(_evaluate_read(element.value, instance, local, module))
        return _Read("seq", items=tuple(items), text=text)
    if isinstance(node, cst.Name):
        if node.value == "None":
            return _Read("none", text=text)
        if node.value in local:
            return local[node.value]
    if isinstance(node, cst.Dict):
        values = tuple(
            _evaluate_read(element.value, instance, local, module)
            for element in node.elements
            if isinstance(element, cst.DictElement)
        )
        return _Read("dict", items=values, text=f"a dict ({text})", node=node)
    if isinstance(node, cst.Call) and len(node.args) == 1:
        key_type = KEY_TYPES.get(module.qualify(node.func) or "")
        argument = node.args[0].value
        literal: str | int | None = None
        if isinstance(argument, cst.SimpleString) and isinstance(argument.evaluated_value, str):
            literal = argument.evaluated_value
        elif isinstance(argument, cst.Integer):
            literal = int(argument.value)
        if key_type is not None and literal is not None:
            path = {
                "GetAttrKey": f".{literal}",
                "DictKey": f"[{literal!r}]",
                "SequenceKey": f"[{literal}]",
                "FlattenedIndexKey": f"[<flat index {literal}>]",
            }[key_type]
            return _Read("key", path, text=text)
    return _Read("other", text=text, node=node)


_NO_AUX = Opaque("aux (None)")  # what unflatten gets as aux when flatten returns None
_EMPTY_DICT = Opaque("aux ({})")  # an empty dict: ** and * pass nothing
# Values unflatten may pass besides children and aux: constants that switch off checks
# (_perform_checks=False) or stand for a dummy key; the proof decides whether they matter.
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)


@dataclass(frozen=True)
class Unflatten:
    """unflatten as read: a constructor call's arguments (and the stores made into the instance
    it built, as in ``obj = cls(dummy_key, *aux)`` then ``obj.weights = children[0]``), or the
    stores into ``object.__new__``'s instance."""

    construct: tuple[list[Value], dict[str, Value]] | None
    stores: dict[str, Value]


def read_unflatten(function: Function, info: ClassInfo, carried: Carried) -> Unflatten:
    if len(function.params) != 2:
        raise Refusal(
            "PTK116",
            f"unflatten {function.name} does not take (aux, children)",
            function.node.params,
        )
    aux_name, children_name = function.params
    cls_name = function.bound  # cls, for a classmethod
    children = Seq(tuple(Slot("child", i) for i in range(len(carried.children))))
    if carried.aux_shape == "tuple":
        aux: Value = Seq(tuple(Slot("aux", i) for i in range(len(carried.aux))))
    elif carried.aux_shape == "one":
        aux = Slot("aux_whole")
    elif carried.aux_shape == "empty":
        aux = Seq(())
    elif carried.aux_shape == "emptydict":
        aux = _EMPTY_DICT
    else:
        aux = _NO_AUX
    local: dict[str, Value] = {aux_name: aux, children_name: children}
    new_object: str | None = None
    constructed: tuple[list[Value], dict[str, Value]] | None = None
    stores: dict[str, Value] = {}
    reader = _UnflattenReader(info, cls_name)
    for statement in function.body:
        if is_docstring(statement) or isinstance(statement, (cst.Pass, cst.Del)):
            continue
        if isinstance(statement, cst.Assign):
            value_node = statement.value
            targets = statement.targets
            alone = len(targets) == 1 and isinstance(targets[0].target, cst.Name)
            if new_object is None and alone and reader.is_new(value_node):
                new_object = cst.ensure_type(targets[0].target, cst.Name).value
                continue
            if (
                new_object is None
                and alone
                and isinstance(value_node, cst.Call)
                and reader.is_class(value_node.func)
            ):
                new_object = cst.ensure_type(targets[0].target, cst.Name).value
                constructed = reader.arguments(value_node, local, dummies=True)
                continue
            for target in statement.targets:
                _bind(target.target, reader.value(value_node, local), local, new_object, stores)
            continue
        if (
            isinstance(statement, cst.Expr)
            and new_object
            and reader.is_setattr(statement.value, new_object)
        ):
            call = statement.value
            assert isinstance(call, cst.Call)
            attribute = call.args[1].value
            assert isinstance(attribute, cst.SimpleString)
            name = attribute.evaluated_value
            stores[str(name)] = reader.value(call.args[2].value, local)
            continue
        if isinstance(statement, cst.Return) and statement.value is not None:
            returned = statement.value
            if new_object and isinstance(returned, cst.Name) and returned.value == new_object:
                return Unflatten(constructed, stores)
            if isinstance(returned, cst.Call) and reader.is_class(returned.func):
                return Unflatten(reader.arguments(returned, local), {})
            raise Refusal(
                "PTK107", f"unflatten returns {code(returned)}, not a new {info.name}", returned
            )
        raise Refusal("PTK107", f"unflatten runs {code(statement)}", statement)
    raise Refusal("PTK107", "unflatten returns nothing the codemod can read")


def _bind(
    target: cst.BaseExpression,
    value: Value,
    local: dict[str, Value],
    new_object: str | None,
    stores: dict[str, Value],
) -> None:
    if isinstance(target, cst.Name):
        local[target.value] = value
        return
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == new_object
    ):
        stores[target.attr.value] = value
        return
    if isinstance(target, (cst.Tuple, cst.List)):
        if not isinstance(value, Seq) or len(value.items) != len(target.elements):
            raise Refusal(
                "PTK107", f"unflatten unpacks {code(target)} from a value of another length"
            )
        for element, item in zip(target.elements, value.items, strict=True):
            if isinstance(element, cst.StarredElement):
                raise Refusal("PTK107", f"unflatten unpacks {code(target)}", target)
            _bind(element.value, item, local, new_object, stores)
        return
    raise Refusal("PTK107", f"unflatten assigns {code(target)}", target)


class _UnflattenReader:
    def __init__(self, info: ClassInfo, cls_name: str | None) -> None:
        self.info = info
        self.cls_name = cls_name

    def is_class(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name) and node.value == self.cls_name:
            return True
        return self.info.module.qualify(node) == self.info.qualname or (
            isinstance(node, cst.Name) and node.value == self.info.name
        )

    def is_new(self, node: cst.BaseExpression) -> bool:
        """``object.__new__(cls)`` or ``cls.__new__(cls)``."""
        if not isinstance(node, cst.Call) or len(node.args) != 1:
            return False
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "__new__"):
            return False
        owner = func.value
        owner_ok = (isinstance(owner, cst.Name) and owner.value == "object") or self.is_class(owner)
        return owner_ok and self.is_class(node.args[0].value)

    def is_setattr(self, node: cst.BaseExpression, new_object: str) -> bool:
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == "object"
            and node.func.attr.value == "__setattr__"
            and len(node.args) == 3
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value == new_object
            and isinstance(node.args[1].value, cst.SimpleString)
        )

    def value(self, node: cst.BaseExpression, local: dict[str, Value]) -> Value:
        if isinstance(node, cst.Name) and node.value in local:
            return local[node.value]
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            sequence = local.get(node.value.value)
            index = _index(node)
            if (
                isinstance(sequence, Seq)
                and index is not None
                and -len(sequence.items) <= index < len(sequence.items)
            ):
                return sequence.items[index]
        if (
            isinstance(node, cst.Call)
            and len(node.args) == 1
            and not node.args[0].keyword
            and not node.args[0].star
            and self.info.module.qualify(node.func) in IDEMPOTENT
        ):  # jnp.asarray(children[0]): the value, converted (PTK205 when it is a leaf)
            inner = self.value(node.args[0].value, local)
            if isinstance(inner, (Slot, Converted)):
                return Converted(code(node.func), inner)
        return Opaque(code(node))

    def arguments(
        self, call: cst.Call, local: dict[str, Value], *, dummies: bool = False
    ) -> tuple[list[Value], dict[str, Value]]:
        """The values a constructor call passes. Besides children and aux values, a constant
        (``_perform_checks=False``) may be passed, and with ``dummies`` (the instance's leaves
        are stored after the call) any value: the proof then requires that every attribute the
        call sets from them is overwritten, or is not a field."""
        positional: list[Value] = []
        keywords: dict[str, Value] = {}
        for arg in call.args:
            value = self.value(arg.value, local)
            if arg.star == "*":
                if value == _EMPTY_DICT:
                    continue
                if not isinstance(value, Seq):
                    raise Refusal("PTK107", f"unflatten unpacks *{code(arg.value)}", arg.value)
                positional.extend(value.items)
            elif arg.star == "**":
                if value == _EMPTY_DICT:
                    continue
                raise Refusal("PTK107", f"unflatten unpacks **{code(arg.value)}", arg.value)
            elif value == _NO_AUX:
                raise Refusal(
                    "PTK107",
                    f"unflatten passes {code(arg.value)}, which flatten sets None",
                    arg.value,
                )
            elif not isinstance(value, Slot) and not (dummies or _constant(arg.value)):
                raise Refusal(
                    "PTK107",
                    f"unflatten passes {code(arg.value)}, not a child or aux value",
                    arg.value,
                )
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = value
            else:
                positional.append(value)
        return positional, keywords


def _constant(node: cst.BaseExpression) -> bool:
    """A literal: ``False``, ``None``, ``0``, ``"fast"``."""
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return isinstance(node.expression, _LITERALS)
    return isinstance(node, _LITERALS)


def _index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.Integer):
        return int(value.value)
    if (
        isinstance(value, cst.UnaryOperation)
        and isinstance(value.operator, cst.Minus)
        and isinstance(value.expression, cst.Integer)
    ):
        return -int(value.expression.value)
    return None
