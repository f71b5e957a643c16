"""Defects the thirteenth attack found in the artifact loaders' first use: a state check quadratic
in the state's names; a tensor's hook attribute besides ``_backward_hooks``; code generated for a
layout an artifact taught; a ``Callable`` reading that took a class named only as an instance's
type. Each test fails without its fix."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import require, run_fresh

from pytreekit._artifacts.static_data import StaticDataError, state_refusal

FIELDS = "__pytreekit_fields__"


# -- F6. a state's names are checked in time linear in their number ------------------------------


class _TooMany(Exception):
    pass


def test_a_state_of_sixty_thousand_names_is_checked_with_a_linear_number_of_comparisons():
    count = 60_000
    budget = [4 * count]  # one comparison a key and one a name, with room; a quadratic check: 1.8e9

    class Counted(str):
        """A key counting the comparisons made with it; it stops a quadratic check early."""

        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            budget[0] -= 1
            if budget[0] < 0:
                raise _TooMany
            return str.__eq__(self, other)

    names = tuple(f"f{i}" for i in range(count))
    state: dict[Any, Any] = {Counted(name): None for name in names}
    state[FIELDS] = (names, (False,) * count)
    assert state_refusal(state) is None
    state["other"] = None
    assert state_refusal(state) == (
        "holds a value under 'other', which is not a field its layout names"
    )


# -- F2. every hook attribute of a tensor is looked into, and a hook refused ---------------------

# torch.save writes no hooks: the attacker writes torch's own allowed rebuild call by hand.
WRITE_HOOKED = """
import _codecs, collections, pickle, sys, types
import torch, torch._utils as U
import attack13_fixtures as fx

def save(name, hooks, state):
    class P(pickle.Pickler):
        def reducer_override(self, obj):
            if type(obj) is torch.nn.Parameter:
                return (U._rebuild_parameter_with_state, (obj.data, True, hooks, state))
            return NotImplemented
    model = fx.Lin(torch.nn.Parameter(torch.ones(2)))
    torch.save(model, f"{sys.argv[1]}/{name}.pt",
               pickle_module=types.SimpleNamespace(Pickler=P, __name__="pickle"))

save("honest", collections.OrderedDict(), {})
save("backward", collections.OrderedDict({0: _codecs.encode}), {})
save("post_accumulate", collections.OrderedDict(),
     {"_post_accumulate_grad_hooks": {0: _codecs.encode}})
save("post_accumulate_class", collections.OrderedDict(),
     {"_post_accumulate_grad_hooks": {0: fx.Lin}})
"""

LOAD_HOOKED = """
import json, sys, torch
import attack13_fixtures as fx

out = {}
for name in ("honest", "backward", "post_accumulate", "post_accumulate_class"):
    try:
        with torch.serialization.safe_globals([fx.Lin]):
            model = torch.load(f"{sys.argv[1]}/{name}.pt", weights_only=True)
    except Exception as error:
        out[name] = f"{type(error).__name__}: {error}"
        continue
    model(torch.ones(2)).sum().backward()
    out[name] = "loaded"
print(json.dumps(out))
"""


def test_a_parameters_post_accumulate_grad_hooks_in_a_checkpoint_are_refused(
    tmp_path: Path,
) -> None:
    require("torch")
    run_fresh(WRITE_HOOKED, tmp_path)
    out = json.loads(run_fresh(LOAD_HOOKED, tmp_path).splitlines()[-1])
    assert out.pop("honest") == "loaded"
    for name, attribute in (
        ("backward", "_backward_hooks"),
        ("post_accumulate", "_post_accumulate_grad_hooks"),  # was loaded: backward() called it
        ("post_accumulate_class", "_post_accumulate_grad_hooks"),
    ):
        assert out[name].startswith(
            "StaticDataError: torch.load(weights_only=True) cannot restore a "
            f"attack13_fixtures.Lin: the field w holds a tensor whose {attribute} holds hooks"
        ), out[name]


def test_every_hook_attribute_of_a_tensor_is_read_and_a_hook_refused():
    torch = require("torch")
    import attack13_fixtures as fx

    import pytreekit._artifacts.export as export

    def state(w: Any) -> dict[str, Any]:
        return {"w": w, FIELDS: (("w",), (False,))}

    export.check_restricted_state(fx.Lin, state(torch.nn.Parameter(torch.ones(2))))
    hooked = torch.nn.Parameter(torch.ones(2))
    hooked._post_accumulate_grad_hooks = {0: len}  # a safe reference: still a hook
    with pytest.raises(StaticDataError, match="whose _post_accumulate_grad_hooks holds hooks"):
        export.check_restricted_state(fx.Lin, state(hooked))

    class Later(torch.Tensor):  # a C attribute holding hooks a later torch may add: read too
        pass

    Later._later_hooks = vars(torch._C.TensorBase)["_backward_hooks"]  # type: ignore[attr-defined]
    later = torch.ones(2).as_subclass(Later)
    later._backward_hooks = collections.OrderedDict({0: len})
    with pytest.raises(StaticDataError, match="whose _later_hooks holds hooks"):
        export.check_restricted_state(fx.Lin, state(later))


# -- F5. no code is generated for a primary layout of more fields than a class has ---------------

WRITE_WIDE = """
import sys, jax, jax.numpy as jnp
from jax import export
import attack13_layouts as fx

wide = fx.Net(None, **{f"q{i}": None for i in range(int(sys.argv[2]))})
data = export.export(jax.jit(lambda x, t: x))(jnp.ones(1), wide).serialize()
open(f"{sys.argv[1]}/wide.bin", "wb").write(data)
"""

LOAD_WIDE = """
import json, sys, jax, jax.numpy as jnp
from jax import export
import attack13_layouts as fx
from pytreekit._classes.nodes import _GENERIC

exported = export.deserialize(bytearray(open(f"{sys.argv[1]}/wide.bin", "rb").read()))
tree = exported.in_tree  # ((x, the wide Net), {})
loaded = jax.tree.unflatten(tree, [jnp.ones(1)] * tree.num_leaves)[0][1]
spec = fx.Net.__pytreekit_spec__
net, small = fx.Net(jnp.ones(1)), fx.Small(jnp.ones(2))
own = jax.tree.leaves(net)[0].tolist()
jax.tree.leaves(small)
print(json.dumps({
    "primary": len(spec.table.primary.names),  # the artifact's layout, learnt first
    "generic": spec.nodes.flatten.__code__ is _GENERIC["flatten"].__code__,
    "loaded": [type(loaded).__name__, loaded.q7],
    "own leaves": own,
    "small generated": small.__pytreekit_spec__.nodes.flatten.__code__
    is not _GENERIC["flatten"].__code__,
}))
"""


def test_a_layout_of_thousands_of_fields_learnt_first_from_an_artifact_gets_no_code(
    tmp_path: Path,
) -> None:
    names = 5_000
    run_fresh(WRITE_WIDE, tmp_path, names)
    out = json.loads(run_fresh(LOAD_WIDE, tmp_path).splitlines()[-1])
    assert out == {
        "primary": names + 2,
        "generic": True,  # was code generated and compiled for 5,002 fields
        "loaded": ["Net", None],
        "own leaves": [1.0],
        "small generated": True,
    }


def test_a_primary_layout_beyond_the_bound_is_served_by_the_generic_path():
    import jax

    from pytreekit import pytree_class
    from pytreekit._classes.nodes import _GENERIC, MAX_GENERATED_FIELDS

    @pytree_class
    class Wide:
        def __init__(self, **values: Any) -> None:
            for name, value in values.items():
                setattr(self, name, value)

    for count, generated in ((MAX_GENERATED_FIELDS + 1, False), (3, True)):
        cls = Wide if not generated else pytree_class(type("Narrow", (Wide,), {}))
        obj = cls(**{f"f{i}": float(i) for i in range(count)})  # its layout: the primary
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        assert leaves == [float(i) for i in range(count)]
        assert jax.tree_util.tree_unflatten(treedef, leaves).f2 == 2.0
        nodes = cls.__pytreekit_spec__.nodes  # type: ignore[attr-defined]
        for name in ("flatten", "unflatten"):
            assert (getattr(nodes, name).__code__ is not _GENERIC[name].__code__) is generated


# -- F1. a class standing for its instances is not a Callable's function ------------------------

# The writer before the fix wrote these: its Callable reading admitted any class.
WRITE_CLASSES = """
import functools, sys, jax, jax.numpy as jnp
from jax import export
import attack13_callables as fx
import pytreekit._artifacts.static_data as static_data

static_data._class_called = lambda args, value: True
for name, model in {
    "honest": fx.Model(jnp.ones(1)),
    "class": fx.Model(jnp.ones(1), schedule=fx.Warmup),
    "subclass": fx.Model(jnp.ones(1), schedule=fx.Checkpointing),
    "partial": fx.Model(jnp.ones(1), schedule=functools.partial(fx.Checkpointing, steps=3)),
    "protocol": fx.Model(jnp.ones(1), act=fx.Swish),
    "factory": fx.Made(jnp.ones(1), make=fx.Checkpointing, kind=fx.Checkpointing),
}.items():
    data = export.export(jax.jit(lambda m: m.w))(model).serialize()
    open(f"{sys.argv[1]}/{name}.bin", "wb").write(data)
"""

LOAD_CLASSES = """
import json, sys, jax, jax.numpy as jnp
from jax import export
import pytreekit
import attack13_callables as fx

out = {}
for name in ("honest", "class", "subclass", "partial", "protocol", "factory"):
    data = bytearray(open(f"{sys.argv[1]}/{name}.bin", "rb").read())
    try:
        tree = export.deserialize(data).in_tree
        model = jax.tree.unflatten(tree, [jnp.ones(1)] * tree.num_leaves)[0][0]
    except ValueError as error:
        out[name] = f"{type(error).__name__}: {error}"
        continue
    out[name] = type(model).__name__
print(json.dumps({**out, "called": fx.CALLED}))
"""


def test_a_class_standing_for_its_instances_is_refused_as_a_callables_function(
    tmp_path: Path,
) -> None:
    run_fresh(WRITE_CLASSES, tmp_path)
    out = json.loads(run_fresh(LOAD_CLASSES, tmp_path).splitlines()[-1])
    assert out.pop("honest") == "Model"
    assert out.pop("factory") == "Made"  # the Callable's result, and type[...], name the class
    assert out.pop("called") == []
    for name, (field_name, found) in {
        "class": ("schedule", "Warmup"),  # were loaded: the model's call ran a constructor
        "subclass": ("schedule", "Checkpointing"),
        "partial": ("schedule", "Checkpointing"),
        "protocol": ("act", "Swish"),
    }.items():
        assert out[name].startswith(
            f"StaticDataError: jax.export cannot read the serialized treedef of Model: the static "
            f"field {field_name} is declared "
        ), out[name]
        # Loading says why, and never tells the victim to declare what would let it in.
        assert "classes that are safe references or that the Callable's result names" in out[name]
        assert "declare the field" not in out[name] and f"type[{found}]" not in out[name]


def test_the_callable_reading_admits_a_class_by_reference_or_result_only():
    import functools
    from collections.abc import Callable

    import attack13_callables as fx
    import jax.numpy as jnp
    from jax import export

    import pytreekit
    from pytreekit._artifacts.static_data import admits_value

    union = fx.Warmup | Callable[[int], float]
    assert admits_value(union, fx.Warmup())
    assert admits_value(union, jnp.tanh)
    assert admits_value(union, float)  # a safe reference
    for refused in (fx.Warmup, fx.Checkpointing, functools.partial(fx.Checkpointing, steps=3)):
        assert not admits_value(union, refused)
        assert admits_value(fx.Warmup | Callable[..., fx.Warmup], refused)
        assert admits_value(fx.Warmup | Callable[..., fx.Warmup | None], refused)
    assert not admits_value(fx.Warmup | Callable[..., Any], fx.Warmup)
    assert not admits_value(fx.Warmup | Callable[..., object], fx.Warmup)
    assert not admits_value(fx.Activation, fx.Swish)
    assert admits_value(fx.Activation, fx.Swish())
    assert admits_value(type[fx.Warmup] | Callable[[int], float], fx.Checkpointing)
    with pytest.raises(TypeError, match=r"declare the field type\[Checkpointing\] \| "):
        model = fx.Model(jnp.ones(1), schedule=fx.Checkpointing)  # pyright: ignore[reportArgumentType]
        export.export(jax_jit_w())(model).serialize()
    with pytreekit.safe_references([fx.Checkpointing]):  # allowed by the user: any field
        assert admits_value(union, fx.Checkpointing)


def jax_jit_w() -> Any:
    import jax

    return jax.jit(lambda model: model.w)


# torch.save writes the class itself: pytreekit's state holds what the field holds.
TORCH_PROTOCOL = """
import sys, torch
import attack13_fixtures as fx

path = f"{sys.argv[1]}/{{}}.pt"
if sys.argv[2] == "write":
    torch.save(fx.Layer(torch.ones(2)), path.format("honest"))
    torch.save(fx.Layer(torch.ones(2), act=fx.Swish), path.format("class"))
else:
    for name in ("honest", "class"):
        try:
            with torch.serialization.safe_globals([fx.Layer, fx.Swish]):
                layer = torch.load(path.format(name), weights_only=True)
            print(name, type(layer.act).__name__)
        except Exception as error:
            print(name, type(error).__name__, str(error).replace(chr(10), " "))
"""


def test_a_class_deriving_from_a_callback_protocol_is_refused_as_its_function_by_torch(
    tmp_path: Path,
) -> None:
    require("torch")
    run_fresh(TORCH_PROTOCOL, tmp_path, "write")
    honest, refused = run_fresh(TORCH_PROTOCOL, tmp_path, "read").splitlines()[-2:]
    assert honest == "honest Swish"
    assert refused.startswith(
        "class StaticDataError torch.load(weights_only=True) cannot restore a "
        "attack13_fixtures.Layer: the static field act is declared Activation"
    ), refused  # was loaded: the model's call ran Swish's constructor
    assert "classes that are safe references or that the Callable's result names" in refused
    assert "declare the field" not in refused
