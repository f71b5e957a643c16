"""Static fields must be hashable: errors name the class and the field, before jit sees them."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pytreekit import field, pytree_class


@pytree_class
class Annotated:
    sizes: object = field(static=True)


@pytree_class(static=("sizes",))
class OwnInit:
    def __init__(self, sizes):
        self.sizes = sizes
        self.w = jnp.ones(1)


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ([1, 2], "a list \\(\\[1, 2\\]\\)"),
        ({"a": 1}, "a dict"),
        (np.ones(2), "an array .*numpy.ndarray"),
        (jnp.ones(2), "an array .*dtype float32 and shape \\(2,\\)"),
    ],
)
def test_unhashable_static_values_are_refused_at_construction(value, what):
    with pytest.raises(TypeError, match=rf"Annotated.sizes is a static field.*holds {what}"):
        Annotated(value)
    with pytest.raises(TypeError, match=rf"OwnInit.sizes is a static field.*holds {what}"):
        OwnInit(value)


def test_hashable_static_values_work_under_jit():
    a = Annotated((1, 2))
    assert jax.jit(lambda a: a)(a).sizes == (1, 2)


def test_a_base_classes_own_setattr_is_respected_and_not_used_on_rebuild():
    seen = []

    class Tracking:
        def __setattr__(self, name, value):
            seen.append(name)
            object.__setattr__(self, name, value)

    @pytree_class(static=("n",))
    class Tracked(Tracking):
        def __init__(self):
            self.n = 1
            self.w = jnp.ones(1)

    tracked = Tracked()
    assert seen == ["n", "w"]
    assert jax.tree_util.tree_map(lambda x: x * 2, tracked).n == 1
    assert seen == ["n", "w"]  # unflatten wrote storage directly


class Shaped(list):
    """Unhashable, with a shape but no dtype: not an array."""

    shape = (2,)


@pytest.mark.parametrize(
    ("value", "what", "advice"),
    [
        (
            np.ones(2),
            r"an array \(numpy\.ndarray of dtype float64 and shape \(2,\)\)",
            r"Arrays cannot be static: make the field non-static so it becomes a leaf, or store a "
            r"hashable Python value \(a tuple, an int\)\.$",
        ),
        (
            [1, 2],
            r"a list \(\[1, 2\]\)",
            r"Use a hashable value \(a tuple instead of a list, a frozen pytree class instead of "
            r"a mutable one\), or make the field non-static so it becomes part of the leaves\.$",
        ),
        (Shaped([1]), r"a test_static\.Shaped \(\[1\]\)", r"Use a hashable value"),
    ],
)
def test_the_message_describes_the_value_and_says_what_to_do(value, what, advice):
    with pytest.raises(TypeError) as info:
        Annotated(value)
    message = str(info.value)
    assert message.startswith(
        "Annotated.sizes is a static field, so its value must be hashable (it is stored in the "
        "treedef that jax.jit hashes), but it holds "
    )
    assert re.search(f"holds {what}\\. {advice}", message), message


def test_long_values_are_cut_short_in_the_message():
    with pytest.raises(TypeError, match=r"holds a list \(\[0, 1, 2, .{40,60}\)\. Use"):
        Annotated(list(range(100)))
