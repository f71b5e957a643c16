"""Griffe extension: the ``__init__`` that ``@pytree_class`` generates for an annotated class.

Griffe reads the source without running it, so an annotated ``@pytree_class`` class (``Static``,
say) has no ``__init__`` there, and the API reference would show it without a signature. Griffe's
own dataclasses extension does this for ``@dataclasses.dataclass`` only; this one gives such a
class the parameters its generated ``__init__`` takes: its annotated fields (and those of its
``@pytree_class`` bases) in order, with their defaults, keyword-only where ``kw_only`` says so.
"""

from __future__ import annotations

from typing import Any

import griffe

DECORATOR = "pytree_class"
FIELD_FUNCTIONS = ("field", "dataclasses.field")


def _arguments(value: Any) -> dict[str, str]:
    """The keyword arguments of a call, as source text."""
    if not isinstance(value, griffe.ExprCall):
        return {}
    return {arg.name: str(arg.value) for arg in value.arguments if hasattr(arg, "name")}


def _options(cls: griffe.Class) -> dict[str, str] | None:
    """The keyword arguments of the class's ``@pytree_class``, or None if it has none."""
    for decorator in cls.decorators:
        if decorator.callable_path.rpartition(".")[2] == DECORATOR:
            return _arguments(decorator.value)
    return None


def _parameter(field: griffe.Attribute, kw_only: bool) -> griffe.Parameter | None:
    """The ``__init__`` parameter of an annotated field, or None if ``__init__`` takes none."""
    if str(field.annotation).startswith(("ClassVar", "typing.ClassVar")):
        return None
    default: Any = field.value
    if isinstance(field.value, griffe.ExprCall) and str(field.value.function).endswith(
        FIELD_FUNCTIONS
    ):
        arguments = _arguments(field.value)
        if arguments.get("init") == "False":
            return None
        kw_only = arguments.get("kw_only", str(kw_only)) == "True"
        default = arguments.get("default")
        if default is None and "default_factory" in arguments:
            default = f"{arguments['default_factory']}()"
    kind = (
        griffe.ParameterKind.keyword_only if kw_only else griffe.ParameterKind.positional_or_keyword
    )
    return griffe.Parameter(field.name, annotation=field.annotation, kind=kind, default=default)


class PytreeClassInit(griffe.Extension):
    def on_class(self, *, cls: griffe.Class, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if _options(cls) is None or "__init__" in cls.members:
            return
        parameters = {
            "self": griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
        }
        bases = [base for base in cls.mro() if _options(base) is not None]
        for owner in [*reversed(bases), cls]:
            kw_only = (_options(owner) or {}).get("kw_only") == "True"
            for member in owner.members.values():
                if isinstance(member, griffe.Attribute) and member.annotation is not None:
                    parameter = _parameter(member, kw_only)
                    if parameter is not None:
                        parameters.setdefault(parameter.name, parameter)
        init = griffe.Function(
            "__init__",
            parent=cls,
            parameters=griffe.Parameters(*parameters.values()),
            returns="None",
            lineno=cls.lineno,
            endlineno=cls.endlineno,
        )
        cls.set_member("__init__", init)
