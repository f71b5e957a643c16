"""What users tripped over when porting real programs: each is refused clearly, or works."""

import collections
import pickle
import sys
import types
import warnings

import jax
import jax.numpy as jnp
import pytest
from catalogue import unpickled_elsewhere
from conftest import require

import pytreekit
from pytreekit import field, pytree_class

# -- a bound method stored at construction ------------------------------------------------------


@pytest.mark.parametrize("annotated", [True, False])
def test_a_method_bound_to_the_instance_being_built_is_refused(annotated):
    if annotated:

        @pytree_class
        class Scaled:
            w: jax.Array
            act: object = None

            def __post_init__(self):
                self.act = self.relu_scaled

            def relu_scaled(self, x):
                return jax.nn.relu(x) * self.w

    else:

        @pytree_class(static=("act",))
        class Scaled:
            def __init__(self, w):
                self.w = w
                self.act = self.relu_scaled

            def relu_scaled(self, x):
                return jax.nn.relu(x) * self.w

    with pytest.raises(TypeError, match=r"Scaled.*act.*relu_scaled") as info:
        Scaled(jnp.ones(2))
    assert "bound" in str(info.value)


def test_a_method_bound_to_another_object_is_an_ordinary_static_value():
    @pytree_class(static=("act",))
    class Holder:
        def __init__(self, w, act):
            self.w = w
            self.act = act

    other = types.SimpleNamespace(scale=2.0)
    bound = types.MethodType(lambda self, x: x * self.scale, other)
    holder = Holder(jnp.ones(2), bound)
    assert jax.tree.map(lambda a: a + 1, holder).act(3.0) == 6.0


# -- __post_init__ that no __init__ calls -------------------------------------------------------


def test_post_init_unreached_from_an_own_init_is_warned_about():
    with pytest.warns(UserWarning, match=r"Own.*__post_init__"):

        @pytree_class
        class Own:
            w: jax.Array

            def __init__(self, w):
                self.w = w

            def __post_init__(self):
                raise AssertionError("never runs")

    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @pytree_class
        class Calls:
            w: jax.Array

            def __init__(self, w):
                self.w = w
                self.__post_init__()

            def __post_init__(self):
                self.w = self.w * 2

    assert Calls(jnp.ones(1)).w.tolist() == [2.0]


# -- a static name bound to a property ----------------------------------------------------------


def test_a_static_name_bound_to_a_property_is_refused_at_decoration():
    with pytest.raises(TypeError, match=r"Computed\.n .*static field.*property"):

        @pytree_class(static=("n",))
        class Computed:
            def __init__(self, w):
                self.w = w

            @property
            def n(self):
                return 4


def test_a_field_rebound_to_a_property_in_a_subclass_is_refused():
    @pytree_class
    class Base:
        w: jax.Array
        n: int = field(static=True, default=3)

    with pytest.raises(TypeError, match=r"Sub\.n .*static field.*Sub binds 'n' to a property"):

        @pytree_class
        class Sub(Base):
            @property
            def n(self):
                return 5


# -- names Python reserves -----------------------------------------------------------------------


def test_an_attribute_named_after_a_keyword_is_refused_with_the_name():
    @pytree_class
    class Loose:
        def __init__(self, w):
            self.w = w
            setattr(self, "class", 1)

    with pytest.raises(TypeError, match=r"Loose.*'class'"):
        jax.tree_util.tree_leaves(Loose(jnp.ones(1)))


# -- misuse gets errors that name the argument --------------------------------------------------


@pytest.mark.parametrize(
    ("keyword", "value"), [("static", None), ("static", 1), ("backends", None), ("frozen", "yes")]
)
def test_wrong_decorator_arguments_name_the_argument(keyword, value):
    class Model:
        pass

    with pytest.raises(TypeError, match=rf"pytree_class\({keyword}=\.\.\.\)"):
        pytree_class(Model, **{keyword: value})


def test_replace_on_a_class_says_it_needs_an_instance():
    @pytree_class
    class Model:
        w: float = 1.0

    with pytest.raises(TypeError, match=r"replace.*Model.*instance"):
        pytreekit.replace(Model, w=2.0)


# -- __setstate__ and metadata ------------------------------------------------------------------


@pytest.mark.parametrize("frozen", [False, True])
def test_every_class_has_setstate_like_getstate(frozen):
    @pytree_class(frozen=frozen)
    class Model:
        w: jax.Array
        n: int = field(static=True, default=1)

    source = Model(jnp.ones(2), 3)
    blank = Model.__new__(Model)
    blank.__setstate__(source.__getstate__())
    assert blank == source and blank.n == 3


def test_metadata_that_is_mapping_like_is_accepted_as_dataclasses_accepts_it():
    class Mappingish:
        def __init__(self, **items):
            self._items = items

        def keys(self):
            return self._items.keys()

        def __getitem__(self, key):
            return self._items[key]

        def __iter__(self):
            return iter(self._items)

        def __len__(self):
            return len(self._items)

    @pytree_class
    class Model:
        w: jax.Array = field(metadata=Mappingish(unit="m"))

    assert pytreekit.fields(Model)[0].metadata["unit"] == "m"
    chained = collections.ChainMap({"unit": "m"})
    assert pytreekit.field(metadata=chained).metadata["unit"] == "m"


def test_frozen_setattr_and_delattr_carry_the_class_name():
    @pytree_class(frozen=True)
    class Model:
        w: float = 1.0

    assert Model.__setattr__.__qualname__ == f"{Model.__qualname__}.__setattr__"
    assert Model.__delattr__.__qualname__ == f"{Model.__qualname__}.__delattr__"


# -- JAX functions in static fields travel by name ----------------------------------------------


@pytree_class
class Dense:
    w: jax.Array
    activation: object = field(static=True, default=jnp.tanh)

    def __call__(self, x):
        return self.activation(x @ self.w)


@pytest.mark.parametrize("activation", [jnp.tanh, jax.nn.relu, jax.nn.gelu])
def test_a_model_holding_a_jax_function_pickles_to_a_fresh_process(tmp_path, activation):
    model = Dense(jnp.ones((2, 2)), activation)
    printed = unpickled_elsewhere(
        model, "obj(jnp.ones(2)).tolist(), obj.activation.__name__", tmp_path
    )
    values, name = eval(printed)
    assert values == pytest.approx(model(jnp.ones(2)).tolist())
    assert name == activation.__name__
    again = pickle.loads(pickle.dumps(model))
    assert again.activation is activation


def test_a_callable_found_only_through_its_packages_public_module_pickles_inside_a_tuple(
    monkeypatch,
):
    # As jax.nn.relu on some JAX versions: a callable object (a custom_jvp) that pickle cannot
    # store by value, whose __module__ (a private one) holds another object under its name; the
    # package's public module exports it.
    class Rule:  # a local class: pickle cannot store its instances by value
        def __call__(self, x):
            return x

    activation = Rule()
    activation.__module__, activation.__qualname__ = "travelling._impl", "activation"
    package, private = types.ModuleType("travelling"), types.ModuleType("travelling._impl")
    private.activation, package.activation = Rule(), activation
    monkeypatch.setitem(sys.modules, package.__name__, package)
    monkeypatch.setitem(sys.modules, private.__name__, private)

    with pytest.raises((pickle.PicklingError, AttributeError), match="local"):
        pickle.dumps(activation)
    model = Dense(jnp.ones((2, 2)), (activation, jnp.tanh))  # a static tuple of callables
    assert pickle.loads(pickle.dumps(model)).activation == (activation, jnp.tanh)


def test_a_lambda_in_a_static_field_is_refused_by_pickle_with_the_lambda_named():
    model = Dense(jnp.ones((2, 2)), lambda x: x)
    with pytest.raises((pickle.PicklingError, AttributeError), match=r"lambda"):
        pickle.dumps(model)


def test_export_of_a_model_holding_jnp_tanh_round_trips():
    from jax import export

    model = Dense(jnp.ones((2, 2)))
    exported = export.export(jax.jit(lambda m, x: jax.tree.map(lambda a: a * 2, m)))(
        model, jnp.ones(2)
    )
    restored = export.deserialize(exported.serialize())
    out = restored.call(model, jnp.ones(2))
    assert out.activation is jnp.tanh and out.w.tolist() == [[2.0, 2.0], [2.0, 2.0]]


@pytree_class
class ByHand:
    w: jax.Array
    tag: str = field(static=True, default="t")


def test_a_serialization_registered_by_hand_stands():
    from jax import export

    calls = []

    def serialize(aux):
        calls.append("out")
        return pickle.dumps(aux)

    def deserialize(data):
        calls.append("in")
        return pickle.loads(data)

    export.register_pytree_node_serialization(
        ByHand,
        serialized_name=f"{__name__}.ByHand.by_hand",
        serialize_auxdata=serialize,
        deserialize_auxdata=deserialize,
    )
    exported = export.export(jax.jit(lambda m: m))(ByHand(jnp.ones(1)))
    restored = export.deserialize(exported.serialize())
    assert restored.call(ByHand(jnp.ones(1))).tag == "t"
    assert calls == ["out", "out", "in"] or ("out" in calls and "in" in calls)


# -- converters: the run-time annotations say what __init__ accepts -----------------------------


def _to_float(value: int) -> float:
    return float(value)


def test_a_converter_fields_parameter_is_annotated_with_what_the_converter_takes():
    beartype = pytest.importorskip("beartype").beartype

    @beartype
    @pytree_class
    class Model:
        w: jax.Array = field(converter=jnp.asarray)
        n: float = field(converter=_to_float, default=1)
        plain: float = 0.5

    annotations = Model.__init__.__annotations__
    assert annotations["n"] is int and annotations["plain"] is float
    model = Model([1.0, 2.0], 3)  # a list for the array, an int for the float
    assert model.w.tolist() == [1.0, 2.0] and model.n == 3.0
    with pytest.raises(Exception, match=r"Model\.__init__\(\) parameter n"):
        Model([1.0], "three")


# -- torch.export and torch.compile of classes without annotations -----------------------------


def _torch():
    return require("torch")  # skips, or fails where PYTREEKIT_REQUIRE_BACKENDS names it


try:
    import torch as _torch_installed  # noqa: F401
except ImportError:  # the tests below skip, saying so
    pass
else:

    @pytree_class(backends=("torch",), static=("scale",))
    class TorchPair:  # module level: torch.export.load finds it by name
        def __init__(self, a, b, scale=2):
            self.a = a
            self.b = b
            self.scale = scale


def test_torch_export_load_needs_only_the_class_in_safe_globals():
    torch = _torch()
    import io

    class Double(torch.nn.Module):
        def forward(self, pair):
            return TorchPair(pair.a * pair.scale, pair.b + 1, pair.scale)

    exported = torch.export.export(Double(), (TorchPair(torch.ones(2), torch.zeros(2)),))
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    buffer.seek(0)
    with torch.serialization.safe_globals([TorchPair]):
        loaded = torch.export.load(buffer)
    out = loaded.module()(TorchPair(torch.ones(2), torch.zeros(2)))
    assert out.a.tolist() == [2.0, 2.0] and out.b.tolist() == [1.0, 1.0] and out.scale == 2


def test_torch_compile_fullgraph_builds_instances_of_a_class_without_annotations():
    torch = _torch()

    def build(x):
        pair = TorchPair(x, x + 1)
        return pair.a * pair.scale + pair.b

    # The class learns its layout from its first instance, under a lock dynamo cannot trace:
    # that one is built outside the compiled function (as a model usually is), later ones inside.
    TorchPair(torch.zeros(2), torch.zeros(2))
    # fullgraph: dynamo must trace __init__ without a graph break. The eager backend runs the
    # traced graph as is: what is tested is the tracing, not inductor's code generation.
    compiled = torch.compile(build, fullgraph=True, backend="eager")
    assert compiled(torch.ones(2)).tolist() == build(torch.ones(2)).tolist() == [4.0, 4.0]


# -- forward mode on reverse-only rules ----------------------------------------------------------


def test_forward_mode_of_a_custom_vjp_method_fails_as_jax_custom_vjp_does():
    @pytree_class
    class Doubler:
        @pytreekit.custom_vjp_method
        def __call__(self, x):
            return 2 * x

        def forward(self, x):
            return 2 * x, None

        def backward(residuals, g):
            return None, 2 * g

        __call__.defvjp(forward, backward)

    reference = jax.custom_vjp(lambda x: 2 * x)
    reference.defvjp(lambda x: (2 * x, None), lambda r, g: (2 * g,))
    for function in (lambda x: Doubler()(x), reference):
        with pytest.raises(TypeError, match="forward-mode"):
            jax.jvp(function, (1.0,), (1.0,))
    assert jax.grad(lambda x: Doubler()(x))(1.0) == jax.grad(reference)(1.0) == 2.0
