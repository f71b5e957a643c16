"""Griffe extension: the ``__init__`` that ``@pytree_class`` generates for an annotated class,
and a description of its own for each of ``pytree_class``'s dataclasses-compatible parameters.

Griffe reads the source without running it, so an annotated ``@pytree_class`` class (``Static``,
say) has no ``__init__`` there, and the API reference would show it without a signature. Griffe's
own dataclasses extension does this for ``@dataclasses.dataclass`` only; this one gives such a
class the parameters its generated ``__init__`` takes: its annotated fields (and those of its
``@pytree_class`` bases) in order, with their defaults, keyword-only where ``kw_only`` says so.
"""

from __future__ import annotations

import re
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


# ``pytree_class``'s parameters that ``dataclasses.make_dataclass`` passes, each accepted at its
# default only. Its docstring describes ``init`` once and says "See ``init``." for the others;
# the API reference shows each its own description instead, while the docstring still reads so
# (the same texts are proposed for the docstring: once it has its own words, this does nothing).
DATACLASS_PARAMETERS = {
    "init": (
        "Only ``True``, accepted so that ``dataclasses.make_dataclass(..., "
        "decorator=pytree_class)`` (Python 3.14) works: an annotated class always gets the "
        "``__init__`` pytreekit generates, and a class with its own ``__init__`` keeps it."
    ),
    "order": (
        "Only ``False``: pytreekit generates no ordering methods (``__lt__``, ``__le__``, "
        "``__gt__``, ``__ge__``); define them in the class body if instances must sort."
    ),
    "unsafe_hash": (
        "Only ``False``: a frozen class hashes by value; a class that is not frozen is "
        "unhashable with ``eq=True`` (the default) and hashes by identity with ``eq=False``."
    ),
    "match_args": (
        "Only ``True``: an annotated class gets ``__match_args__`` (its positional "
        "``__init__`` fields, for ``match`` statements), as dataclasses sets it; a class with "
        "its own ``__init__`` gets none."
    ),
    "slots": (
        "Only ``False``: pytreekit adds no ``__slots__``; a class that declares its own keeps them."
    ),
    "weakref_slot": (
        "Only ``False``: to make instances of a class with ``__slots__`` weakly referenceable, "
        'put ``"__weakref__"`` in its own ``__slots__``.'
    ),
}
# An Args entry: its first line (``name: text``, indented) and its more indented continuation.
_ENTRY = re.compile(r"^(?P<indent>[ ]+)(?P<name>\w+): (?P<text>.*(?:\n(?P=indent)[ ]+.*)*)", re.M)


def _borrowed(text: str) -> bool:
    """Whether an Args entry's text is not its own: a pointer to another, or the description
    of all of them that ``init`` carries."""
    flat = " ".join(text.split())
    return flat == "See ``init``." or flat.startswith("``dataclasses.dataclass``'s arguments")


def described(docstring: str) -> str:
    """``pytree_class``'s docstring with each dataclasses-compatible parameter's own text where
    it borrows another's."""

    def own(match: re.Match[str]) -> str:
        name, text = match.group("name"), match.group("text")
        if name not in DATACLASS_PARAMETERS or not _borrowed(text):
            return match.group(0)
        return f"{match.group('indent')}{name}: {DATACLASS_PARAMETERS[name]}"

    return _ENTRY.sub(own, docstring)


class PytreeClassInit(griffe.Extension):
    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if func.name == "pytree_class" and func.docstring is not None:
            func.docstring.value = described(func.docstring.value)

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
