"""The codemod proves modules and hierarchies, not classes one by one: a rewrite is applied only
when every class of its hierarchy keeps its leaves, order and statics under pytreekit's field
rule (a class pytreekit treats as a dataclass takes its fields from annotations), so that no
rewritten module fails to import. And the README's motivating pattern, rewritten, trains alike."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from conftest import require

require("libcst")

from migrate_helpers import codemod, load, write  # noqa: E402
from test_migrate_rules import DUMMY_KEY_BEFORE  # noqa: E402

# Gate has no __init__: pytreekit makes it a dataclass without fields, and its subclasses follow
# it; ScaleGate's static would name no field (the HorqScaleGate), and Other cannot be
# rewritten at all (a dict aux). The whole hierarchy stays hand-registered, and imports.
GATES = """
    import jax
    from jax.tree_util import register_pytree_node_class


    @register_pytree_node_class
    class Gate:
        def tree_flatten(self):
            return (), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls()


    @register_pytree_node_class
    class ScaleGate(Gate):
        def __init__(self, parameter):
            self.parameter = parameter

        def tree_flatten(self):
            return (), (self.parameter,)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*aux)


    @register_pytree_node_class
    class Other(Gate):
        def __init__(self, weight, options):
            self.weight = weight
            self.options = options

        def tree_flatten(self):
            return (self.weight,), {"options": self.options}

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children, **aux)


    @register_pytree_node_class
    class Plain:
        def __init__(self, x):
            self.x = x

        def tree_flatten(self):
            return (self.x,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)


    def examples():
        return [ScaleGate(2), Other(jax.numpy.ones(2), "fast"), Plain(1.0)]
"""


def test_a_hierarchy_with_one_member_left_is_left_whole_and_the_module_imports(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"gates.py": GATES})
    result = codemod(tmp_path, "gates.py", "--report", "json")
    assert result.code == 0, result.out
    entries = {e["class"]: e for e in result.report["registrations"]}
    assert {name: e["code"] for name, e in entries.items()} == {
        "Gate": "PTK113",
        "ScaleGate": "PTK108",
        "Other": "PTK105",
        "Plain": None,  # another hierarchy: rewritten
    }
    assert entries["Gate"]["reason"].startswith("its hand-registered subclass ScaleGate is left")
    assert re.match(
        r"pytreekit would take ScaleGate's fields from annotations \(Gate has no __init__ of "
        r"its own or inherited, and Gate's rewrite decides for its subclasses\), and there are "
        r"none",
        entries["ScaleGate"]["reason"],
    )
    module = load(tmp_path / "gates.py")  # imports: nothing of the hierarchy was rewritten
    for instance in module.examples():
        flat, treedef = jax.tree_util.tree_flatten(instance)
        assert type(jax.tree_util.tree_unflatten(treedef, flat)) is type(instance)


def test_a_dataclass_without_annotations_is_not_rewritten(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "gate.py": """
                import dataclasses

                import jax


                @jax.tree_util.register_pytree_node_class
                @dataclasses.dataclass
                class Gate:
                    def __init__(self, parameter):
                        self.parameter = parameter

                    def tree_flatten(self):
                        return (self.parameter,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """
        },
    )
    before = (tmp_path / "gate.py").read_text()
    result = codemod(tmp_path, "gate.py", "--report", "json")
    [entry] = result.report["registrations"]
    assert entry["code"] == "PTK108"
    assert "(Gate is a dataclass)" in entry["reason"]
    assert "the rewrite would carry no leaves (flatten carries parameter)" in entry["reason"]
    after = (tmp_path / "gate.py").read_text()
    added = [line for line in after.splitlines() if line.startswith(("# TODO", "#   "))]
    assert [line for line in after.splitlines() if line not in added] == before.splitlines()
    assert "the rewrite would carry no leaves" in " ".join(added)


def test_a_subclass_of_a_left_base_is_left_with_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "layers.py": """
                import jax


                @jax.tree_util.register_pytree_node_class
                class Base:
                    def __init__(self, x, options):
                        self.x = x
                        self.options = options

                    def tree_flatten(self):
                        return (self.x,), {"options": self.options}

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children, **aux)


                @jax.tree_util.register_pytree_node_class
                class Child(Base):
                    def __init__(self, x):
                        self.x = x

                    def tree_flatten(self):
                        return (self.x,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """
        },
    )
    entries = codemod(tmp_path, "layers.py", "--report", "json").report["registrations"]
    assert [(e["class"], e["code"]) for e in entries] == [("Base", "PTK105"), ("Child", "PTK113")]
    assert entries[1]["reason"] == (
        "its hand-registered base Base is left (PTK105), and a hierarchy is rewritten whole or "
        "not at all"
    )


def test_every_reason_is_given_at_once_decisive_first_with_where(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "model.py": """
                import jax


                @jax.tree_util.register_pytree_node_class
                class Model:
                    def __init__(self, w, options):
                        self.w = w * 2
                        self.options = options
                        self.cache = {}

                    def tree_flatten(self):
                        return (self.w,), {"options": self.options}  # settings

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children, **aux)
            """
        },
    )
    result = codemod(tmp_path, "model.py", "--report", "json")
    [entry] = result.report["registrations"]
    reasons = entry["reasons"]
    assert [r["code"] for r in reasons] == ["PTK105", "PTK108"]
    assert reasons[0]["reason"] == entry["reason"]
    assert reasons[1]["reason"] == "__init__ sets cache, which flatten does not carry"
    # where: file:line:col of the code each reason names, quoted without its comment
    assert (reasons[0]["line"], reasons[0]["column"]) == (12, 27)
    assert reasons[0]["excerpt"] == '{"options": self.options}'
    text = codemod(tmp_path, "model.py", "--check").out  # a line lower: the comment above
    assert "    also PTK108: __init__ sets cache, which flatten does not carry" in text
    assert '    PTK105 at model.py:13:27: {"options": self.options}' in text


def test_the_readme_pair_trains_alike_for_100_steps(tmp_path: Path) -> None:
    source = textwrap.dedent(DUMMY_KEY_BEFORE).lstrip("\n")
    write(tmp_path / "before", {"model.py": source})
    shutil.copytree(tmp_path / "before", tmp_path / "after")
    result = codemod(tmp_path / "after", "model.py")
    assert result.code == 0 and "3 rewritten" in result.out
    after_text = (tmp_path / "after" / "model.py").read_text()
    assert after_text.count("@pytree_class") == 3 and "register_pytree" not in after_text
    # 3 decorators and the pairs' lines deleted, nothing else
    assert len(source.splitlines()) - len(after_text.splitlines()) >= 19

    def losses(module: object) -> list[float]:
        model = module.Model(jax.random.key(0), 3, 2)  # type: ignore[attr-defined]
        data, target = jnp.ones((8, 3)), jnp.zeros((8, 2))

        def loss(model: object) -> jax.Array:
            return jnp.mean((model(data) - target) ** 2)  # type: ignore[operator]

        @jax.jit
        def step(model: object) -> tuple[object, jax.Array]:
            value, grads = jax.value_and_grad(loss)(model)
            return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads), value

        found = []
        for _ in range(100):
            model, value = step(model)
            found.append(float(value))
        return found

    before, after = load(tmp_path / "before" / "model.py"), load(tmp_path / "after" / "model.py")
    assert losses(before) == losses(after)
    assert losses(after)[-1] < losses(after)[0]


def test_a_decorator_that_only_sets_attributes_is_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/tags.py": """
                def tagged(cls):
                    \"\"\"Marks a layer for the logs.\"\"\"
                    cls.kind = "layer"
                    setattr(cls, "logged", True)
                    return cls


                def wrapped(cls):
                    return type(cls.__name__, (cls,), {})
            """,
            "pkg/layers.py": """
                import jax

                from .tags import tagged, wrapped


                @tagged
                @jax.tree_util.register_pytree_node_class
                class Dense:
                    def __init__(self, w):
                        self.w = w

                    def tree_flatten(self):
                        return (self.w,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)


                @wrapped
                @jax.tree_util.register_pytree_node_class
                class Odd:
                    def __init__(self, w):
                        self.w = w

                    def tree_flatten(self):
                        return (self.w,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """,
        },
    )
    entries = codemod(tmp_path, "pkg", "--report", "json", "--check").report["registrations"]
    assert [(e["class"], e["code"]) for e in entries] == [("Dense", None), ("Odd", "PTK112")]
    assert entries[1]["reason"].startswith("@wrapped is applied after the registration decorator")
    declared = codemod(
        tmp_path, "pkg", "--report", "json", "--transparent-decorator", "pkg.tags.wrapped"
    )
    assert [e["code"] for e in declared.report["registrations"]] == [None, None]
    layers = (tmp_path / "pkg" / "layers.py").read_text()
    assert "@tagged\n@pytree_class(eq=False, repr=False)\nclass Dense:" in layers


def test_a_helper_s_registration_names_the_classes_it_registers(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "helpers.py": """
                import jax


                def register(cls):
                    jax.tree_util.register_pytree_node(
                        cls, lambda o: ((o.x,), None), lambda aux, c: cls(*c)
                    )
                    return cls


                @register
                class A:
                    def __init__(self, x):
                        self.x = x


                class B:
                    def __init__(self, x):
                        self.x = x


                register(B)
            """
        },
    )
    result = codemod(tmp_path, "--check", "--report", "json", "helpers.py")
    [entry] = result.report["registrations"]
    assert (entry["class"], entry["classes"], entry["code"]) == ("cls", ["A", "B"], "PTK101")
    assert entry["reason"] == (
        "the registration is inside function 'register', which registers A, B: decorate each "
        "with @pytree_class instead"
    )
    text = codemod(tmp_path, "--check", "helpers.py").out
    assert text.startswith("helpers.py:5:5: cls [registers A, B] (register_pytree_node): left")


def test_a_branch_that_only_warns_does_not_count_as_raising(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "signal.py": """
                import warnings

                import jax


                @jax.tree_util.register_pytree_node_class
                class Signal:
                    def __init__(self, samples):
                        if samples is None:
                            warnings.warn("no samples")
                        else:
                            self.samples = samples

                    def tree_flatten(self):
                        return (self.samples,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """
        },
    )
    [entry] = codemod(tmp_path, "--check", "--report", "json", ".").report["registrations"]
    assert entry["code"] == "PTK108"  # on the warning's path, samples is never set
    assert "sets attributes under a 'if' statement" in entry["reason"]


def test_a_conversion_in_an_object_new_unflatten_is_unsafe(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "state.py": """
                import jax
                import jax.numpy as jnp


                class State:
                    def __init__(self, position):
                        self.position = jnp.asarray(position)


                def _flatten(state):
                    return (state.position,), None


                def _unflatten(aux, children):
                    state = object.__new__(State)
                    state.position = jnp.asarray(children[0])
                    return state


                jax.tree_util.register_pytree_node(State, _flatten, _unflatten)
            """
        },
    )
    [entry] = codemod(tmp_path, "--report", "json", ".").report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK205")
    assert entry["reason"].startswith("unflatten converted (jnp.asarray(position))")
    [applied] = codemod(tmp_path, "--unsafe", "--report", "json", ".").report["registrations"]
    assert (applied["verdict"], applied["code"]) == ("rewritten", "PTK205")
    module = load(tmp_path / "state.py")
    leaves = jax.tree_util.tree_leaves(module.State([1.0, 2.0]))
    assert len(leaves) == 1 and isinstance(leaves[0], jax.Array)


def _grid(decorator: str, sub_decorator: str) -> str:
    return f"""
        import dataclasses

        import jax


        @jax.tree_util.register_pytree_node_class
        {decorator}
        class Grid:
            w: jax.Array
            n: int = 1

            def tree_flatten(self):
                return (self.w,), (self.n,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], *aux)


        @jax.tree_util.register_pytree_node_class
        {sub_decorator}
        class Sub(Grid):
            extra: float = 0.0

            def tree_flatten(self):
                return (self.w, self.extra), (self.n,)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(children[0], aux[0], children[1])


        def examples():
            return [Grid(jax.numpy.ones(2), 3), Sub(jax.numpy.ones(2), 3, 1.5)]
    """


@pytest.mark.parametrize(
    ("decorator", "reason"),
    [
        # rewritten, Sub's automatic set-up ran before its @dataclass froze it: import failed
        ("@dataclasses.dataclass(frozen=True)", "is a @dataclass(frozen=True) in a hierarchy"),
        # rewritten, Sub could not be built ('extra' is read-only)
        ("@dataclasses.dataclass(slots=True)", "is a @dataclass(slots=True) in a hierarchy"),
    ],
)
def test_dataclass_forms_whose_rewrite_breaks_are_left(
    decorator: str, reason: str, tmp_path: Path
) -> None:
    write(tmp_path, {"grid.py": _grid(decorator, decorator)})
    result = codemod(tmp_path, "--report", "json", "grid.py")
    entries = result.report["registrations"]
    assert [e["code"] for e in entries] == ["PTK112", "PTK112"]
    assert all(reason in e["reason"] for e in entries)
    module = load(tmp_path / "grid.py")
    for instance in module.examples():
        flat, treedef = jax.tree_util.tree_flatten(instance)
        jax.tree_util.tree_unflatten(treedef, flat)


def test_a_plain_dataclass_hierarchy_is_rewritten_and_imports(tmp_path: Path) -> None:
    source = _grid("@dataclasses.dataclass", "@dataclasses.dataclass")
    write(tmp_path, {"grid.py": source, "before/grid.py": source})
    entries = codemod(tmp_path, "--report", "json", "grid.py").report["registrations"]
    assert [e["code"] for e in entries] == [None, None]
    after, before = load(tmp_path / "grid.py"), load(tmp_path / "before" / "grid.py")
    for one, two in zip(before.examples(), after.examples(), strict=True):
        assert len(jax.tree_util.tree_leaves(one)) == len(jax.tree_util.tree_leaves(two))
