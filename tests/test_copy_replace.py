"""``copy.replace`` (Python 3.13's ``__replace__`` protocol) on every pytree class, with
``pytreekit.replace``'s semantics: no ``__init__``, static values checked, unknown names named."""

import copy
import dataclasses

import jax
import jax.numpy as jnp
import pytest
from _versions import needs_copy_replace
from catalogue import CATALOGUE, same

import pytreekit
from pytreekit import field, pytree_class

pytestmark = needs_copy_replace


@pytest.mark.parametrize("kind", sorted(CATALOGUE))
def test_copy_replace_agrees_with_pytreekit_replace_on_the_catalogue(kind):
    example = CATALOGUE[kind]()
    assert same(copy.replace(example), pytreekit.replace(example))
    leaves = jax.tree_util.tree_leaves_with_path(example)
    if not leaves:
        return
    (first, *_), leaf = leaves[0]
    changes = {first.name: jax.tree.map(lambda a: a + 1, getattr(example, first.name))}
    replaced = copy.replace(example, **changes)
    assert replaced is not example and same(replaced, pytreekit.replace(example, **changes))
    assert jnp.array_equal(jax.tree_util.tree_leaves(replaced)[0], leaf + 1)
    assert same(example, CATALOGUE[kind]())  # unchanged


@pytree_class(static=("size",))
class Counted:
    calls = 0

    def __init__(self, w, size=2):
        type(self).calls += 1
        self.w = w
        self.size = size


@pytree_class(frozen=True)
class Converted:
    w: jax.Array = field(converter=jnp.asarray)
    name: str = field(static=True, default="c")

    def __post_init__(self):
        type(self).posts = getattr(type(self), "posts", 0) + 1


def test_copy_replace_never_calls_init_post_init_or_converters():
    counted = Counted(jnp.ones(2))
    assert copy.replace(counted, w=[1.0]).w == [1.0] and Counted.calls == 1
    converted = Converted([1.0])
    posts = Converted.posts
    replaced = copy.replace(converted, w=[2.0])  # a list stays a list: no converter
    assert replaced.w == [2.0] and Converted.posts == posts and replaced.name == "c"


def test_copy_replace_checks_static_values_and_names_unknown_fields():
    counted = Counted(jnp.ones(2))
    with pytest.raises(TypeError, match=r"Counted\.size is a static field"):
        copy.replace(counted, size=[3])
    with pytest.raises(TypeError, match=r"Converted has no field 'weights'"):
        copy.replace(Converted(jnp.ones(1)), weights=jnp.ones(1))
    assert counted.size == 2


def test_a_dataclass_decorated_keeps_no_init_call_and_a_replace_of_ones_own_stays():
    @pytree_class
    @dataclasses.dataclass
    class Data:
        w: jax.Array

        def __post_init__(self):
            self.w = self.w * 2  # dataclasses' own __replace__ would run it again

    assert copy.replace(Data(jnp.ones(1)), w=jnp.ones(1)).w.tolist() == [1.0]

    @pytree_class
    class Own:
        w: jax.Array

        def __replace__(self, /, **changes):
            return "mine"

    assert copy.replace(Own(jnp.ones(1))) == "mine"
