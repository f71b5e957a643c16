"""The sixth attacker pass (attack6), the declared types: a ``Callable`` declared through a type
alias (PEP 695's ``type``, typing_extensions' ``TypeAliasType``) or a callback ``Protocol``, numbers
kept of their kind (``True`` and ``1`` are not a ``float``: they share its jit traces), dtypes of
bounded items, and a dataclass hashing with its own ``__hash__``. An honest party exports, an
attacker edits the static data, and a victim in a fresh process loads; the pure rules in process.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import json
import numbers
import sys
import textwrap
import typing
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import typing_extensions as te
from conftest import ROOT, TESTS, run_fresh

import pytreekit
from pytreekit._artifacts import export as export_module
from pytreekit._artifacts import static_data
from pytreekit._artifacts.static_data import (
    MAGIC,
    Reader,
    StaticDataError,
    UnencodableError,
    admits_value,
    decode,
    dumps,
    dumps_fields,
    loads,
    parse,
)

PEP695 = sys.version_info >= (3, 12)

# The victim's module, written for each run: its ``type`` statements only where Python has them.
FIXTURES = """
import typing
from collections.abc import Callable
import jax, jax.numpy as jnp
import typing_extensions as te
import pytreekit
from pytreekit import field, pytree_class

CALLS = []


class Warmup:
    '''A callable schedule: a value a codec builds from data.'''
    def __init__(self, steps):
        self.steps = steps
    def __call__(self, x):
        CALLS.append("Warmup")
        return x
    def __hash__(self):
        return hash(self.steps)
    def __eq__(self, other):
        return type(other) is Warmup and other.steps == self.steps


pytreekit.register_static_codec(Warmup, lambda w: w.steps, Warmup)

T = typing.TypeVar("T")
TeFn = te.TypeAliasType("TeFn", Callable[[T], T], type_params=(T,))
TeAct = te.TypeAliasType("TeAct", Callable[[jax.Array], jax.Array])


@pytree_class
class TeModel:
    w: jax.Array
    schedule: Warmup = field(static=True, default=Warmup(100))
    act: TeFn[jax.Array] = field(static=True, default=jnp.tanh)
    act2: TeAct = field(static=True, default=jnp.tanh)


@pytree_class
class Scale:
    bias: jax.Array
    scale: float = field(static=True, default=1.5)


def use(model):
    CALLS.clear()
    for name in ("act", "act2"):
        if hasattr(model, name):
            getattr(model, name)(jnp.ones(2))
    return f"called {CALLS}"
"""

PEP695_FIXTURES = """

type Fn[T] = Callable[[T], T]
type Act = Callable[[jax.Array], jax.Array]


@pytree_class
class Model695:
    w: jax.Array
    schedule: Warmup = field(static=True, default=Warmup(100))
    act: Fn[jax.Array] = field(static=True, default=jnp.tanh)
    act2: Act = field(static=True, default=jnp.tanh)
"""

# case -> (the class exported, the field edited (its first or second tanh), the attacker's text)
CASES: dict[str, tuple[str, str, str]] = {
    "te-generic": ("TeModel", "act", '["x","a6fix:Warmup",1]'),
    "te-plain": ("TeModel", "act2", '["x","a6fix:Warmup",1]'),
    "honest-te": ("TeModel", "act", ""),
    "float-true": ("Scale", "scale", "true"),
    "float-int": ("Scale", "scale", "1"),
    "honest-scale": ("Scale", "scale", ""),
}
if PEP695:
    CASES |= {
        "695-generic": ("Model695", "act", '["x","a6fix:Warmup",1]'),
        "695-plain": ("Model695", "act2", '["x","a6fix:Warmup",1]'),
        "honest-695": ("Model695", "act", ""),
    }

ATTACKER = """
import json, sys
import jax, jax.numpy as jnp
import a6fix
from pytreekit._artifacts import export as export_module
from pytreekit._artifacts import static_data
import pytreekit._artifacts.export as export_module

tanh = static_data.dumps(jnp.tanh)[len(static_data.MAGIC):].decode()
for case, (cls_name, field, new) in json.loads(sys.argv[2]).items():
    cls = getattr(a6fix, cls_name)
    model = cls(jnp.ones(2))
    jax.tree.flatten(model)  # first use: registered for writing
    name, honest = export_module._BY_TYPE[cls]
    def edited(aux, field=field, new=new):
        text = honest(aux).decode()
        if not new:
            return text.encode()
        if field == "scale":
            assert text.count("1.5") == 1, text
            return text.replace("1.5", new).encode()
        first = text.index(tanh)
        at = first if field == "act" else text.index(tanh, first + 1)
        return (text[:at] + new + text[at + len(tanh):]).encode()
    export_module._BY_TYPE[cls] = (name, edited)
    try:
        data = jax.export.export(jax.jit(lambda m: m))(model).serialize()
    finally:
        export_module._BY_TYPE[cls] = (name, honest)
    open(f"{sys.argv[1]}/{case}.bin", "wb").write(data)
"""

VICTIM = """
import json, sys
import jax, jax.numpy as jnp
import a6fix

said = {}
for case in sys.argv[2:]:
    data = open(f"{sys.argv[1]}/{case}.bin", "rb").read()
    try:
        exported = jax.export.deserialize(data)
    except ValueError as error:
        said[case] = f"refused {type(error).__name__}: {error}"
        continue
    model = jax.tree.unflatten(exported.in_tree, [jnp.ones(2)])[0][0]
    said[case] = f"loaded {type(model.__dict__.get('scale')).__name__}: {a6fix.use(model)}"
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the victim says of each artifact the attacker wrote."""
    folder = tmp_path_factory.mktemp("attack6")
    source = FIXTURES + (PEP695_FIXTURES if PEP695 else "")
    (folder / "a6fix.py").write_text(textwrap.dedent(source))
    paths = [folder, ROOT, TESTS]
    run_fresh(ATTACKER, folder, json.dumps(CASES), pythonpath=paths, timeout=300)
    out = run_fresh(VICTIM, folder, *CASES, pythonpath=paths, timeout=300)
    result: dict[str, str] = json.loads(out)
    return result


# -- #3: a Callable declared through a type alias ------------------------------------------------

_ALIASED = ["te-generic", "te-plain"] + (["695-generic", "695-plain"] if PEP695 else [])


@pytest.mark.parametrize("case", _ALIASED)
def test_a_codec_value_in_a_callable_declared_by_a_type_alias_is_refused_in_a_fresh_victim(
    said, case
):
    assert said[case].startswith("refused StaticDataError"), said[case]
    field = CASES[case][1]
    assert f"the static field {field} is declared" in said[case]
    assert "holds a a6fix.Warmup there (a Callable admits functions stored by name" in said[case]
    assert "the artifact was edited, or written for another declaration" in said[case]
    assert "declare the field" not in said[case]  # the victim is never told to let it in


@pytest.mark.parametrize("case", ["honest-te"] + (["honest-695"] if PEP695 else []))
def test_an_honest_model_with_aliased_callables_loads(said, case):
    assert said[case] == "loaded NoneType: called []", said[case]


class Warmup:
    def __call__(self, x: object) -> object:
        return x

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return type(other) is Warmup


pytreekit.register_static_codec(Warmup, lambda _: 1, lambda _: Warmup())
T = typing.TypeVar("T")
P = typing.ParamSpec("P")


class Box(typing.Generic[T]):
    pass


TeFn = te.TypeAliasType("TeFn", Callable[[T], T], type_params=(T,))
TeAct = te.TypeAliasType("TeAct", Callable[[jax.Array], jax.Array])
TeBoxed = te.TypeAliasType("TeBoxed", Box[T], type_params=(T,))
TeOptional = te.TypeAliasType("TeOptional", typing.Optional[TeFn[T]], type_params=(T,))  # noqa: UP045
TeSpec = te.TypeAliasType("TeSpec", Callable[P, int], type_params=(P,))


def _aliases() -> dict[str, typing.Any]:
    """The aliases of both kinds: typing_extensions' everywhere, PEP 695's where Python has them."""
    forms = {
        "te-generic": TeFn[jax.Array],
        "te-bare": TeFn,
        "te-plain": TeAct,
        "te-nested": TeOptional[jax.Array],
        "te-paramspec": TeSpec[[int]],
        "te-annotated": typing.Annotated[TeFn[int], "doc"],
    }
    if PEP695:
        namespace: dict[str, typing.Any] = {}
        exec(  # the syntax cannot be in a module Python 3.11 parses
            textwrap.dedent("""
                from collections.abc import Callable
                import typing
                type Fn[T] = Callable[[T], T]
                type Act = Callable[[int], int]
                type Two[A, B] = Callable[[B], A]
                type Spec[**P] = Callable[P, int]
                type Maybe[T] = Fn[T] | None
            """),
            namespace,
        )
        forms |= {
            "695-generic": namespace["Fn"][jax.Array],
            "695-bare": namespace["Fn"],
            "695-plain": namespace["Act"],
            "695-two": namespace["Two"][int, str],
            "695-paramspec": namespace["Spec"][[int]],
            "695-nested": namespace["Maybe"][int],
        }
    return forms


@pytest.mark.parametrize("name", list(_aliases()))
def test_every_aliased_callable_admits_what_callable_admits(name):
    """Differential: the alias admits exactly what ``Callable`` itself admits (each alias
    declares one argument: a NumPy ufunc of one input, as any function, is admitted; one of two
    is not, its second argument being NumPy's ``out``)."""
    hint = _aliases()[name]
    for value in (jnp.tanh, np.negative, int, functools.partial(jnp.clip, min=0.0), Warmup(), 3):
        assert admits_value(hint, value) is admits_value(Callable, value), (name, value)
    assert admits_value(hint, None) is ("nested" in name)
    assert admits_value(Callable, np.add) and not admits_value(hint, np.add)


def test_an_aliased_callable_field_refuses_a_codec_value_at_write_and_at_load():
    @dataclasses.dataclass(frozen=True)
    class Holder:
        act: TeFn[jax.Array]

    with pytest.raises(UnencodableError, match=r"Holder.act is declared TeFn\[.*a Callable admits"):
        dumps_fields(Holder, (), ("act",), (Warmup(),))
    text = dumps_fields(Holder, (), ("act",), (jnp.tanh,))
    reader = Reader(frozenset())
    tree = parse(text, reader)
    assert decode(tree, reader) == ((jnp.tanh,),)


def test_an_aliased_generic_class_declares_its_origin():
    """``TeBoxed[int]`` (``Box[T]``) declares ``Box``, as ``Box[int]`` does."""
    for hint in (TeBoxed[int], TeBoxed):
        assert Box in static_data._named_classes(hint, 0)
        assert admits_value(hint, Box()) and not admits_value(hint, Warmup())


def test_a_form_that_cannot_be_read_never_admits_a_callable_object():
    unknown = typing.Unpack[typing.TypeVarTuple("Ts")]  # no class, no form admits_value reads
    assert admits_value(unknown, 3) and admits_value(unknown, jnp.tanh)
    assert not admits_value(unknown, Warmup())


@pytest.mark.parametrize("nesting", [0, 5, 12, 30])
def test_a_callable_nested_deeper_than_the_check_unfolds_is_still_refused(nesting):
    # ``type Acts = Callable | tuple[Acts, ...]`` unfolds without end: each level a union and a
    # tuple; past the depth the check unfolds, a callable object was admitted (attack7 #5).
    hint: typing.Any = Callable[[jax.Array], jax.Array]
    for _ in range(40):
        hint = typing.Union[Callable[[jax.Array], jax.Array], tuple[hint, ...]]  # noqa: UP007
    value: typing.Any = Warmup()
    honest: typing.Any = jnp.tanh
    for _ in range(nesting):
        value, honest = (value,), (honest,)
    assert not admits_value(hint, value)
    assert admits_value(hint, honest)


def test_an_alias_whose_value_cannot_be_evaluated_is_read_as_undeclared():
    if not PEP695:
        pytest.skip("lazily evaluated type aliases came in 3.12")
    namespace: dict[str, typing.Any] = {}
    exec("type Later = Undefined", namespace)
    assert static_data._unwrapped(namespace["Later"]) is typing.Any


# -- #7: a callback Protocol declares a Callable -------------------------------------------------


class Activation(typing.Protocol):
    def __call__(self, x: jax.Array, /) -> jax.Array: ...


@typing.runtime_checkable
class Checked(typing.Protocol):
    def __call__(self, x: jax.Array, /) -> jax.Array: ...


class Extended(te.Protocol):
    def __call__(self, x: jax.Array, /) -> jax.Array: ...


class Derived(Activation, typing.Protocol):
    pass


class GenericCallback(typing.Protocol[T]):
    def __call__(self, x: T, /) -> T: ...


class Named(typing.Protocol):
    name: str

    def __call__(self, x: jax.Array, /) -> jax.Array: ...


class Sized(typing.Protocol):
    def __call__(self, x: jax.Array, /) -> jax.Array: ...

    def __len__(self) -> int: ...


class Implementation(Activation):
    def __call__(self, x: jax.Array, /) -> jax.Array:
        return x


CALLBACKS = [Activation, Checked, Extended, Derived, GenericCallback, GenericCallback[int]]


@pytest.mark.parametrize("protocol", CALLBACKS)
def test_a_callback_protocol_admits_what_callable_admits(protocol):
    for value in (jnp.tanh, np.add, int, functools.partial(jnp.clip, min=0.0), Warmup(), 3):
        assert admits_value(protocol, value) is admits_value(Callable, value), (protocol, value)


@pytest.mark.parametrize("protocol", [Activation, Checked, Extended, Derived, GenericCallback])
def test_what_is_a_callback_protocol_agrees_with_typing(protocol):
    """Differential: typing's own reading of a protocol's members (``__protocol_attrs__``)."""
    read = getattr(typing, "_get_protocol_attrs", None)  # private: 3.12+ also caches it
    members = read(protocol) if read is not None else protocol.__protocol_attrs__
    assert set(members) - {"__protocol_attrs__"} == {"__call__"}
    assert static_data._callback_protocol(protocol)


@pytest.mark.parametrize("protocol", [Named, Sized, Implementation, Warmup])
def test_a_protocol_with_more_members_or_a_concrete_class_is_no_callable(protocol):
    assert not static_data._callback_protocol(protocol)
    assert not admits_value(protocol, jnp.tanh)


def test_a_class_derived_from_a_callback_protocol_is_admitted_as_by_its_classes():
    """Declared ``Activation``: an ``Implementation`` the user derived from it (its class named by
    the declaration), as before; ``type[Activation]`` admits that class, not every callable."""
    assert admits_value(Activation, Implementation())
    assert Activation in static_data._named_classes(Activation, 0)
    assert admits_value(type[Activation], Implementation)
    assert not admits_value(type[Activation], Warmup)


def test_a_callback_protocol_field_writes_a_function_and_loads_it(tmp_path):
    @pytreekit.pytree_class
    class M:
        w: jax.Array
        act: Activation = pytreekit.field(static=True, default=jnp.tanh)

    text = dumps_fields(M, (), ("act",), (jnp.tanh,))
    reader = Reader(frozenset())
    assert decode(parse(text, reader), reader) == ((jnp.tanh,),)
    with pytest.raises(UnencodableError, match="a Callable admits only functions") as caught:
        dumps_fields(M, (), ("act",), (Warmup(),))
    assert "register a codec" not in str(caught.value)


def test_a_protocol_with_more_members_says_to_declare_a_callable():
    @dataclasses.dataclass(frozen=True)
    class Holder:
        act: Named

    with pytest.raises(UnencodableError) as caught:
        dumps_fields(Holder, (), ("act",), (jnp.tanh,))
    message = str(caught.value)
    assert "Holder.act is declared Named" in message
    assert "Named is a Protocol with more members than __call__" in message
    assert "Declare the field Callable[..., ...]" in message
    assert "register a codec" not in message and "pickle" not in message


# -- #6: numbers of their kind -------------------------------------------------------------------


@pytest.mark.parametrize("case", ["float-true", "float-int"])
def test_a_bool_or_int_in_a_float_field_is_refused_in_a_fresh_victim(said, case):
    """``True == 1 == 1.0`` with one hash: loaded, it shared the victim's jit traces."""
    assert said[case].startswith("refused StaticDataError"), said[case]
    kind = "bool" if case == "float-true" else "int"
    assert (
        f"the static field scale is declared float, and the artifact holds a {kind}" in (said[case])
    )
    assert "neither a treedef nor jit's cache tells them apart" in said[case]
    assert "write 1.0" not in said[case] and "| bool" not in said[case]


def test_an_honest_float_field_loads(said):
    assert said["honest-scale"] == "loaded float: called []", said["honest-scale"]


NUMBERS = [True, False, 0, 1, -3, 1.0, -0.0, 2.5, np.float64(1.0), 1j, complex(1, 0)]
NUMERIC_HINTS: list[typing.Any] = [
    bool,
    int,
    float,
    complex,
    numbers.Number,
    numbers.Complex,
    numbers.Real,
    numbers.Rational,
    numbers.Integral,
    object,
    collections.abc.Hashable,
]


@pytest.mark.parametrize("hint", NUMERIC_HINTS)
def test_numbers_are_admitted_as_isinstance_says_but_bools_and_the_tower(hint):
    """Differential against ``isinstance``, without PEP 484's tower (an int where a float or
    complex is declared, a float where a complex is) and without a bool where a number is."""
    number = hint in (int, float, complex) or hint.__module__ == "numbers"
    for value in NUMBERS:
        expected = isinstance(value, hint)
        if number and type(value) is bool:
            expected = False
        assert admits_value(hint, value) is expected, (hint, value)
    assert not admits_value(float, 1) and not admits_value(complex, 1.0)
    assert not admits_value(complex, 1) and not admits_value(float, True)


def test_a_union_or_any_containing_bool_admits_a_bool():
    for hint in (float | bool, typing.Union[int, bool], typing.Any, typing.Optional[bool]):  # noqa: UP007, UP045
        assert admits_value(hint, True), hint
    for hint in (float | int, typing.Optional[float], tuple[float, ...]):  # noqa: UP045
        assert not admits_value(hint, True if "tuple" not in str(hint) else (True,)), hint


@pytest.mark.parametrize(
    ("hint", "value", "advice"),
    [
        (float, True, "write 1.0 for a field declared float)"),
        (float, 2, "write 2.0 for a field declared float"),
        (complex, 2.5, "write complex(2.5) for a field declared complex"),
        (int, False, "write 0 for a field declared int)"),
    ],
)
def test_the_writer_refuses_a_number_of_another_kind_naming_the_class_and_field(
    hint, value, advice
):
    Holder = dataclasses.make_dataclass("Holder", [("scale", hint)], frozen=True)
    with pytest.raises(UnencodableError) as caught:
        dumps_fields(Holder, (), ("scale",), (value,))
    message = str(caught.value)
    assert f"Holder.scale is declared {hint.__name__}" in message and advice in message
    assert "register a codec" not in message
    assert "Store a value of the kind the field declares." in message
    # Never a wider declaration (float | bool would let True pass for 1.0), nor a false reason.
    assert "| bool" not in message and "tells them apart:" not in message
    assert "neither a treedef nor jit's cache tells them apart" in message


def test_the_loader_refuses_what_the_writer_refuses():
    Holder = dataclasses.make_dataclass("Holder", [("scale", float)], frozen=True)
    honest = dumps_fields(Holder, (), ("scale",), (1.0,))
    for edited, kind in ((b"true", "bool"), (b"1", "int")):
        text = honest.replace(b"1.0", edited)
        assert text != honest
        reader = Reader(frozenset())
        tree = parse(text, reader)
        assert decode(tree, reader) == ((json.loads(edited),),)  # no class: read as written
        data = MAGIC + b'["dc","test_artifacts_attack6_types:_Scale",{"scale":' + edited + b"}]"
        with pytest.raises(
            StaticDataError, match=rf"_Scale.scale is declared float.*a {kind}"
        ) as e:
            loads(data, declared=_Scale)
        # Loading gives the reason and no advice to declare or write anything.
        assert "tells them apart" in str(e.value) and "declare" not in str(e.value).split("(")[-1]
        assert "write " not in str(e.value)
    honest_data = MAGIC + b'["dc","test_artifacts_attack6_types:_Scale",{"scale":2.0}]'
    assert loads(honest_data, declared=_Scale) == _Scale(2.0)


@dataclasses.dataclass(frozen=True)
class _Scale:
    scale: float


def test_a_float_subclass_of_numpy_stays_a_float():
    assert admits_value(float, np.float64(2.0)) and admits_value(complex, np.complex128(1j))
    assert not admits_value(float, np.float32(2.0))  # no float subclass: as isinstance says


def test_equal_static_values_of_one_kind_share_a_treedef_as_documented():
    """What jax-export.md says: treedefs compare static values with ``==``."""

    @pytreekit.pytree_class
    class S:
        x: jax.Array
        scale: float = pytreekit.field(static=True)

    one, other = S(jnp.ones(1), 0.0), S(jnp.ones(1), -0.0)
    assert jax.tree.structure(one) == jax.tree.structure(other)


# -- smaller notes: dtypes, a dataclass's own __hash__ -------------------------------------------


@pytest.mark.parametrize("spec", ["|V999999999", "|V65", "<U17", "|S100", "|O"])
def test_a_dtype_of_big_or_object_items_is_refused_at_load_and_write(spec):
    with pytest.raises(StaticDataError, match="is not a dtype this version writes"):
        loads(MAGIC + json.dumps(["dt", spec]).encode())
    with pytest.raises(UnencodableError, match="of items up to 64 bytes and not of Python"):
        dumps(np.dtype(spec))


@pytest.mark.parametrize(
    "dtype", [np.float32, np.complex128, np.clongdouble, np.int8, "<U16", "|S64", "<M8[ns]"]
)
def test_numeric_and_short_dtypes_still_round_trip(dtype):
    assert loads(dumps(np.dtype(dtype))) == np.dtype(dtype)


@dataclasses.dataclass(frozen=True)
class OwnHash:
    key: int
    notes: typing.Any = dataclasses.field(compare=False)

    def __hash__(self) -> int:
        return hash((self.key, self.notes))


@dataclasses.dataclass(frozen=True)
class GeneratedHash:
    key: int
    notes: typing.Any = dataclasses.field(compare=False)


def test_a_dataclass_with_its_own_hash_needs_every_stored_value_hashable():
    """Its ``__hash__`` may hash a ``field(compare=False)``: a list there raised at first use."""
    edited = MAGIC + b'["dc","test_artifacts_attack6_types:OwnHash",{"key":1,"notes":["l",1]}]'
    loaded = loads(edited, declared=OwnHash)
    assert not static_data.hashable(loaded)
    with pytest.raises(
        StaticDataError, match=r"the static field notes holds a .*OwnHash, which is not hashable"
    ):
        export_module._check_value("notes", loaded, None)  # what loading an aux asks
    with pytest.raises(TypeError):
        hash(loaded)  # what the check spares the victim
    generated = loads(edited.replace(b"OwnHash", b"GeneratedHash"), declared=GeneratedHash)
    assert static_data.hashable(generated)
    assert hash(generated) == hash(GeneratedHash(1, None))
    honest = edited.replace(b'["l",1]', b'["t",1]')
    assert static_data.hashable(loads(honest, declared=OwnHash))
