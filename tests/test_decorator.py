"""@pytree_class on the seed classes: the whole JAX workflow, and no __init__ after construction."""

import copy
import dataclasses
import inspect
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.tree_util import GetAttrKey
from quickstart import Activation, Linear, Model, compute_loss, sgd_step

import pytreekit
from pytreekit import field, pytree_class


def tanh(x):
    return jnp.tanh(x)


@pytest.fixture
def model():
    return Model(jax.random.PRNGKey(0), in_features=3, out_features=2)


@pytest.fixture
def picklable_model(model):
    """jnp.tanh itself cannot be pickled (a JAX limitation), a module-level function can."""
    return pytreekit.replace(model, activation=Activation(tanh))


@pytest.fixture
def batch():
    data = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
    true_weights = jnp.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.0]])
    return data, jnp.tanh(data @ true_weights.T)


@pytest.fixture
def init_calls(monkeypatch):
    """Counts calls of the seed classes' own __init__ from now on."""
    calls = {"Linear": 0, "Activation": 0, "Model": 0}
    for cls in (Linear, Activation, Model):
        original = cls.__init__

        def counting(self, *args, __original=original, __name=cls.__name__, **kwargs):
            calls[__name] += 1
            __original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    return calls


def test_returns_the_same_class_registered_with_key_paths(model):
    assert pytreekit.is_pytree_class(Linear) and pytreekit.is_pytree_class(model)
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(model)[0]]
    assert paths == [
        (GetAttrKey("linear"), GetAttrKey("weights")),
        (GetAttrKey("linear"), GetAttrKey("biases")),
    ]


def test_static_fields_are_in_the_treedef_not_the_leaves(model):
    leaves, treedef = jax.tree_util.tree_flatten(model.linear)
    assert len(leaves) == 2
    assert ", 3, 2)" in str(treedef)  # aux: (layout, *static values)


def test_gradient_matches_hand_derivation(model, batch):
    data, target = batch
    grads = jax.grad(compute_loss)(model, data, target)

    w, b = model.linear.weights, model.linear.biases
    y = np.tanh(np.asarray(data) @ np.asarray(w).T + np.asarray(b))
    dy = 2 * (y - np.asarray(target)) / y.size
    dz = dy * (1 - y**2)
    np.testing.assert_allclose(grads.linear.weights, dz.T @ np.asarray(data), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads.linear.biases, dz.sum(axis=0), rtol=1e-5, atol=1e-6)
    assert type(grads) is Model and grads.linear.in_features == 3


def test_jitted_sgd_drives_the_loss_down(model, batch):
    # The reference: the same SGD on the same arrays held in a dict, in this run (how far 500 steps
    # get depends on this JAX's random draws, so no fixed threshold).
    data, target = batch
    params = {"w": model.linear.weights, "b": model.linear.biases}

    def dict_loss(params):
        return jnp.mean((jnp.tanh(data @ params["w"].T + params["b"]) - target) ** 2)

    @jax.jit
    def dict_step(params):
        loss, grads = jax.value_and_grad(dict_loss)(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

    first = compute_loss(model, data, target)
    np.testing.assert_allclose(first, dict_loss(params), rtol=1e-6)
    for _ in range(500):
        model, loss = sgd_step(model, data, target)
        params, dict_loss_value = dict_step(params)
    np.testing.assert_allclose(loss, dict_loss_value, rtol=1e-4, atol=1e-7)
    assert loss < first


def test_no_init_calls_after_construction(picklable_model, batch, init_calls):
    model = picklable_model
    data, target = batch
    jax.grad(compute_loss)(model, data, target)
    sgd_step(model, data, target)
    jax.jit(lambda m: m)(model)
    jax.vmap(lambda m, x: m(x), in_axes=(None, 0))(model, data)
    jax.lax.scan(lambda m, x: (m, m(x)), model, data)
    leaves, treedef = jax.tree_util.tree_flatten(model)
    jax.tree_util.tree_unflatten(treedef, leaves)
    jax.tree_util.tree_map(lambda x: x * 2, model)
    pickle.loads(pickle.dumps(model))
    copy.copy(model)
    copy.deepcopy(model)
    pytreekit.replace(model.linear, weights=model.linear.weights * 0)
    assert init_calls == {"Linear": 0, "Activation": 0, "Model": 0}

    Model(jax.random.PRNGKey(3), 3, 2)
    assert init_calls == {"Linear": 1, "Activation": 1, "Model": 1}


def test_vmap_over_stacked_models(batch):
    data, _ = batch
    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    stacked = jax.vmap(lambda k: Model(k, 3, 2))(keys)
    assert stacked.linear.weights.shape == (5, 2, 3)
    out = jax.vmap(lambda m: m(data))(stacked)
    assert out.shape == (5, 8, 2)
    single = Model(keys[4], 3, 2)
    np.testing.assert_allclose(out[4], single(data), rtol=1e-5)


def test_scan_carries_a_model(model, batch):
    data, target = batch

    def step(m, _):
        grads = jax.grad(compute_loss)(m, data, target)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, m, grads), compute_loss(
            m, data, target
        )

    final, losses = jax.lax.scan(step, model, None, length=50)
    assert type(final) is Model and losses.shape == (50,)
    assert losses[-1] < losses[0]


def test_jit_retraces_on_static_change_not_on_leaf_change(model):
    traces = []

    @jax.jit
    def f(linear):
        traces.append(1)
        return linear.weights.sum()

    linear = model.linear
    f(linear)
    f(pytreekit.replace(linear, weights=linear.weights + 1))
    f(jax.tree_util.tree_map(jnp.zeros_like, linear))
    assert len(traces) == 1
    f(pytreekit.replace(linear, in_features=4))
    assert len(traces) == 2


def test_pickle_and_deepcopy_round_trip(picklable_model):
    model = picklable_model
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), copy.copy(model)):
        assert clone == model and clone is not model
        assert jax.tree_util.tree_structure(clone) == jax.tree_util.tree_structure(model)
    assert copy.deepcopy(model).linear is not model.linear


def test_optax_adam_step(model, batch):
    data, target = batch
    optimizer = optax.adam(1e-2)
    state = optimizer.init(model)

    @jax.jit
    def step(model, state):
        grads = jax.grad(compute_loss)(model, data, target)
        updates, state = optimizer.update(grads, state, model)
        return optax.apply_updates(model, updates), state

    first = compute_loss(model, data, target)
    for _ in range(50):
        model, state = step(model, state)
    assert type(model) is Model and compute_loss(model, data, target) < first


def test_equinox_module_as_child_and_pytree_class_inside_equinox():
    eqx = pytest.importorskip("equinox")

    @pytree_class
    class Holder:
        inner: eqx.nn.Linear
        scale: jax.Array

    holder = Holder(eqx.nn.Linear(2, 3, key=jax.random.PRNGKey(0)), jnp.array(2.0))
    grads = eqx.filter_grad(lambda h, x: jnp.sum(h.inner(x) * h.scale))(holder, jnp.ones(2))
    assert isinstance(grads.inner, eqx.nn.Linear)
    np.testing.assert_allclose(grads.scale, jnp.sum(holder.inner(jnp.ones(2))), rtol=1e-6)

    linear = Linear(jax.random.PRNGKey(0), 2, 3)
    out = eqx.filter_jit(lambda m, x: m(x))(linear, jnp.ones(2))
    np.testing.assert_allclose(out, linear(jnp.ones(2)), rtol=1e-6)


def test_children_can_be_lists_and_dicts():
    @pytree_class
    class Stack:
        layers: list
        extras: dict = field(default_factory=dict)

    stack = Stack([jnp.ones(2), jnp.zeros(3)], {"a": jnp.ones(1)})
    leaves = jax.tree_util.tree_leaves(stack)
    assert len(leaves) == 3
    doubled = jax.tree_util.tree_map(lambda x: x * 2, stack)
    np.testing.assert_array_equal(doubled.layers[0], 2 * jnp.ones(2))


def test_usable_bare_with_options_and_as_a_call():
    class Plain:
        x: jax.Array

    assert pytree_class(Plain) is Plain
    assert jax.tree_util.tree_leaves(Plain(jnp.ones(1)))[0].shape == (1,)

    @pytree_class(frozen=True)
    class WithOptions:
        x: int

    with pytest.raises(pytreekit.FrozenInstanceError):
        WithOptions(1).x = 2  # type: ignore[misc]


def test_decorating_a_non_class_names_it():
    def not_a_class():
        pass

    with pytest.raises(TypeError, match=r"decorates classes.*not_a_class"):
        pytree_class(not_a_class)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="decorates classes"):
        pytree_class(static=("x",))(3)  # type: ignore[arg-type]


def test_unknown_static_name_is_named_with_a_suggestion():
    with pytest.raises(TypeError, match=r"Layer: static=\['widht'\] names no field.*'width'"):

        @pytree_class(static=("widht",))
        class Layer:
            width: int

    with pytest.raises(TypeError, match=r"takes names \(str\), got 3"):
        pytree_class(static=(3,))  # type: ignore[arg-type]


def test_unannotated_static_typo_is_reported_on_first_flatten():
    @pytree_class(static=("sizee",))
    class Sized:
        def __init__(self):
            self.size = 3
            self.w = jnp.ones(2)

    message = r"Sized: static='sizee' names no attribute .* 'size' is one"
    with pytest.raises(TypeError, match=message):
        jax.tree_util.tree_flatten(Sized())


def test_subclass_decorated_again_with_its_own_options():
    @pytree_class(static=("n",))
    class Base:
        def __init__(self, n):
            self.n = n
            self.w = jnp.ones(n)

    @pytree_class(static=("label",))  # on top of the automatic set-up from Base
    class Labelled(Base):
        def __init__(self, n, label):
            super().__init__(n)
            self.label = label

    obj = Labelled(2, "a")
    leaves, treedef = jax.tree_util.tree_flatten(obj)
    assert len(leaves) == 1  # n and label are both static
    assert jax.tree_util.tree_unflatten(treedef, leaves) == obj
    assert treedef != jax.tree_util.tree_structure(Labelled(2, "b"))

    @pytree_class
    class AnnotatedBase:
        x: jax.Array

    @pytree_class(static=("scale",))
    class Scaled(AnnotatedBase):
        scale: float = 1.0

    scaled = Scaled(jnp.ones(1), 2.0)
    assert [f.name for f in pytreekit.fields(Scaled) if f.static] == ["scale"]
    assert jax.tree_util.tree_leaves(scaled) == [scaled.x]

    # As dataclasses: a frozen class cannot extend a mutable one; the message names both.
    with pytest.raises(TypeError, match=r"Frozen is frozen but its base .*AnnotatedBase is not"):

        @pytree_class(frozen=True)
        class Frozen(AnnotatedBase):
            y: int = 0


def test_subclass_of_unannotated_class_is_a_pytree_without_decoration():
    class Bigger(Linear):
        def __init__(self, key):
            super().__init__(key, 4, 5)
            self.extra = jnp.zeros(5)

    big = Bigger(jax.random.PRNGKey(0))
    assert pytreekit.is_pytree_class(Bigger)
    assert len(jax.tree_util.tree_leaves(big)) == 3  # weights, biases, extra: not a leaf itself
    grads = jax.grad(lambda m: jnp.sum(m(jnp.ones(4)) + m.extra))(big)
    assert type(grads) is Bigger and grads.extra.shape == (5,)


def test_static_names_are_an_iterable_of_identifiers():
    # A bare string would be one name or its letters; "n, k" named no field and left n and k
    # leaves, silently. Refused, showing the value and the fix.
    with pytest.raises(TypeError, match=r"static='n, k'\) takes an iterable.*static=\('n', 'k'\)"):
        pytree_class(static="n, k")
    with pytest.raises(TypeError, match=r"static=\('size',\)"):
        pytree_class(static="size")
    with pytest.raises(TypeError, match=r"'layer-1' is not a Python identifier"):
        pytree_class(static=("layer-1",))

    @pytree_class(static=["size"], backends="jax")  # a list; backends by one name
    class Sized:
        def __init__(self, size):
            self.size = size
            self.w = jnp.ones(size)

    obj = Sized(2)
    assert [(f.name, f.static) for f in pytreekit.fields(obj)] == [("size", True), ("w", False)]
    assert jax.tree_util.tree_leaves(obj) == [obj.w]


def test_static_names_given_positionally_are_named_with_the_fix():
    with pytest.raises(
        TypeError, match=r"got 'weights' \(str\)\. .*@pytree_class\(static=\('weights',\)\)"
    ):
        pytree_class("weights")


def test_equinox_module_is_refused_and_left_unchanged():
    import equinox as eqx

    class Block(eqx.Module):
        w: jax.Array

    before = dict(Block.__dict__)
    with pytest.raises(TypeError, match=r"\.Block: it is an equinox\.Module.*Keep it an Equinox"):
        pytree_class(Block)
    assert dict(Block.__dict__) == before and not pytreekit.is_pytree_class(Block)


def test_field_specifier_without_annotation_is_refused():
    class Unannotated:
        size = field(static=True, default=3)

        def __init__(self):
            self.w = jnp.ones(2)

    with pytest.raises(TypeError, match=r"\.Unannotated\.size = field.*`size: <type> = field"):
        pytree_class(Unannotated)
    assert not pytreekit.is_pytree_class(Unannotated)


def test_annotated_subclasses_own_inherited_and_generated_init():
    @pytree_class
    class Base:
        x: jax.Array

        def __init__(self, n):
            self.x = jnp.ones(n)

    class OwnInit(Base):
        y: jax.Array = field(init=False)

        def __init__(self, n):
            super().__init__(n)
            self.y = jnp.zeros(n)

    class Child(Base):
        pass

    class GrandChild(Child):  # its nearest __init__ is Base's, two classes up
        pass

    own = OwnInit(2)
    assert [leaf.tolist() for leaf in jax.tree_util.tree_leaves(own)] == [[1.0, 1.0], [0.0, 0.0]]
    grand = GrandChild(3)  # Base's own __init__, not a generated __init__(x)
    assert grand.x.shape == (3,) and type(grand) is GrandChild
    leaves, treedef = jax.tree_util.tree_flatten(grand)
    assert jax.tree_util.tree_unflatten(treedef, leaves) == grand

    @pytree_class
    @dataclasses.dataclass(init=False)
    class NoInit:  # a pytree root that has no __init__ of its own
        x: int

    class Sub(NoInit):
        y: int

    assert list(inspect.signature(Sub).parameters) == ["x", "y"]
    assert (Sub(1, 2).x, Sub(1, 2).y) == (1, 2)


def test_unannotated_subclass_without_init_uses_its_parents_as_is():
    @pytree_class(static=("n",))
    class Parent:
        def __init__(self, n):
            self.n = n
            self.w = jnp.ones(n)

    class Child(Parent):
        pass

    assert "__init__" not in Child.__dict__  # the parent's wrapped __init__, not wrapped again
    child = Child(2)
    assert [f.name for f in pytreekit.fields(child)] == ["n", "w"]
    leaves, treedef = jax.tree_util.tree_flatten(child)
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is Child and rebuilt == child


def test_frozen_unannotated_class_defining_setattr_is_refused():
    class Guarded:
        def __init__(self):
            self.w = jnp.ones(1)

        def __setattr__(self, name, value):
            object.__setattr__(self, name, value)

    with pytest.raises(TypeError, match=r"\.Guarded defines __setattr__ .*Remove one of the two"):
        pytree_class(Guarded, frozen=True)
    assert "__repr__" not in Guarded.__dict__  # left as written
    assert pytreekit.is_pytree_class(pytree_class(Guarded))  # not frozen: fine


@pytree_class(frozen=True)
class Point:  # module level, so that pickle finds it
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __getstate__(self):  # slot values only: restoring them must not go through __setattr__
        return None, {"x": self.x, "y": self.y}


def test_frozen_slotted_class_with_its_own_getstate_unpickles():
    point = Point(np.float32(1.0), np.float32(2.0))
    for again in (pickle.loads(pickle.dumps(point)), copy.deepcopy(point)):
        assert (again.x, again.y) == (1.0, 2.0) and again == point
        with pytest.raises(pytreekit.FrozenInstanceError):
            again.x = 3.0


def test_own_repr_eq_and_hash_are_kept():
    @pytree_class(frozen=True)
    class Own:
        def __init__(self, w):
            self.w = w

        def __repr__(self):
            return "Own!"

        def __hash__(self):
            return 7

    assert repr(Own(1)) == "Own!" and hash(Own(1)) == 7 and Own(1) == Own(1)

    @pytree_class(frozen=True, eq=False)
    class Identity:
        def __init__(self, w):
            self.w = w

    a = Identity(1)
    assert a == a and a != Identity(1) and hash(a) == object.__hash__(a)

    @pytree_class(frozen=True)
    class Unhashable:  # as with dataclasses, an explicit __hash__ = None is kept
        __hash__ = None

        def __init__(self, w):
            self.w = w

    assert Unhashable(1) == Unhashable(1)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(Unhashable(1))


def test_root_init_subclass_runs_with_its_arguments():
    seen = []

    @pytree_class
    class Registry:
        def __init_subclass__(cls, /, tag, **kwargs):
            super().__init_subclass__(**kwargs)
            seen.append((cls.__name__, tag))

        def __init__(self):
            self.w = jnp.ones(1)

    class Tagged(Registry, tag="t"):
        pass

    assert seen == [("Tagged", "t")]
    assert pytreekit.is_pytree_class(Tagged) and len(jax.tree_util.tree_leaves(Tagged())) == 1
    with pytest.raises(TypeError, match="tag"):

        class Untagged(Registry):
            pass


def test_a_class_inheriting_a_plain_bases_init_finds_its_fields_per_instance():
    class Base:
        def __init__(self, w):
            self.w = w

    @pytree_class
    class Leafy(Base):
        pass

    assert not dataclasses.is_dataclass(Leafy)
    assert jax.tree_util.tree_leaves(Leafy(1.0)) == [1.0]


def test_a_frozen_class_inheriting_a_plain_bases_init_is_built_by_it_then_frozen():
    class Base:
        def __init__(self, w):
            self.w = w

    @pytree_class(frozen=True)
    class Leafy(Base):
        pass

    leafy = Leafy(1.0)  # the base's __init__ runs under pytreekit's wrapper, which opens it
    assert jax.tree_util.tree_leaves(leafy) == [1.0]
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"field 'w' of frozen .*Leafy "):
        leafy.w = 2.0


def test_a_class_without_annotations_on_a_dataclass_base_keeps_the_bases_fields():
    # The fields are the base's, static marks included, known before any instance exists;
    # read per instance instead, the static name would become a leaf.
    @dataclasses.dataclass
    class Base:
        w: float
        name: str = field(static=True, default="base")

    @pytree_class
    class Child(Base):
        pass

    assert [(f.name, f.static) for f in pytreekit.fields(Child)] == [("w", False), ("name", True)]
    assert jax.tree_util.tree_leaves(Child(1.0, "child")) == [1.0]


def test_decorating_again_starts_from_the_field_specifiers_as_written():
    @pytree_class
    class Options:
        x: int = field(default=1)

    assert str(inspect.signature(Options)) == "(x: int = 1) -> None"
    pytree_class(Options, kw_only=True)  # the specifier's kw_only was never filled in
    assert str(inspect.signature(Options)) == "(*, x: int = 1) -> None"
    pytree_class(Options)
    assert str(inspect.signature(Options)) == "(x: int = 1) -> None"


def test_object_init_assigned_in_the_body_is_decorated_as_no_init():
    """``__init__ = object.__init__`` in a class body is the class without an ``__init__``: a
    dataclass with a generated one, alike in fields, repr and tree."""

    @pytree_class
    class Assigned:
        __init__ = object.__init__

    @pytree_class
    class Bare:
        pass

    for cls in (Assigned, Bare):
        assert dataclasses.is_dataclass(cls) and dataclasses.fields(cls) == ()
        assert cls.__init__ is not object.__init__  # generated
        assert repr(cls()) == f"{cls.__qualname__}()"
        assert jax.tree_util.tree_leaves(cls()) == []
