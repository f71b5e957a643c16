"""The fifth probe's findings: a class's own ``__getattribute__`` (fields read as stored), a
class value named like a field rebound after first use, names that are not NFKC-normal (declared,
in old pickles, in messages). Differential against a twin registered by hand that flattens
``vars(self)``, and against the undecorated class's copy and pickle."""

import copy
import copyreg
import dataclasses
import functools
import pickle

import jax
import pytest
from conftest import run_fresh

from pytreekit import FrozenInstanceError, fields, pytree_class, replace
from pytreekit import _markers as markers
from pytreekit._classes import layout_for

tu = jax.tree_util


class Scaled:
    """Stores raw values; reading ``a`` (or ``s``) gives it doubled."""

    def __init__(self, a):
        self.a = a

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return value * 2 if name in ("a", "s") else value


@pytree_class
class PScaled(Scaled):
    pass


@pytree_class(static=("s",))
class PScaledStatic(Scaled):
    def __init__(self, a, s):
        self.a = a
        self.s = s


@pytree_class
class PSlotScaled:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return value * 2 if name == "a" else value


class Twin(Scaled):
    pass


tu.register_pytree_node(
    Twin,
    lambda o: (list(vars(o).values()), tuple(vars(o))),
    lambda names, children: _rebuild(Twin, names, children),
)


def _rebuild(cls, names, children):
    obj = object.__new__(cls)
    obj.__dict__.update(zip(names, children, strict=True))
    return obj


def _stored(obj, name="a"):
    return float(object.__getattribute__(obj, name))


OPS = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda o: pickle.loads(pickle.dumps(o)),
    "replace": lambda o: copy.copy(o) if isinstance(o, (Twin, Scaled)) else replace(o),
    "tree_map": lambda o: tu.tree_map(lambda x: x, o),
    "jit": lambda o: jax.jit(lambda x: x)(o),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("cls", [PScaled, PSlotScaled])
def test_a_transforming_getattribute_keeps_the_stored_value(op, cls):
    ref = OPS[op](Twin(1.0))
    got = OPS[op](cls(1.0))
    again = OPS[op](OPS[op](cls(1.0)))  # twice: a read through __getattribute__ would compound
    assert _stored(got) == _stored(again) == _stored(ref) == 1.0
    assert float(got.a) == 2.0  # the class's own reads still transform


@pytest.mark.parametrize("op", ["copy", "deepcopy", "pickle"])
def test_copy_and_pickle_match_the_undecorated_class(op):
    assert _stored(OPS[op](PScaled(3.0))) == _stored(OPS[op](Scaled(3.0))) == 3.0


def test_leaves_are_the_stored_values_as_the_twin_flattens():
    assert tu.tree_leaves(PScaled(1.5)) == tu.tree_leaves(Twin(1.5)) == [1.5]
    paths = [p for p, _ in tu.tree_flatten_with_path(PScaled(1.5))[0]]
    assert [v for _, v in tu.tree_flatten_with_path(PScaled(1.5))[0]] == [1.5]
    assert len(paths) == 1


def test_a_static_field_read_as_stored():
    obj = PScaledStatic(1.0, 5)
    leaves, treedef = tu.tree_flatten(obj)
    assert leaves == [1.0]
    new = tu.tree_unflatten(treedef, leaves)
    assert _stored(new, "s") == 5 and _stored(new, "a") == 1.0


def test_a_plain_class_reads_its_fields_by_attribute():
    """The generated code of a class without its own __getattribute__ is unchanged (no raw
    reads: ``obj.a`` is the fastest read there is)."""

    @pytree_class
    class Plain:
        def __init__(self, a):
            self.a = a

    tu.tree_leaves(Plain(1.0))
    tu.tree_leaves(PScaled(1.0))
    assert "_raw" not in _flatten_code(Plain).co_names
    assert "a" in _flatten_code(Plain).co_names
    assert "_raw" in _flatten_code(PScaled).co_names


def _flatten_code(cls):
    return getattr(cls, markers.SPEC).nodes.flatten.__code__


def _used_class():
    @pytree_class
    class E:
        b = 7.0

        def __init__(self, a, b):
            self.a = a
            self.b = b

    tu.tree_leaves(E(1.0, 2.0))  # first use: b is a plain class value
    return E


REBINDINGS = {
    "method": lambda self: "method",
    "property": property(lambda self: 99.0),
    "staticmethod": staticmethod(lambda: "static"),
    "value": 8.0,
    "none": None,
}


@pytest.mark.parametrize("kind", sorted(REBINDINGS))
def test_a_class_value_rebound_after_first_use(kind):
    cls = _used_class()
    held, deleted, bare = cls(1.0, 2.0), cls(1.0, 3.0), object.__new__(cls)
    del deleted.b
    bare.a = 1.0
    cls.b = REBINDINGS[kind]
    # (A property bound over a value an instance holds answers its reads: not compared.)
    for obj in (deleted, bare) if kind == "property" else (held, deleted, bare):
        assert tu.tree_leaves(obj) == list(_holds(obj).values())
        assert _holds(tu.tree_map(lambda x: x, obj)) == _holds(obj)
        assert _holds(copy.copy(obj)) == _holds(obj)
        assert _holds(replace(obj)) == _holds(obj)


def _holds(obj):
    """What the twin flattens: the instance's attributes, pytreekit's marker aside."""
    return {k: v for k, v in vars(obj).items() if k != markers.LAYOUT}


def test_a_declared_field_name_that_is_not_nfkc_normal_is_refused_at_decoration():
    cls = type("T", (), {"__annotations__": {"w": float, "\u00b5": float}})
    before = dict(vars(cls))
    with pytest.raises(TypeError) as caught:
        pytree_class(cls)
    message = str(caught.value)
    assert message.startswith("T: attribute '\\xb5' is not in the form Python gives identifiers")
    assert "(NFKC: '\\u03bc')" in message
    assert dict(vars(cls)).keys() == before.keys()  # a failed decoration changes nothing
    assert not hasattr(cls, markers.SPEC)
    # The NFKC spelling itself is a field like any other.
    good = pytree_class(type("G", (), {"__annotations__": {"w": float, "\u03bc": float}}))
    assert tu.tree_leaves(good(1.0, 2.0)) == [1.0, 2.0]


@pytree_class
class Own:
    def __init__(self, values):
        for name, value in values.items():
            setattr(self, name, value)


class _Reduced:
    """Pickles as ``reduced``: what a pickle written before the field rule refused a name that
    is not NFKC-normal holds."""

    def __init__(self, reduced):
        self.reduced = reduced

    def __reduce__(self):
        return self.reduced


def test_an_old_pickle_holding_a_name_that_is_not_nfkc_normal_loads_under_its_nfkc_name():
    micro = "\u00b5"
    state = {"w": 1.0, micro: 2.0, markers.FIELDS: (("w", micro), (False, False))}
    held = _Reduced((copyreg._reconstructor, (Own, object, None), state))
    layout = _Reduced((layout_for, (Own, ("w", micro), (False, False))))
    # Where the state holds the NFKC name too, the other keeps its spelling and is refused.
    both = {"\u03bc": 3.0, micro: 2.0}
    clash = _Reduced((copyreg._reconstructor, (Own, object, None), both))
    data = pickle.dumps((held, layout)).hex(), pickle.dumps(clash).hex()
    out = run_fresh(
        """
        import pickle, sys
        import jax
        obj, layout = pickle.loads(bytes.fromhex(sys.argv[1]))
        print(sorted(vars(obj)), jax.tree_util.tree_leaves(obj))
        print(layout.names, type(obj).__pytreekit_spec__.nodes.layout_of(obj) is layout)
        new = jax.tree_util.tree_map(lambda x: x + 1, obj)
        print(sorted((k, v) for k, v in vars(new).items() if not k.startswith("__")))
        clash = pickle.loads(bytes.fromhex(sys.argv[2]))
        try:
            jax.tree_util.tree_leaves(clash)
        except TypeError as error:
            print(str(error).split(",")[0])
        """,
        *data,
    )
    assert out.splitlines() == [
        "['w', '\u03bc'] [1.0, 2.0]",
        "('w', '\u03bc') True",
        "[('w', 2.0), ('\u03bc', 3.0)]",
        "Own: attribute '\\xb5' is not in the form Python gives identifiers (NFKC: '\\u03bc')",
    ]


MICRO, MU = "\u00b5", "\u03bc"


@pytree_class
class WithMu:
    w: float
    μ: float = 0.0  # Greek mu, the NFKC form


def test_replace_of_a_name_whose_nfkc_form_is_a_field_says_so_with_both_spellings():
    with pytest.raises(TypeError) as caught:
        replace(WithMu(1.0), **{MICRO: 5.0})
    assert str(caught.value) == (
        "replace(): WithMu has no field '\\xb5'; its fields are ('w', '\\u03bc'). '\\u03bc' "
        "is, the NFKC form Python gives the identifier '\\xb5' in source (`obj.\u03bc`): pass "
        "replace(obj, **{'\\u03bc': ...})."
    )
    with pytest.raises(TypeError, match=r"^replace\(\): WithMu has no field 'x'; its fields are "):
        replace(WithMu(1.0), x=5.0)
    assert replace(WithMu(1.0), **{MU: 5.0}).μ == 5.0


@pytree_class
@dataclasses.dataclass
class SetsMicro:
    w: float

    def __post_init__(self):
        setattr(self, MICRO, 3.0)


def test_a_post_init_setting_a_name_that_is_not_nfkc_normal_gets_the_nfkc_message():
    with pytest.raises(TypeError) as caught:
        SetsMicro(1.0)
    message = str(caught.value)
    assert message.startswith("SetsMicro: attribute '\\xb5' is not in the form Python gives")
    assert "(NFKC: '\\u03bc')" in message and "Declare" not in message


@pytree_class(frozen=True)
class FrozenOwn:
    b = None

    def __init__(self, w, b=None):
        self.w = w
        if b is not None:
            self.b = b

    @functools.cached_property
    def cached(self):
        return 3

    @property
    def shown(self):
        return 1


@pytree_class(frozen=True)
class FrozenAnn:
    w: float


def _frozen_error(action):
    with pytest.raises(FrozenInstanceError) as caught:
        action()
    return str(caught.value)


def test_frozen_delete_of_a_non_field_says_it_is_no_field():
    obj = FrozenOwn(1.0)
    message = _frozen_error(lambda: delattr(obj, "cache"))
    assert message.startswith("cannot delete 'cache' of frozen FrozenOwn instance: it is no field")
    held = _frozen_error(lambda: delattr(obj, "w"))
    assert held == "cannot delete field 'w' of frozen FrozenOwn instance."
    assert vars(obj) == {"w": 1.0}


@pytest.mark.parametrize(("name", "kind"), [("cached", "cached_property"), ("shown", "property")])
def test_frozen_assignment_through_a_property_says_what_the_class_binds(name, kind):
    message = _frozen_error(lambda: setattr(FrozenOwn(1.0), name, 2))
    assert f"the class binds it to a {kind}, which is not a field" in message
    assert "compute it with" not in message


def test_frozen_assignment_to_a_field_of_other_instances_says_this_instance_has_none():
    assert [f.name for f in fields(FrozenOwn(1.0, 2.0))] == ["w", "b"]
    message = _frozen_error(lambda: setattr(FrozenOwn(1.0), "b", 2.0))
    assert "it is not a field of this instance (the fields of a class without annotations" in (
        message
    )
    assert "Declare" not in message and "Set 'b' in __init__" in message
    annotated = _frozen_error(lambda: setattr(FrozenAnn(1.0), "z", 2.0))
    assert "Declare 'z' as a field" in annotated
