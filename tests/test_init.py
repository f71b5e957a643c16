"""The generated dataclass-like __init__ for annotated classes."""

import functools
import inspect
import linecache
import sys
import threading
import traceback
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import run_threads

import pytreekit
from pytreekit import field, pytree_class


def test_defaults_factories_and_order():
    @pytree_class
    class Config:
        weights: jax.Array
        scale: float = 2.0
        history: list = field(default_factory=list)

    a, b = Config(jnp.ones(2)), Config(jnp.ones(2), 3.0, [1])
    assert (a.scale, a.history, b.scale, b.history) == (2.0, [], 3.0, [1])
    assert a.history is not Config(jnp.ones(1)).history
    assert list(inspect.signature(Config).parameters) == ["weights", "scale", "history"]


def test_kw_only():
    @pytree_class(kw_only=True)
    class Opts:
        rate: float = 0.1
        steps: int

    assert Opts(steps=3).rate == 0.1
    with pytest.raises(TypeError):
        Opts(0.1, 3)  # type: ignore[misc]


def test_non_default_after_default_is_named():
    with pytest.raises(
        TypeError, match=r"Bad: non-default argument 'b' follows default argument.*kw_only"
    ):

        @pytree_class
        class Bad:
            a: int = 1
            b: int


def test_init_false_fields_and_post_init():
    @pytree_class
    class Scaled:
        x: jax.Array
        doubled: jax.Array = field(init=False)
        count: int = field(init=False, default=0, static=True)

        def __post_init__(self):
            self.doubled = self.x * 2

    s = Scaled(jnp.ones(2))
    np.testing.assert_array_equal(s.doubled, 2 * jnp.ones(2))
    assert s.count == 0
    assert "doubled" not in inspect.signature(Scaled).parameters


def test_converters_run_in_init_and_on_defaults():
    @pytree_class
    class Converted:
        x: jax.Array = field(converter=jnp.asarray)
        y: jax.Array = field(converter=jnp.asarray, default=1.0)

    c = Converted([1.0, 2.0])
    assert isinstance(c.x, jax.Array) and isinstance(c.y, jax.Array)


def test_rebuild_runs_no_converter_or_post_init():
    calls = []

    def converter(value):
        calls.append("converter")
        return jnp.asarray(value)

    @pytree_class
    class Checked:
        x: jax.Array = field(converter=converter)

        def __post_init__(self):
            calls.append("post_init")
            if self.x.ndim != 1:
                raise ValueError("x must be a vector")

    c = Checked([1.0])
    assert calls == ["converter", "post_init"]
    treedef = jax.tree_util.tree_structure(c)
    for leaf in (None, object(), jnp.ones((2, 2))):
        rebuilt = jax.tree_util.tree_unflatten(treedef, [leaf])
        assert rebuilt.x is leaf
    jax.jit(lambda c: c)(c)
    jax.vmap(lambda c: c, in_axes=0)(Checked(jnp.ones(3)))
    assert calls == ["converter", "post_init", "converter", "post_init"]


def test_a_field_named_self_is_allowed():
    @pytree_class
    class Odd:
        self: int

    assert Odd(3).self == 3


def test_subclass_gets_a_new_init_with_all_fields():
    @pytree_class
    class Base:
        x: jax.Array

    class Child(Base):
        y: int = field(static=True, default=1)

    child = Child(jnp.ones(1), 5)
    assert child.y == 5
    assert jax.tree_util.tree_structure(child) != jax.tree_util.tree_structure(Base(jnp.ones(1)))


def test_user_init_is_kept_for_annotated_classes():
    @pytree_class
    class Custom:
        w: jax.Array
        n: int = field(static=True)

        def __init__(self, size):
            self.n = size
            self.w = jnp.zeros(size)

    c = Custom(3)
    assert c.n == 3 and c.w.shape == (3,)
    assert list(inspect.signature(Custom).parameters) == ["size"]


def test_static_fields_left_unset_do_not_hide_an_unhashable_one():
    @pytree_class
    class Tagged:
        n: int = field(static=True, init=False)  # __post_init__ sets it only sometimes
        names: list = field(static=True, init=False)

        def __post_init__(self):
            self.names = ["a"]

    with pytest.raises(
        TypeError, match=r"\.Tagged\.names is a static field.*holds a list \(\['a'\]\)"
    ):
        Tagged()


def test_a_static_field_left_unset_is_not_an_error_at_construction():
    @pytree_class
    class Later:
        x: jax.Array
        n: int = field(static=True, init=False)
        label: str = field(static=True, init=False)

        def __post_init__(self):
            self.label = "set"

    later = Later(jnp.ones(1))
    assert later.label == "set" and not hasattr(later, "n")
    later.n = 2
    assert jax.tree_util.tree_leaves(later) == [later.x]


def test_user_inits_chained_by_super_are_checked_once_after_the_outermost():
    @pytree_class
    class Base:
        w: jax.Array

        def __init__(self, size):
            self.w = jnp.zeros(size)

    class Child(Base):
        scale: float

        def __init__(self, size, scale):
            super().__init__(size)  # Child's field is not set yet: no check runs here
            self.scale = scale

    child = Child(2, 3.0)
    assert child.scale == 3.0 and child.w.shape == (2,)

    class Forgetful(Base):
        scale: float

        def __init__(self, size):
            super().__init__(size)

    with pytest.raises(
        TypeError, match=r"Forgetful.__init__ returned without setting field 'scale'"
    ):
        Forgetful(2)


def test_own_init_setting_a_non_field_is_refused_even_when_a_field_keeps_its_default():
    @pytree_class
    class Scaled:
        weights: jax.Array
        scale: float = 1.0

        def __init__(self, weights):
            self.weights = weights
            self.cache = weights * 2  # scale keeps its class default: one entry per field

    with pytest.raises(TypeError, match=r"Scaled.__init__ set attribute 'cache', which is not a"):
        Scaled(jnp.ones(2))


class _Positive:
    """A descriptor-typed field as dataclasses documents them: the value lives under ``_name``."""

    def __set_name__(self, owner, name):
        self.storage = "_" + name

    def __get__(self, obj, owner=None):
        return 1 if obj is None else getattr(obj, self.storage)

    def __set__(self, obj, value):
        object.__setattr__(obj, self.storage, abs(value))


def test_own_init_of_a_class_with_a_descriptor_field_may_fill_its_storage():
    @pytree_class
    class Count:
        n: int = _Positive()

        def __init__(self, n):
            self.n = n

    @pytree_class
    class CountWithExtra:
        n: int = _Positive()

        def __init__(self, n):
            self.n = n
            self.junk = 5

    count = Count(-3)
    assert count.n == 3 and vars(count) == {"_n": 3}
    assert jax.tree_util.tree_leaves(count) == [3]
    with pytest.raises(TypeError, match=r"CountWithExtra.__init__ set attribute 'junk'"):
        CountWithExtra(2)


def test_a_descriptor_field_is_rebuilt_through_its_set_with_what_its_get_returned():
    @pytree_class
    class Count:
        n: int = _Positive()

    count = Count(-3)
    leaves, treedef = jax.tree_util.tree_flatten(count)
    assert leaves == [3]
    rebuilt = jax.tree_util.tree_unflatten(treedef, [-4])
    assert rebuilt.n == 4 and vars(rebuilt) == {"_n": 4}  # __set__ ran, as at construction


def test_own_init_that_sets_nothing_leaves_every_field_at_its_default():
    @pytree_class
    class Defaults:
        rate: float = 0.1
        steps: int = field(static=True, default=3)

        def __init__(self):
            pass

    defaults = Defaults()
    assert vars(defaults) == {}
    assert (defaults.rate, defaults.steps) == (0.1, 3)
    assert jax.tree_util.tree_leaves(defaults) == [0.1]


def test_fields_after_an_initvar_or_an_init_false_field_are_still_set():
    import dataclasses

    @pytree_class
    class Scaled:
        count: int = field(init=False, default=0, static=True)  # left to the class attribute
        factor: dataclasses.InitVar[float]
        x: float
        y: float = 0.0

        def __post_init__(self, factor):
            self.y = self.x * factor

    s = Scaled(3.0, 2.0)
    assert (s.count, s.x, s.y) == (0, 2.0, 6.0)
    assert list(inspect.signature(Scaled).parameters) == ["factor", "x", "y"]


def test_an_init_false_default_is_converted_and_stored_on_the_instance():
    @pytree_class
    class Converted:
        y: jax.Array = field(init=False, default=1.0, converter=jnp.asarray)

    c = Converted()
    assert isinstance(c.y, jax.Array) and "y" in vars(c)
    assert Converted.y == 1.0  # the class attribute keeps the default as written


# -- the proof at decoration (issue 34): which __init__ is checked per instance -------------------


def _helper(obj):
    return obj


def _verdict(init, **options):
    cls = pytree_class(type("Proved", (), {"__init__": init}), **options)
    return cls, cls.__pytreekit_spec__.init_proof


def test_an_init_that_only_stores_attributes_of_self_is_proven():
    def init(self, w, n=3):
        self.w = w * 2
        self.w2, self.n = self.w.sum() + jnp.ones(2), n  # a field read once stored

    cls, verdict = _verdict(init, static=("n",))
    assert verdict.startswith("proven") and verdict.endswith("w, w2, n")
    obj = cls(jnp.ones(2), 4)
    assert [f.name for f in pytreekit.fields(obj)] == ["w", "w2", "n"]
    assert len(jax.tree_util.tree_leaves(obj)) == 2
    with pytest.raises(TypeError, match=r"Proved\.n\b"):
        cls(jnp.ones(2), [1])  # the static value is still checked


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("super(type(self), self).__init__()\n    self.w = w", "super"),
        ("self.w = w\n    self.v = self.__class__", "other than to store"),
        ("self.w = w\n    _helper(self)", "other than to store"),
        ("if w is not None:\n        self.w = w", "some branches only"),
        ("if w is None:\n        return\n    self.w = w", "some branches only"),
        ("for i in range(2):\n        setattr(self, 'w', w)", "loops"),
        ("self.w = w\n    (lambda: self)()", "closure"),
        ("import sys\n    self.w = sys.getrecursionlimit()", "imports"),
        ("self.w = _system._getframe(0).f_code.co_name", "frames"),
        ("try:\n        self.w = w\n    finally:\n        pass", "try"),
    ],
    ids=[
        "super",
        "reads",
        "passes",
        "branch",
        "return",
        "loop",
        "closure",
        "imports",
        "frames",
        "try",
    ],
)
def test_an_init_that_may_reach_self_otherwise_is_checked_per_instance(body, why):
    namespace = {"_helper": _helper, "_system": sys}
    exec(f"def init(self, w):\n    {body}\n", namespace)
    cls, verdict = _verdict(namespace["init"])
    assert verdict.startswith("general") and why in verdict, verdict
    obj = cls(1.0)
    assert jax.tree_util.tree_leaves(obj)  # and it still works


def test_an_init_whose_branches_choose_values_but_not_what_is_stored_is_proven():
    def init(self, w, b=None, scale=None, n=3):
        self.w = w
        self.b = b if b is not None else w  # a conditional expression
        if scale is None:  # a branch that stores nothing of self
            scale = 1.0
        assert n != 0, "n must not be 0"
        self.scale = scale or 2.0
        self.n = n

    cls, verdict = _verdict(init, static=("n",))
    assert verdict == "proven: only stores attributes of self: w, b, scale, n", verdict
    obj = cls(jnp.ones(2), scale=3.0)
    assert [f.name for f in pytreekit.fields(obj)] == ["w", "b", "scale", "n"]
    assert (obj.b == obj.w).all() and obj.scale == 3.0
    with pytest.raises(AssertionError, match="must not be 0"):
        cls(jnp.ones(2), n=0)
    with pytest.raises(TypeError, match=r"Proved\.n\b"):
        cls(jnp.ones(2), n=[1])  # the static value is still checked


def test_a_proven_annotated_init_must_set_exactly_the_fields():
    @pytree_class
    class Exact:
        w: jax.Array
        n: int = field(static=True)

        def __init__(self, w):
            self.w, self.n = w, 2

    @pytree_class
    class Partial:
        w: jax.Array
        n: int = field(static=True, default_factory=int)

        def __init__(self, w):
            self.w = w

    assert Exact.__pytreekit_spec__.init_proof.startswith("proven")
    assert "exactly the fields" in Partial.__pytreekit_spec__.init_proof
    assert Partial(jnp.ones(1)).n == 0  # the default factory fills it, as before


@pytest.mark.parametrize("frozen", [False, True])
def test_subclasses_of_a_class_with_a_proven_init_are_observed(frozen):
    @pytree_class(static=("n",), frozen=frozen)
    class Base:
        def __init__(self, w, n):
            self.w = w
            self.n = n

    class Inherits(Base):  # runs Base's __init__: its instances are observed as Inherits's
        pass

    class Extends(Base):  # super().__init__ then one more field
        def __init__(self, w, n, v):
            super().__init__(w, n)
            self.v = v

    assert Base.__pytreekit_spec__.init_proof.startswith("proven")
    assert [f.name for f in pytreekit.fields(Inherits(1.0, 2))] == ["w", "n"]
    extended = Extends(1.0, 2, 3.0)
    assert [(f.name, f.static) for f in pytreekit.fields(extended)] == [
        ("w", False),
        ("n", True),
        ("v", False),
    ]
    assert jax.tree_util.tree_leaves(extended) == [1.0, 3.0]
    with pytest.raises(TypeError, match=r"Extends\.n\b"):
        Extends(1.0, [2], 3.0)
    with pytest.raises(TypeError, match=r"Inherits\.n\b"):
        Inherits(1.0, [2])


# -- a proven __init__ in one frame: its own code compiled again, the check appended -------------


def test_a_proven_init_runs_in_one_frame_of_its_own_code():
    @pytree_class(static=("n",))
    class Linear:
        def __init__(self, w, n):
            self.w = 1.0 / w
            self.n = n

    own = Linear.__init__.__wrapped__
    code, line = Linear.__init__.__code__, inspect.getsourcelines(own)[1]
    assert code is not own.__code__
    assert (code.co_filename, code.co_firstlineno) == (__file__, line)
    with pytest.raises(ZeroDivisionError) as raised:
        Linear(0.0, 2)
    frames = traceback.extract_tb(raised.value.__traceback__)
    # This test, then the user's own line: no frame of pytreekit's in between.
    assert [f.filename for f in frames] == [__file__, __file__]
    assert (frames[-1].lineno, frames[-1].line) == (line + 1, "self.w = 1.0 / w")
    with pytest.raises(TypeError, match=r"Linear\.n\b"):
        Linear(1.0, [2])
    assert list(inspect.signature(Linear).parameters) == ["w", "n"]
    assert pytreekit.fields(Linear(2.0, 3))[0].name == "w"


def test_an_init_calling_functions_of_imported_modules_runs_in_one_frame():
    # CPython 3.11 to 3.13 compile ``jnp.zeros(...)`` differently where ``jnp`` is imported in the
    # module: the def compiled again must be compiled with this module's imports in view.
    @pytree_class(static=("n",))
    class Layer:
        def __init__(self, w, n):
            warnings.warn("Layer: w is deprecated", DeprecationWarning, stacklevel=2)
            self.w = np.sqrt(w) + jnp.zeros(n)
            self.n = n

    assert "proven" in Layer.__pytreekit_spec__.init_proof
    assert Layer.__init__.__code__.co_filename == __file__
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Layer(4.0, 2)
        line = inspect.currentframe().f_lineno - 1
    # stacklevel=2 names the caller, as without pytreekit: no frame of pytreekit's in between.
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match=r"Layer\.n\b"):
        Layer(1.0, [2])


def _decorate_layer():
    @pytree_class(static=("n",))
    class Layer:
        def __init__(self, w, n):
            self.w = np.sqrt(w) + jnp.zeros(n)
            self.n = n

    return Layer


def test_classes_decorated_from_many_threads_each_get_the_one_frame_init():
    # The imports a file binds are cached per file; threads decorating at once, while the
    # source cache is dropped under them, must each find the names and compile the one frame.
    made = []
    stop = []

    def decorate():
        for _ in range(5):
            made.append(_decorate_layer())

    def drop_sources():
        while not stop:
            linecache.clearcache()

    dropper = threading.Thread(target=drop_sources)
    dropper.start()
    try:
        run_threads([decorate] * 6)
    finally:
        stop.append(True)
        dropper.join()
    assert len(made) == 30
    for cls in made:
        assert "proven" in cls.__pytreekit_spec__.init_proof
        assert cls.__init__.__code__.co_filename == __file__
        assert float(cls(4.0, 2).w[0]) == 2.0


_GENERIC_INITS = {
    "own": (
        "import pytreekit\n\n"
        "@pytreekit.pytree_class\n"
        "class Pair:\n"
        "    def __init__[U](self, a: U, b: list[U]):\n"
        "        self.a = a\n"
        "        self.b = b\n"
    ),
    "bound": (
        "import pytreekit\n\n"
        "def init[T](self, a: T, b: T):\n"
        "    self.a = a\n"
        "    self.b = b\n\n"
        "@pytreekit.pytree_class\n"
        "class Pair:\n"
        "    __init__ = init\n"
    ),
    "subclass": (
        "import pytreekit\n\n"
        "@pytreekit.pytree_class\n"
        "class Base:\n"
        "    def __init__(self, a):\n"
        "        self.a = a\n\n"
        "class Pair(Base):\n"
        "    def __init__[U](self, a: U, b: U):\n"
        "        self.a = a\n"
        "        self.b = b\n"
    ),
}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="def f[T] is Python 3.12 syntax")
@pytest.mark.parametrize("kind", list(_GENERIC_INITS))
def test_an_init_with_its_own_type_parameters_is_kept(kind, tmp_path, monkeypatch):
    # 3.12 compiles a generic def inside a scope of its type parameters: its code is not the
    # module's constant, and decorating raised a bare StopIteration.
    (tmp_path / f"generic_init_{kind}.py").write_text(_GENERIC_INITS[kind])
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(f"generic_init_{kind}")
    pair = module.Pair(jnp.ones(2), jnp.zeros(3))
    leaves, treedef = jax.tree_util.tree_flatten(pair)
    assert [leaf.shape for leaf in leaves] == [(2,), (3,)]
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert type(back) is module.Pair and vars(back).keys() >= {"a", "b"}


def test_imports_under_try_and_if_count(tmp_path, monkeypatch):
    source = (
        "import pytreekit\n"
        "try:\n"
        "    import math as m\n"
        "except ImportError:\n"
        "    m = None\n"
        "if True:\n"
        "    from os import path\n\n\n"
        "@pytreekit.pytree_class\n"
        "class A:\n"
        "    def __init__(self, w):\n"
        "        self.w = m.sqrt(w)\n"
        "        self.name = path.join('a', 'b')\n"
    )
    (tmp_path / "imports_under_if.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import imports_under_if

    assert imports_under_if.A.__init__.__code__.co_filename == imports_under_if.__file__
    assert imports_under_if.A(4.0).w == 2.0


def _identity(function):
    return function


SCALE = 2.0


def _no_source():
    namespace: dict = {}
    exec("class Made:\n    def __init__(self, w):\n        self.w = w\n", namespace)
    return namespace["Made"]


def _closure():
    scale = SCALE

    class Closes:
        def __init__(self, w):
            self.w = w * scale

    return Closes


def _mangled():
    class Mangled:
        def __init__(self, w):
            self.__w = w  # compiled outside its class, this name would not be mangled
            self.v = w

    return Mangled


def _decorated():
    class Decorated:
        @_identity
        def __init__(self, w):
            self.w = w

    return Decorated


def _stale_source():
    filename = "<test_init stale source>"
    written, shown = "self.w = w", "self.w = w + 1"
    source = "class Stale:\n    def __init__(self, w):\n        {}\n"
    linecache.cache[filename] = (1, None, source.format(shown).splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source.format(written), filename, "exec"), namespace)
    return namespace["Stale"]


def _reserved_name():
    class Reserved:
        def __init__(self, w):
            __pytreekit_kind__ = w  # a name the appended check uses
            self.w = __pytreekit_kind__

    return Reserved


@pytest.mark.parametrize(
    "make", [_no_source, _closure, _mangled, _decorated, _stale_source, _reserved_name]
)
def test_a_proven_init_whose_source_is_not_its_code_keeps_the_wrapper(make):
    cls = pytree_class(make())
    assert cls.__pytreekit_spec__.init_proof.startswith("proven")
    assert cls.__init__.__code__.co_filename.startswith("<pytreekit generated")
    obj = cls(3.0)
    assert obj == cls(3.0) and len(jax.tree_util.tree_leaves(obj)) == 1
    if make is _stale_source:
        assert obj.w == 3.0  # what the class's code does, not what its source says


def test_an_unproven_init_is_checked_in_one_frame_of_its_own_code():
    @pytree_class(static=("n",))
    class Calls:
        def __init__(self, w, n):
            self.w = w
            self.n = self.checked(n)  # a method of self: anything may happen to it

        def checked(self, n):
            if n == "more":
                self.extra = 3.0  # another attribute: a field of this instance
            return n

    assert Calls.__pytreekit_spec__.init_proof.startswith("general: uses self other than")
    assert Calls.__init__.__code__.co_filename == __file__
    assert jax.tree_util.tree_leaves(Calls(1.0, 2)) == [1.0]
    # assigned while n's value was computed, before n was stored: in the order first assigned
    assert [f.name for f in pytreekit.fields(Calls(1.0, "more"))] == ["w", "extra", "n"]
    assert jax.tree_util.tree_leaves(Calls(1.0, "more")) == [1.0, 3.0]
    with pytest.raises(TypeError, match=r"Calls\.n\b"):
        Calls(1.0, [2])


def test_an_unproven_init_that_rebinds_self_keeps_the_wrapper():
    @pytree_class
    class Rebinds:
        def __init__(self, w):
            self.w = w
            self.set_up()
            self = None  # the appended check would read None

        def set_up(self):
            pass

    assert Rebinds.__pytreekit_spec__.init_proof.startswith("general")
    assert Rebinds.__init__.__code__.co_filename.startswith("<pytreekit generated")
    assert jax.tree_util.tree_leaves(Rebinds(2.0)) == [2.0]


def test_an_init_whose_one_return_is_not_its_end_keeps_the_wrapper():
    # Lines appended after a body that ends in raise would never run: the check with them.
    @pytree_class(static=("shape",))
    class Param:
        def __init__(self, shape, init):
            self.shape = shape
            self.set_up()
            if init == "zeros":
                self.value = 0.0
                return
            raise ValueError(init)

        def set_up(self):
            self.extra = 1.0

    assert Param.__init__.__code__.co_filename.startswith("<pytreekit generated")
    assert [f.name for f in pytreekit.fields(Param((2, 3), "zeros"))] == [
        "shape",
        "extra",
        "value",
    ]
    with pytest.raises(TypeError, match=r"Param\.shape\b"):
        Param([2, 3], "zeros")


def test_an_init_that_returns_a_value_fails_as_without_pytreekit():
    def generator(self, a):
        self.a = a
        yield a

    def returns_self(self, a):
        self.a = a
        if a:
            return self
        return None

    for init in (generator, returns_self):
        plain = type("Same", (), {"__init__": init})
        with pytest.raises(TypeError, match=r"__init__\(\) should return None") as expected:
            plain(1.0)
        ours = pytree_class(type("Same", (), {"__init__": init}))
        with pytest.raises(TypeError, match=r"__init__\(\) should return None") as raised:
            ours(1.0)
        assert str(raised.value) == str(expected.value)


__pytreekit_cls__ = "this module's value"


def test_a_reserved_name_read_by_a_function_inside_init_keeps_the_wrapper():
    @pytree_class
    class Reads:
        def __init__(self, w):
            self.w = w
            self.tag = (lambda: __pytreekit_cls__)()  # a global, not pytreekit's helper

    assert Reads.__init__.__code__.co_filename.startswith("<pytreekit generated")
    assert Reads(1.0).tag == "this module's value"


def test_equal_inits_in_two_files_run_in_one_frame_each_at_its_own_file(tmp_path, monkeypatch):
    source = (
        "import pytreekit\n\n\n"
        "@pytreekit.pytree_class\n"
        "class A:\n"
        "    def __init__(self, w):\n"
        "        self.w = 1.0 / w\n"
    )
    for name in ("equal_init_one", "equal_init_two"):
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import equal_init_one
    import equal_init_two

    for module in (equal_init_one, equal_init_two):
        assert module.A.__init__.__code__.co_filename == module.__file__
        with pytest.raises(ZeroDivisionError) as raised:
            module.A(0.0)
        assert traceback.extract_tb(raised.value.__traceback__)[-1].filename == module.__file__


class _SetsFirst(type):
    """A metaclass whose ``__call__`` stores an attribute before ``__init__`` runs."""

    def __call__(cls, *args, **kwargs):
        obj = cls.__new__(cls)
        obj.tag = 1.0
        obj.__init__(*args, **kwargs)
        return obj


class _OnlyStores(metaclass=_SetsFirst):
    def __init__(self, w):
        self.w = w  # proven alone: it only stores


class _CallsAMethod(metaclass=_SetsFirst):
    def __init__(self, w):
        self.w = w
        self.set_up()  # its order alone would be proven: w, then nothing else

    def set_up(self):
        pass


@pytest.mark.parametrize("written", [_OnlyStores, _CallsAMethod])
def test_what_a_metaclass_stores_before_init_is_a_field_as_the_rule_says(written):
    # Neither the proof (only stores) nor the proven order (stores before anything else) can see
    # what runs before __init__: such a class takes the general path, which reads the instance.
    cls = pytree_class(type(written.__name__, (written,), {"__init__": written.__init__}))
    assert cls.__pytreekit_spec__.init_proof.startswith("general")
    obj = cls(2.0)
    assert [f.name for f in pytreekit.fields(obj)] == list(vars(obj)) == ["tag", "w"]
    assert jax.tree_util.tree_leaves(obj) == [1.0, 2.0]


def _init_body(self, w, n=2):
    self.w = w
    self.n = n


class _CalledWithoutSelf:
    def __call__(self, *args, **kwargs):
        self.seen = (args, kwargs)


@pytest.mark.parametrize(
    "make_init",
    [
        lambda: functools.partialmethod(_init_body, n=5),
        lambda: staticmethod(lambda *args: None),
        _CalledWithoutSelf,
    ],
    ids=["partialmethod", "staticmethod", "callable object"],
)
@pytest.mark.parametrize("frozen", [False, True])
def test_an_init_that_is_no_function_runs_as_python_runs_it(make_init, frozen):
    """Python binds an ``__init__`` through its type's ``__get__``, or calls it without the
    instance; the decorated class does what the plain one does: same attributes, same leaves
    (a field each), same exception type, same signature."""

    def run(decorate):
        cls = type("Made", (), {"__init__": make_init(), "__module__": __name__})
        if decorate:
            cls = pytree_class(cls, frozen=frozen)
        try:
            made = cls(1.0)
        except TypeError:
            return "TypeError", inspect.signature(cls)
        leaves = jax.tree_util.tree_leaves(made) if decorate else sorted(vars(made).values())
        return sorted(vars(made).items()), sorted(leaves), inspect.signature(cls)

    assert run(True) == run(False)


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("proven", [True, False])
def test_init_takes_the_instance_by_its_own_parameter_name(frozen, proven):
    @pytree_class(static=("n",), frozen=frozen)
    class Layer:
        def __init__(me, w, n=2):
            me.w = w
            me.n = n if proven else me.checked(n)

        @staticmethod
        def checked(n):
            return n

    made = object.__new__(Layer)
    Layer.__init__(me=made, w=1.0, n=3)
    assert (made.w, made.n) == (1.0, 3)
    assert list(inspect.signature(Layer.__init__).parameters) == ["me", "w", "n"]
    with pytest.raises(TypeError, match=r"Layer\.n is a static field"):
        Layer.__init__(me=object.__new__(Layer), w=1.0, n=[3])
