"""Generated code: visible to tracebacks and debuggers, and no field name can shadow its names."""

import linecache
import traceback

import jax
import jax.numpy as jnp
import pytest

from pytreekit import field, pytree_class


def _fail(value):
    raise ValueError(f"bad {value!r}")


def test_a_traceback_through_a_generated_init_shows_its_source():
    @pytree_class
    class Converted:
        w: jax.Array = field(converter=_fail)

    with pytest.raises(ValueError) as info:
        Converted(1)
    frames = traceback.extract_tb(info.tb)
    generated = [f for f in frames if f.filename.startswith("<pytreekit generated")]
    assert generated, [f.filename for f in frames]
    frame = generated[0]
    assert "Converted.__init__" in frame.filename
    assert frame.line and "w" in frame.line  # the source line comes from linecache
    assert linecache.getline(frame.filename, frame.lineno).strip() == frame.line


# Names a field could take that generated code also needs: builtins, the helpers' own spellings.
SHADOWING = [
    "self",
    "obj",
    "aux",
    "children",
    "hash",
    "object",
    "len",
    "type",
    "_P",
    "_new",
    "_cls",
]


@pytest.mark.parametrize("name", SHADOWING)
def test_no_field_name_shadows_a_name_the_generated_code_uses(name):
    Model = pytree_class(
        type("Model", (), {"__annotations__": {"w": jax.Array, name: float}, name: 1.0})
    )
    model = Model(jnp.ones(2), 3.0)
    doubled = jax.tree.map(lambda a: a * 2, model)
    assert getattr(doubled, name) == 6.0 and doubled.w.tolist() == [2.0, 2.0]
    assert repr(model).startswith("Model(")


@pytest.mark.parametrize("name", SHADOWING)
def test_no_attribute_name_shadows_a_name_the_generated_code_uses(name):
    @pytree_class
    class Loose:
        def __init__(self, w, value):
            self.w = w
            setattr(self, name, value)

    model = Loose(jnp.ones(2), 3.0)
    doubled = jax.tree.map(lambda a: a * 2, model)
    assert getattr(doubled, name) == 6.0 and doubled.w.tolist() == [2.0, 2.0]


def test_the_init_wrapper_takes_the_users_parameters_and_keeps_their_attributes():
    def init(self, w, size=2, *, scale=1.0):
        self.w = w * scale
        self.size = size

    init.marker = "kept"  # what a decorator on __init__ may have set
    Model = pytree_class(type("Model", (), {"__init__": init}), static=("size",))
    code = Model.__init__.__code__
    # Written out, not *args/**kwargs: a call costs one plain call more, no packing.
    assert code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount] == ("w", "size", "scale")
    assert Model.__init__.marker == "kept" and Model.__init__.__wrapped__ is init
    assert Model(jnp.ones(1), scale=3.0).w.tolist() == [3.0]


def test_an_init_inherited_from_a_builtin_type_is_wrapped_and_still_runs():
    # Exception.__init__ is a slot wrapper: it has no __dict__, no signature to write out.
    @pytree_class
    class Failure(Exception):
        pass

    assert Failure.__init__.__wrapped__ is Exception.__init__
    assert Failure("disk full", 28).args == ("disk full", 28)
