"""The codemod's rules, LibCST style: for each, the source before and after, the codes reported,
and for every rewrite a differential test against the hand-registered class (same leaves in the
same order, statics, treedefs, jit and grad) and a second run that changes nothing."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import assert_same_pytrees, codemod, load, write  # noqa: E402


@dataclass(frozen=True)
class Case:
    id: str
    before: str
    after: str | None  # None: unchanged but for the comment the codes imply
    codes: tuple[str | None, ...]  # per registration, in file order (None: rewritten)
    examples: str = ""  # instances to compare, for rewrites: "[Point(1.0, 2.0)]"
    args: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # other modules of the case


def _source(text: str, examples: str) -> str:
    text = textwrap.dedent(text).lstrip("\n")
    if examples:
        text += f"\n\ndef examples():\n    return {examples}\n"
    return text


REWRITES = [
    Case(
        "register_pytree_node_class decorator",
        """
        import jax
        from jax.tree_util import register_pytree_node_class


        @register_pytree_node_class
        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y

            def tree_flatten(self):
                return (self.x, self.y), None

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children)

            def norm(self):
                return (self.x**2 + self.y**2) ** 0.5
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y

            def norm(self):
                return (self.x**2 + self.y**2) ** 0.5
        """,
        (None,),
        "[Point(1.0, jax.numpy.arange(3.0))]",
    ),
    Case(
        "register_pytree_node_class called after the class",
        """
        import jax


        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y

            def tree_flatten(self):
                children = (self.x, self.y)
                aux_data = None
                return (children, aux_data)

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                x, y = children
                return cls(x, y)


        jax.tree_util.register_pytree_node_class(Point)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y
        """,
        (None,),
        "[Point(jax.numpy.ones(2), 3.0)]",
    ),
    Case(
        "register_pytree_node with functions and a tuple of statics",
        """
        import jax
        import jax.numpy as jnp


        class Linear:
            def __init__(self, weights, biases, in_features, out_features):
                self.in_features = in_features
                self.out_features = out_features
                self.weights = weights
                self.biases = biases


        def flatten_linear(linear):
            return (linear.weights, linear.biases), (linear.in_features, linear.out_features)


        def unflatten_linear(aux, children):
            return Linear(*children, *aux)


        jax.tree_util.register_pytree_node(Linear, flatten_linear, unflatten_linear)
        """,
        """
        import jax.numpy as jnp
        from pytreekit import pytree_class


        @pytree_class(static=("in_features", "out_features"), eq=False, repr=False)
        class Linear:
            def __init__(self, weights, biases, in_features, out_features):
                self.in_features = in_features
                self.out_features = out_features
                self.weights = weights
                self.biases = biases
        """,
        (None,),
        "[Linear(jnp.ones((2, 3)), jnp.zeros(2), 3, 2)]",
    ),
    Case(
        "register_pytree_node with lambdas, one static attribute, keyword arguments",
        """
        from jax.tree_util import register_pytree_node


        class Named:
            def __init__(self, value, name="x"):
                self.value = value
                self.name = name


        register_pytree_node(
            Named,
            lambda n: ((n.value,), n.name),  # the name is static
            lambda name, children: Named(value=children[0], name=name),
        )
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(static=("name",), eq=False, repr=False)
        class Named:
            def __init__(self, value, name="x"):
                self.value = value
                self.name = name
        """,
        (None,),
        "[Named(2.0), Named((1.0, 2.0), name='y')]",
    ),
    Case(
        "object.__new__ and stores, as JAX's documentation writes unflatten",
        """
        import jax
        import jax.numpy as jnp


        class MyContainer:
            def __init__(self, size):
                self.x = jnp.zeros(size)
                self.y = jnp.ones(size)
                self.size = size


        def flatten_func(obj):
            children = (obj.x, obj.y)
            aux_data = (obj.size,)
            return (children, aux_data)


        def unflatten_func(aux_data, children):
            obj = object.__new__(MyContainer)
            obj.x, obj.y = children
            (obj.size,) = aux_data
            return obj


        jax.tree_util.register_pytree_node(MyContainer, flatten_func, unflatten_func)
        """,
        """
        import jax.numpy as jnp
        from pytreekit import pytree_class


        @pytree_class(static=("size",), eq=False, repr=False)
        class MyContainer:
            def __init__(self, size):
                self.x = jnp.zeros(size)
                self.y = jnp.ones(size)
                self.size = size
        """,
        (None,),
        "[MyContainer(3), MyContainer(1)]",
    ),
    Case(
        "object.__setattr__ in unflatten, cls.__new__",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Pair:
            def __init__(self, first, second):
                self.first = first
                self.second = second

            def tree_flatten(self):
                return [self.first, self.second], None

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                new = cls.__new__(cls)
                object.__setattr__(new, "first", children[0])
                object.__setattr__(new, "second", children[1])
                return new
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Pair:
            def __init__(self, first, second):
                self.first = first
                self.second = second
        """,
        (None,),
        "[Pair(1.0, jax.numpy.ones(2))]",
    ),
    Case(
        "register_pytree_with_keys: GetAttrKey of the attribute's own name",
        """
        import jax.tree_util as jtu


        class Special:
            def __init__(self, x, y, size):
                self.x = x
                self.y = y
                self.size = size


        def flatten_with_keys(s):
            return ((jtu.GetAttrKey("x"), s.x), (jtu.GetAttrKey("y"), s.y)), (s.size,)


        def flatten(s):
            return (s.x, s.y), (s.size,)


        def unflatten(aux, children):
            return Special(children[0], children[1], aux[0])


        jtu.register_pytree_with_keys(Special, flatten_with_keys, unflatten, flatten)
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(static=("size",), eq=False, repr=False)
        class Special:
            def __init__(self, x, y, size):
                self.x = x
                self.y = y
                self.size = size
        """,
        (None,),
        "[Special(1.0, 2.0, 3)]",
    ),
    Case(
        "register_pytree_with_keys_class",
        """
        from jax.tree_util import GetAttrKey, register_pytree_with_keys_class


        @register_pytree_with_keys_class
        class Special:
            def __init__(self, x, y):
                self.x = x
                self.y = y

            def tree_flatten_with_keys(self):
                return (((GetAttrKey("x"), self.x), (GetAttrKey("y"), self.y)), None)

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children)
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Special:
            def __init__(self, x, y):
                self.x = x
                self.y = y
        """,
        (None,),
        "[Special(1.0, (2.0, 3.0))]",
    ),
    Case(
        "a dataclass: the decorator replaces the registration above @dataclass",
        """
        import dataclasses

        import jax
        import jax.numpy as jnp
        from jax.tree_util import register_pytree_node_class


        @register_pytree_node_class
        @dataclasses.dataclass
        class GridArray:
            data: jax.Array
            offset: tuple
            step: float = 1.0

            def __post_init__(self):
                if not isinstance(self.offset, tuple):
                    raise TypeError("offset")

            def tree_flatten(self):
                return (self.data, self.step), (self.offset,)

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                data, step = children
                return cls(data, *aux_data, step=step)
        """,
        None,
        (None,),
        "[GridArray(jnp.ones(3), (0.5,)), GridArray(jnp.zeros(2), (0,), 2.0)]",
    ),
]


REWRITES += [
    Case(
        "keyword arguments in the constructor call, a single aux value",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Scaled:
            def __init__(self, values, *, scale):
                self.values = values
                self.scale = scale

            def tree_flatten(self):
                return (self.values,), self.scale

            @classmethod
            def tree_unflatten(cls, scale, children):
                (values,) = children
                return cls(values=values, scale=scale)
        """,
        None,
        (None,),
        "[Scaled(jax.numpy.arange(4.0), scale=2)]",
    ),
    Case(
        "__init__ through super().__init__ of an unregistered base",
        """
        import jax


        class Base:
            def __init__(self, weights):
                self.weights = weights


        @jax.tree_util.register_pytree_node_class
        class Layer(Base):
            def __init__(self, weights, size):
                super().__init__(weights)
                self.size = size

            def tree_flatten(self):
                return (self.weights,), (self.size,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])
        """,
        None,
        (None,),
        "[Layer(jax.numpy.ones(3), 3)]",
    ),
    Case(
        "a hierarchy: base and hand-registered subclass rewritten together",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Base:
            def __init__(self, weights):
                self.weights = weights

            def tree_flatten(self):
                return (self.weights,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        @jax.tree_util.register_pytree_node_class
        class WithBias(Base):
            def __init__(self, weights, bias, name):
                super().__init__(weights=weights)
                self.bias = bias
                self.name = name

            def tree_flatten(self):
                return (self.weights, self.bias), (self.name,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children, *aux)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Base:
            def __init__(self, weights):
                self.weights = weights


        @pytree_class(static=("name",), eq=False, repr=False)
        class WithBias(Base):
            def __init__(self, weights, bias, name):
                super().__init__(weights=weights)
                self.bias = bias
                self.name = name
        """,
        (None, None),
        "[Base(jax.numpy.ones(2)), WithBias(jax.numpy.ones(2), 1.0, 'b')]",
    ),
    Case(
        "a subclass inheriting flatten and unflatten, registered like its base",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Cost:
            def tree_flatten(self):
                return (), None

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                del aux_data
                return cls(*children)


        @jax.tree_util.register_pytree_node_class
        class Dot(Cost):
            def __call__(self, x, y):
                return x @ y


        @jax.tree_util.register_pytree_node_class
        class Zero(Cost): pass
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Cost:
            pass


        @pytree_class(eq=False, repr=False)
        class Dot(Cost):
            def __call__(self, x, y):
                return x @ y


        @pytree_class(eq=False, repr=False)
        class Zero(Cost): pass
        """,
        (None, None, None),
        "[Cost(), Dot(), Zero()]",
    ),
    Case(
        "tree_flatten kept where an abstract base declares it",
        """
        import abc

        import jax


        class Node(abc.ABC):
            @abc.abstractmethod
            def tree_flatten(self):
                ...


        @jax.tree_util.register_pytree_node_class
        class Leafy(Node):
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        """
        import abc

        import jax
        from pytreekit import pytree_class


        class Node(abc.ABC):
            @abc.abstractmethod
            def tree_flatten(self):
                ...


        @pytree_class(eq=False, repr=False)
        class Leafy(Node):
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None
        """,
        (None,),
        "[Leafy(jax.numpy.ones(2))]",
    ),
    Case(
        "methods other code calls are kept; the class's own __eq__ and __repr__ stay",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Box:
            def __init__(self, value):
                self.value = value

            def __eq__(self, other):
                return type(other) is Box and self.value is other.value

            __hash__ = object.__hash__

            def __repr__(self):
                return "Box(...)"

            def tree_flatten(self):
                return (self.value,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        def children_of(holder):
            return holder.box.tree_flatten()[0]
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class
        class Box:
            def __init__(self, value):
                self.value = value

            def __eq__(self, other):
                return type(other) is Box and self.value is other.value

            __hash__ = object.__hash__

            def __repr__(self):
                return "Box(...)"

            def tree_flatten(self):
                return (self.value,), None


        def children_of(holder):
            return holder.box.tree_flatten()[0]
        """,
        (None,),
        "[Box(jax.numpy.ones(2))]",
    ),
    Case(
        "--adopt-dunders: pytreekit's __eq__ and __repr__",
        """
        from jax.tree_util import register_pytree_node_class


        @register_pytree_node_class
        class Point:
            def __init__(self, x, n):
                self.x = x
                self.n = n

            def tree_flatten(self):
                return (self.x,), (self.n,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(static=("n",))
        class Point:
            def __init__(self, x, n):
                self.x = x
                self.n = n
        """,
        (None,),
        "[Point(1.0, 2)]",
        args=("--adopt-dunders",),
    ),
    Case(
        "conversions and checks in __init__ (reported: unflatten no longer runs them; unsafe)",
        """
        import jax.numpy as jnp
        from jax import tree_util


        class Weights:
            def __init__(self, w, sizes):
                assert len(sizes) > 0, "no sizes"
                if jnp.ndim(w) > 2:
                    raise ValueError("w")
                self.w = jnp.asarray(w)
                self.sizes = tuple(sizes)


        tree_util.register_pytree_node(
            Weights,
            lambda w: ((w.w,), (w.sizes,)),
            lambda aux, children: Weights(children[0], aux[0]),
        )
        """,
        """
        import jax.numpy as jnp
        from pytreekit import pytree_class


        @pytree_class(static=("sizes",), eq=False, repr=False)
        class Weights:
            def __init__(self, w, sizes):
                assert len(sizes) > 0, "no sizes"
                if jnp.ndim(w) > 2:
                    raise ValueError("w")
                self.w = jnp.asarray(w)
                self.sizes = tuple(sizes)
        """,
        # the rebuild no longer converts w: unsafe (PTK205), applied with --unsafe
        ("PTK205",),
        "[Weights(jnp.ones((2, 2)), [2, 2])]",
        args=("--unsafe",),
    ),
    Case(
        "an import of pytreekit is extended, not repeated; other registrations keep theirs",
        """
        import jax
        from jax.tree_util import register_pytree_node_class
        from pytreekit import field


        @register_pytree_node_class
        class A:
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        def make():
            @register_pytree_node_class
            class Local:
                def tree_flatten(self):
                    return (), None

                @classmethod
                def tree_unflatten(cls, aux, children):
                    return cls()

            return Local
        """,
        """
        import jax
        from jax.tree_util import register_pytree_node_class
        from pytreekit import field, pytree_class


        @pytree_class(eq=False, repr=False)
        class A:
            def __init__(self, x):
                self.x = x


        def make():
            # TODO[pytreekit-migrate] PTK101: the registration is inside function 'make'
            @register_pytree_node_class
            class Local:
                def tree_flatten(self):
                    return (), None

                @classmethod
                def tree_unflatten(cls, aux, children):
                    return cls()

            return Local
        """,
        (None, "PTK101"),
        "[A(jax.numpy.ones(2))]",
    ),
]


@dataclass(frozen=True)
class Left:
    id: str
    before: str
    codes: tuple[str | None, ...]
    match: str  # in the reason of the first left registration
    args: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)


_POINT = """
        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y
"""

LEFT = [
    Left(
        "registration inside a function",
        """
        import jax

        def register(cls):
            jax.tree_util.register_pytree_node_class(cls)
            return cls
        """,
        ("PTK101",),
        "inside function 'register'",
    ),
    Left(
        "registration in __init_subclass__",
        """
        import jax

        class Base:
            def __init_subclass__(cls):
                jax.tree_util.register_pytree_node_class(cls)
        """,
        ("PTK101",),
        "inside function '__init_subclass__'",
    ),
    Left(
        "a registration call inside a larger expression",
        _POINT
        + """
        from jax.tree_util import register_pytree_node as register
        print(register(Point, lambda p: ((p.x,), p.y), lambda a, c: Point(*c)))
        """,
        ("PTK101",),
        "part of a larger statement",
    ),
    Left(
        "registration under an if",
        _POINT
        + """
        import jax
        if jax.__version__:
            jax.tree_util.register_pytree_node(
                Point, lambda p: ((p.x, p.y), None), lambda a, c: Point(*c)
            )
        """,
        ("PTK102",),
        "under a 'if' statement",
    ),
    Left(
        "a class from outside the scanned files",
        """
        import jax
        from elsewhere import Point

        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x, p.y), None), lambda a, c: Point(*c)
        )
        """,
        ("PTK103",),
        "Point is imported from outside the scanned files",
    ),
    Left(
        "flatten computes a child",
        _POINT
        + """
        import jax
        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x * 2, p.y), None), lambda a, c: Point(*c)
        )
        """,
        ("PTK104",),
        r"p.x \* 2",
    ),
    Left(
        "flatten branches",
        _POINT
        + """
        import jax
        def flatten(p):
            if p.y is None:
                return (p.x,), None
            return (p.x, p.y), None
        jax.tree_util.register_pytree_node(Point, flatten, lambda a, c: Point(*c))
        """,
        ("PTK104",),
        r"flatten branches or loops \(if p.y is None:",
    ),
    Left(
        "the children are one attribute holding a list",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Stack:
            def __init__(self, layers):
                self.layers = layers

            def tree_flatten(self):
                return self.layers, None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(list(children))
        """,
        ("PTK104",),
        "self.layers as children",
    ),
    Left(
        "aux data is a dict",
        _POINT
        + """
        import jax
        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x,), {"y": p.y}), lambda a, c: Point(c[0], a["y"])
        )
        """,
        ("PTK105",),
        "a dict",
    ),
    Left(
        "flatten reads a property",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Celsius:
            def __init__(self, kelvin):
                self.kelvin = kelvin

            @property
            def celsius(self):
                return self.kelvin - 273.15

            def tree_flatten(self):
                return (self.celsius,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0] + 273.15)
        """,
        ("PTK106",),
        "celsius, which Celsius defines as a property",
    ),
    Left(
        "unflatten swaps the children",
        _POINT
        + """
        import jax
        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x, p.y), None), lambda a, c: Point(c[1], c[0])
        )
        """,
        ("PTK107",),
        r"flatten reads x into children\[0\], but unflatten's call stores children\[1\] there",
    ),
    Left(
        "unflatten builds another class",
        _POINT
        + """
        import jax
        class Other(Point):
            pass
        jax.tree_util.register_pytree_node(
            Other, lambda p: ((p.x, p.y), None), lambda a, c: Point(*c)
        )
        """,
        ("PTK107",),
        r"unflatten returns Point\(\*c\), not a new Other",
    ),
    Left(
        "__init__ sets an attribute flatten does not carry",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Cached:
            def __init__(self, x):
                self.x = x
                self._cache = {}

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK108",),
        "__init__ sets _cache, which flatten does not carry",
    ),
    Left(
        "__init__ sets an attribute on one path only",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Maybe:
            def __init__(self, x, y=None):
                self.x = x
                if y is not None:
                    self.y = y

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK108",),
        "sets attributes under a 'if' statement",
    ),
    Left(
        "__init__ calls a method that may set attributes",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Setup:
            def __init__(self, x):
                self.x = x
                self.setup()

            def setup(self):
                pass

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK108",),
        r"runs self.setup\(\)",
    ),
    Left(
        "__init__ transforms the argument",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Doubled:
            def __init__(self, x):
                self.x = 2 * x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK109",),
        r"__init__ stores 2 \* x in x",
    ),
    Left(
        "a class registered twice",
        _POINT
        + """
        import jax
        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x, p.y), None), lambda a, c: Point(*c)
        )
        jax.tree_util.register_pytree_node(
            Point, lambda p: ((p.x, p.y), None), lambda a, c: Point(*c)
        )
        """,
        ("PTK110", "PTK110"),
        "registered 2 times",
    ),
    Left(
        "a NamedTuple",
        """
        from typing import NamedTuple
        import jax

        class Pair(NamedTuple):
            a: float
            b: float

        jax.tree_util.register_pytree_node(
            Pair, lambda p: ((p.a, p.b), None), lambda a, c: Pair(*c)
        )
        """,
        ("PTK111",),
        "Pair is a NamedTuple",
    ),
    Left(
        "a class with a metaclass",
        """
        import abc
        import jax

        @jax.tree_util.register_pytree_node_class
        class Meta(metaclass=abc.ABCMeta):
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK112",),
        r"has a metaclass \(abc.ABCMeta\)",
    ),
    Left(
        "a class with __new__",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Interned:
            def __new__(cls, x):
                return super().__new__(cls)

            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK112",),
        "Interned defines __new__",
    ),
    Left(
        "a decorator applied after the registration",
        """
        import functools
        import jax

        @functools.total_ordering
        @jax.tree_util.register_pytree_node_class
        class Ordered:
            def __init__(self, x):
                self.x = x

            def __lt__(self, other):
                return self.x < other.x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK112",),
        "@functools.total_ordering is applied after the registration decorator",
    ),
    Left(
        "a static defaulting to a list",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Net:
            def __init__(self, w, sizes=[1, 2]):
                self.w = w
                self.sizes = sizes

            def tree_flatten(self):
                return (self.w,), (self.sizes,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])
        """,
        ("PTK114",),
        r"static sizes defaults to \[1, 2\], which is unhashable",
    ),
    Left(
        "a static given a list where the class is built",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Net:
            def __init__(self, w, sizes):
                self.w = w
                self.sizes = sizes

            def tree_flatten(self):
                return (self.w,), (self.sizes,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])

        net = Net(1.0, [3, 4])
        """,
        ("PTK114",),
        r"static sizes gets \[3, 4\] in mod \(Net\(1.0, \[3, 4\]\)\)",
    ),
    Left(
        "a base outside the scanned files",
        """
        import jax
        from somewhere import Base

        @jax.tree_util.register_pytree_node_class
        class Child(Base):
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
        """,
        ("PTK115",),
        "base Base of Child is not in the scanned files",
    ),
    Left(
        "flatten imported from another module",
        _POINT
        + """
        import jax
        from helpers import flatten_point
        jax.tree_util.register_pytree_node(Point, flatten_point, lambda a, c: Point(*c, 0))
        """,
        ("PTK116",),
        r"flatten \(flatten_point\) is not a function or lambda of this module",
    ),
    Left(
        "a hierarchy with a subclass that cannot be rewritten",
        """
        import jax

        @jax.tree_util.register_pytree_node_class
        class Base:
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)

        @jax.tree_util.register_pytree_node_class
        class Cached(Base):
            def __init__(self, x):
                super().__init__(x)
                self.cache = None
        """,
        ("PTK113", "PTK108"),
        r"its hand-registered subclass Cached is left \(PTK108\)",
    ),
]


@pytest.mark.parametrize("case", LEFT, ids=[case.id for case in LEFT])
def test_left_with_a_comment(case: Left, tmp_path: Path) -> None:
    before = _source(case.before, "")
    write(tmp_path, {"mod.py": before, **case.files})
    result = codemod(tmp_path, "mod.py", *case.files, "--report", "json", *case.args)
    assert result.code == 0, result.out + result.err
    entries = result.report["registrations"]
    assert tuple(entry["code"] for entry in entries) == case.codes
    first = next(entry for entry in entries if entry["code"])
    assert first["verdict"] == "left"
    assert re.search(case.match, first["reason"]), first["reason"]
    after = (tmp_path / "mod.py").read_text(encoding="utf-8")
    comments = [line.strip() for line in after.splitlines() if "TODO[pytreekit-migrate]" in line]
    assert [c.split(":")[0].split()[-1] for c in comments] == [c for c in case.codes if c]
    # a comment's lines: its first, then the continuation lines of its reason
    lines = after.splitlines()
    added: set[int] = set()
    for index, line in enumerate(lines):
        if "TODO[pytreekit-migrate]" in line or (
            index - 1 in added and line.strip().startswith("#   ")
        ):
            added.add(index)
    # nothing else changed: the comment lines are the only difference
    assert [line for i, line in enumerate(lines) if i not in added] == before.splitlines()
    # each comment is right above the registration it explains
    for index in added:
        if index + 1 not in added:
            below = lines[index + 1].strip()
            assert "register" in below or below.startswith("@")
    again = codemod(tmp_path, "mod.py", "--check")
    assert again.code == 0, again.out
    assert (tmp_path / "mod.py").read_text(encoding="utf-8") == after


# More forms the codemod follows, several per case (each still checked against the original).
REWRITES += [
    Case(
        "module-level lambdas, keyword arguments to the API, a line with two statements",
        """
        import typing
        from math import *

        import jax

        T = typing.TypeVar("T")


        class Box(typing.Generic[T]):
            def __init__(self, item: T, label: str) -> None:
                self.item = item
                self.label = label


        flatten_box = lambda b: ((b.item,), b.label)
        U = lambda label, children: Box(children[-1], label)
        x = 1; jax.tree_util.register_pytree_node(Box, flatten_func=flatten_box, unflatten_func=U)
        """,
        """
        import typing
        from math import *

        import jax
        from pytreekit import pytree_class

        T = typing.TypeVar("T")


        @pytree_class(static=("label",), eq=False, repr=False)
        class Box(typing.Generic[T]):
            def __init__(self, item: T, label: str) -> None:
                self.item = item
                self.label = label


        x = 1
        """,
        (None,),
        "[Box(jax.numpy.ones(2), 'a')]",
    ),
    Case(
        "flatten and unflatten given as the class's own static methods",
        """
        import jax


        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b

            @staticmethod
            def flatten(p): return (p.a, p.b), None

            @staticmethod
            def unflatten(aux, children):
                a, b = children
                return Pair(a, b)


        jax.tree_util.register_pytree_node(Pair, Pair.flatten, Pair.unflatten)
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b
        """,
        (None,),
        "[Pair(1.0, 2.0)]",
    ),
    Case(
        "a frozen dataclass with a ClassVar and field() defaults, on a dataclass base",
        """
        import dataclasses
        from typing import ClassVar

        import jax


        class Mixin:
            def describe(self):
                return type(self).__name__


        @dataclasses.dataclass(frozen=True)
        class Base(Mixin):
            origin: tuple = (0, 0)


        @jax.tree_util.register_pytree_node_class
        @dataclasses.dataclass(frozen=True)
        class Field(Base):
            kind: ClassVar[str] = "field"
            values: jax.Array = dataclasses.field(default=None)
            scale: float = dataclasses.field(default_factory=lambda: 1.0)

            def tree_flatten(self):
                return (self.values, self.scale), (self.origin,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(aux[0], *children)
        """,
        None,
        (None,),
        "[Field((1, 2), jax.numpy.arange(3.0)), Field(values=jax.numpy.ones(1), scale=2.0)]",
    ),
    Case(
        "__init__ with a docstring, annotations, tuple stores, locals, loops and calls",
        """
        import warnings

        import jax
        import jax.numpy as jnp


        def check(x):
            return x


        class Base:
            def __init__(self, w):
                super().__init__()
                self.w = w


        @jax.tree_util.register_pytree_node_class
        class Model(Base):
            def __init__(self, w, b, names=("w", "b")):
                \"\"\"A model.\"\"\"
                ...
                Base.__init__(self, w)
                for name in names:
                    last = check(name)
                if b is None:
                    warnings.warn("no bias")
                check(b)
                bias = jnp.asarray(b)
                self.b: jax.Array = bias
                self.names, self.count = tuple(names), 2

            def tree_flatten(self):
                return (self.w, self.b), (self.names, self.count)

            @classmethod
            def tree_unflatten(cls, aux, children):
                model = object.__new__(cls)
                model.w, model.b = children
                model.names, model.count = aux
                return model
        """,
        None,
        (None,),
        "[Model(jnp.ones(2), 0.5)]",
    ),
]


REWRITES += [
    Case(
        "C = register_pytree_node_class(C), a flatten function used elsewhere is kept",
        """
        import jax


        class Point:
            def __init__(self, x):
                self.x = x


        def flatten_point(p):
            return (p.x,), None


        def first(p):
            return flatten_point(p)[0][0]


        jax.tree_util.register_pytree_node(Point, flatten_point, lambda aux, c: Point(*c))


        class Other:
            def __init__(self, y):
                self.y = y

            def tree_flatten(self):
                return (self.y,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)


        Other = jax.tree_util.register_pytree_node_class(Other)
        """,
        """
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Point:
            def __init__(self, x):
                self.x = x


        def flatten_point(p):
            return (p.x,), None


        def first(p):
            return flatten_point(p)[0][0]


        @pytree_class(eq=False, repr=False)
        class Other:
            def __init__(self, y):
                self.y = y
        """,
        (None, None),
        "[Point(1.0), Other(2.0)]",
    ),
    Case(
        "a frozen dataclass with its own __init__ (object.__setattr__), pytreekit's dunders",
        """
        import dataclasses

        import jax


        @jax.tree_util.register_pytree_node_class
        @dataclasses.dataclass(init=False, frozen=True)
        class Boundary:
            values: jax.Array
            kind: str

            def __init__(self, values, kind="periodic"):
                object.__setattr__(self, "values", values)
                object.__setattr__(self, "kind", kind)

            def tree_flatten(self):
                return (self.values,), self.kind

            @classmethod
            def tree_unflatten(cls, kind, children):
                return cls(children[0], kind)
        """,
        None,
        (None,),
        "[Boundary(jax.numpy.ones(2)), Boundary(jax.numpy.zeros(3), 'dirichlet')]",
        args=("--adopt-dunders",),
    ),
    Case(
        "super().__init__ into a dataclass's generated __init__",
        """
        import dataclasses

        import jax


        @dataclasses.dataclass
        class Base:
            w: jax.Array
            size: int = 1


        @jax.tree_util.register_pytree_node_class
        class Layer(Base):
            def __init__(self, w, size):
                super().__init__(w, size)

            def tree_flatten(self):
                return (self.w,), (self.size,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0])
        """,
        None,
        (None,),
        "[Layer(jax.numpy.ones(3), 3)]",
    ),
]


_A = """
        @jax.tree_util.register_pytree_node_class
        class A:
            def __init__(self, x):
                self.x = x

            def tree_flatten(self):
                return (self.x,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)
"""
_A_AFTER = """
        class A:
            def __init__(self, x):
                self.x = x
"""

# The imports: pytree_class imported once, under another name when the module has its own.
REWRITES += [
    Case(
        "a module with its own pytree_class gets import pytreekit",
        '''
        """A module."""
        import jax


        def pytree_class(cls):
            return cls

        '''
        + _A,
        '''
        """A module."""
        import pytreekit


        def pytree_class(cls):
            return cls


        @pytreekit.pytree_class(eq=False, repr=False)'''
        + _A_AFTER,
        (None,),
        "[A(1.0)]",
    ),
    Case(
        "an import of pytreekit already there is used",
        """
        import jax

        import pytreekit
        from other import pytree_class

        """
        + _A,
        """
        import pytreekit
        from other import pytree_class


        @pytreekit.pytree_class(eq=False, repr=False)"""
        + _A_AFTER,
        (None,),
        "[A(1.0)]",
        files={"other.py": "def pytree_class(cls):\n    return cls\n"},
    ),
    Case(
        "a line of two imports loses one, and an import loses one of its names",
        """
        import jax.tree_util; from jax.tree_util import GetAttrKey, register_pytree_node_class

        __all__ = ["GetAttrKey"]

        """
        + _A.replace("@jax.tree_util.register_pytree_node_class", "@register_pytree_node_class")
        + _A.replace("class A", "class B"),
        """
        from jax.tree_util import GetAttrKey
        from pytreekit import pytree_class

        __all__ = ["GetAttrKey"]


        @pytree_class(eq=False, repr=False)"""
        + _A_AFTER
        + "\n        @pytree_class(eq=False, repr=False)"
        + _A_AFTER.replace("class A", "class B"),
        (None, None),
        "[A(1.0), B(2.0)]",
    ),
    Case(
        "pytree_class imported already; code before the imports",
        '''
        """A module."""
        LIMIT = 3
        import jax

        from pytreekit import pytree_class

        '''
        + _A,
        '''
        """A module."""
        LIMIT = 3

        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)'''
        + _A_AFTER,
        (None,),
        "[A(1.0)]",
    ),
    Case(
        "a module that starts with code gets the import at its top",
        """
        class Helper:
            pass

        import jax

        """
        + _A,
        """
        from pytreekit import pytree_class

        class Helper:
            pass


        @pytree_class(eq=False, repr=False)"""
        + _A_AFTER,
        (None,),
        "[A(1.0)]",
    ),
]


REWRITES += [
    Case(
        "register_pytree_node called on a dataclass",
        """
        import dataclasses

        import jax


        @dataclasses.dataclass
        class Sample:
            values: jax.Array
            label: str = "x"


        jax.tree_util.register_pytree_node(
            Sample, lambda s: ((s.values,), s.label), lambda label, c: Sample(c[0], label)
        )
        """,
        """
        import dataclasses

        import jax
        from pytreekit import pytree_class


        @pytree_class(static=("label",), eq=False, repr=False)
        @dataclasses.dataclass
        class Sample:
            values: jax.Array
            label: str = "x"
        """,
        (None,),
        "[Sample(jax.numpy.ones(2)), Sample(jax.numpy.zeros(1), 'y')]",
    ),
]


# The README's motivating pattern (issue 36): unflatten builds with __init__ and a dummy PRNG key,
# then stores the leaves over it; the aux holds sizes, read through a sub-module in Model.
DUMMY_KEY_BEFORE = """
    import jax
    import jax.numpy as jnp
    from jax.tree_util import register_pytree_node_class


    class Module:
        \"\"\"Your own base class.\"\"\"


    @register_pytree_node_class
    class Linear(Module):
        def __init__(self, key, in_features, out_features):
            self.in_features = in_features
            self.out_features = out_features
            key_w, key_b = jax.random.split(key)
            self.weights = jax.random.normal(key_w, (out_features, in_features))
            self.biases = jax.random.normal(key_b, (out_features,))

        def __call__(self, x):
            return x @ self.weights.T + self.biases

        def tree_flatten(self):
            return (self.weights, self.biases), (self.in_features, self.out_features)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            in_features, out_features = aux_data
            linear = cls(jax.random.key(0), in_features, out_features)  # a dummy key
            linear.weights, linear.biases = children
            return linear


    @register_pytree_node_class
    class Activation(Module):
        def __init__(self, fn=jnp.tanh):
            self.fn = fn

        def __call__(self, x):
            return self.fn(x)

        def tree_flatten(self):
            return (), (self.fn,)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*aux_data)


    @register_pytree_node_class
    class Model(Module):
        def __init__(self, key, in_features, out_features):
            self.linear = Linear(key, in_features, out_features)
            self.activation = Activation(jnp.tanh)

        def __call__(self, x):
            return self.activation(self.linear(x))

        def tree_flatten(self):
            children = (self.linear, self.activation)
            aux_data = (self.linear.in_features, self.linear.out_features)
            return children, aux_data

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            model = cls(jax.random.key(0), *aux_data)
            model.linear, model.activation = children
            return model
"""

DUMMY_KEY_AFTER = """
    import jax
    import jax.numpy as jnp
    from pytreekit import pytree_class


    class Module:
        \"\"\"Your own base class.\"\"\"


    @pytree_class(static=("in_features", "out_features"), eq=False, repr=False)
    class Linear(Module):
        def __init__(self, key, in_features, out_features):
            self.in_features = in_features
            self.out_features = out_features
            key_w, key_b = jax.random.split(key)
            self.weights = jax.random.normal(key_w, (out_features, in_features))
            self.biases = jax.random.normal(key_b, (out_features,))

        def __call__(self, x):
            return x @ self.weights.T + self.biases


    @pytree_class(static=("fn",), eq=False, repr=False)
    class Activation(Module):
        def __init__(self, fn=jnp.tanh):
            self.fn = fn

        def __call__(self, x):
            return self.fn(x)


    @pytree_class(eq=False, repr=False)
    class Model(Module):
        def __init__(self, key, in_features, out_features):
            self.linear = Linear(key, in_features, out_features)
            self.activation = Activation(jnp.tanh)

        def __call__(self, x):
            return self.activation(self.linear(x))
"""

_DUMMY_EXAMPLES = "[Model(jax.random.key(0), 3, 2), Linear(jax.random.key(1), 2, 4), Activation()]"

REWRITES += [
    Case(
        "the README's Linear/Model pair: a dummy key in unflatten, sizes read through a child",
        DUMMY_KEY_BEFORE,
        DUMMY_KEY_AFTER,
        (None, None, None),
        _DUMMY_EXAMPLES,
    ),
    Case(
        "dummy key passed by keyword, leaves stored with object.__setattr__ and by index",
        """
        import jax
        from jax import tree_util


        class Dense:
            def __init__(self, key, size):
                self.size = size
                self.kernel = jax.random.normal(key, (size, size))


        def _flatten(dense):
            return (dense.kernel,), dense.size


        def _unflatten(size, children):
            dense = Dense(key=jax.random.PRNGKey(0), size=size)
            object.__setattr__(dense, "kernel", children[0])
            return dense


        tree_util.register_pytree_node(Dense, _flatten, _unflatten)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(static=("size",), eq=False, repr=False)
        class Dense:
            def __init__(self, key, size):
                self.size = size
                self.kernel = jax.random.normal(key, (size, size))
        """,
        (None,),
        "[Dense(jax.random.PRNGKey(3), 2)]",
    ),
    Case(
        "tuple() as the aux is ()",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b

            def tree_flatten(self):
                return (self.a, self.b), tuple()

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b
        """,
        (None,),
        "[Pair(1.0, jax.numpy.ones(3))]",
    ),
    Case(
        "a literal () aux unpacked with cls(*children, *aux_data)",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b

            def tree_flatten(self):
                return (self.a, self.b), ()

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children, *aux_data)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b
        """,
        (None,),
        "[Pair(1.0, jax.numpy.ones(3))]",
    ),
    Case(
        "an empty aux dict {} is no settings",
        """
        import jax


        @jax.tree_util.register_pytree_node_class
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b

            def tree_flatten(self):
                return (self.a, self.b), {}

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children, **aux_data)
        """,
        """
        import jax
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Pair:
            def __init__(self, a, b):
                self.a = a
                self.b = b
        """,
        (None,),
        "[Pair(1.0, jax.numpy.ones(3))]",
    ),
    Case(
        "an extra keyword that only switches off checks in __init__",
        """
        import jax
        import jax.numpy as jnp


        @jax.tree_util.register_pytree_node_class
        class Positive:
            def __init__(self, values, scale, _perform_checks=True):
                if _perform_checks:
                    if jnp.any(values < 0):
                        raise ValueError("values must be positive")
                    if scale <= 0:
                        raise ValueError("scale must be positive")
                self.values = values
                self.scale = scale

            def tree_flatten(self):
                return (self.values, self.scale), None

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children, _perform_checks=False)
        """,
        """
        import jax.numpy as jnp
        from pytreekit import pytree_class


        @pytree_class(eq=False, repr=False)
        class Positive:
            def __init__(self, values, scale, _perform_checks=True):
                if _perform_checks:
                    if jnp.any(values < 0):
                        raise ValueError("values must be positive")
                    if scale <= 0:
                        raise ValueError("scale must be positive")
                self.values = values
                self.scale = scale
        """,
        (None,),
        "[Positive(jnp.arange(3.0), 2.0)]",
    ),
    Case(
        "an if whose every branch that does not raise sets the same attribute",
        """
        import jax
        import jax.numpy as jnp


        @jax.tree_util.register_pytree_node_class
        class Signal:
            def __init__(self, samples, rate):
                if rate is None:
                    raise ValueError("a rate is needed")
                elif isinstance(samples, list):
                    self.samples = jnp.asarray(samples)
                else:
                    self.samples = samples
                self.rate = rate

            def tree_flatten(self):
                return (self.samples,), (self.rate,)

            @classmethod
            def tree_unflatten(cls, aux_data, children):
                obj = object.__new__(cls)
                obj.samples = children[0]
                obj.rate = aux_data[0]
                return obj
        """,
        """
        import jax.numpy as jnp
        from pytreekit import pytree_class


        @pytree_class(static=("rate",), eq=False, repr=False)
        class Signal:
            def __init__(self, samples, rate):
                if rate is None:
                    raise ValueError("a rate is needed")
                elif isinstance(samples, list):
                    self.samples = jnp.asarray(samples)
                else:
                    self.samples = samples
                self.rate = rate
        """,
        (None,),
        "[Signal([1.0, 2.0], 44100), Signal(jnp.ones(2), 8000)]",
    ),
]


def _run(case: Case, tmp_path: Path, *extra: str) -> tuple[str, dict]:
    write(tmp_path, {"mod.py": _source(case.before, case.examples), **case.files})
    result = codemod(tmp_path, "mod.py", *case.files, "--report", "json", *case.args, *extra)
    assert result.code == 0, result.out + result.err
    return (tmp_path / "mod.py").read_text(encoding="utf-8"), result.report


@pytest.mark.parametrize("case", REWRITES, ids=[case.id for case in REWRITES])
def test_rewrite(case: Case, tmp_path: Path) -> None:
    original = tmp_path / "original"
    write(original, {"mod.py": _source(case.before, case.examples), **case.files})
    rewritten, report = _run(case, tmp_path)
    if case.after is not None:
        assert rewritten == _source(case.after, case.examples)
    codes = tuple(entry["code"] for entry in report["registrations"])
    assert codes == case.codes
    if not any(case.codes):
        assert "register_pytree" not in rewritten
    # the hand-registered class is the reference
    assert assert_same_pytrees(load(original / "mod.py"), load(tmp_path / "mod.py")) >= 1
    # a second run over its own output changes nothing
    again = codemod(tmp_path, "mod.py", "--check")
    assert again.code == 0, again.out
    assert (tmp_path / "mod.py").read_text(encoding="utf-8") == rewritten
