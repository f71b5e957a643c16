"""Defects the codemod10 probe found (a base rewritten although a subclass is registered in a way
the codemod does not rewrite): each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import HAND_REGISTERED_BASE, by_class, codemod, python_in, write  # noqa: E402

# -- d1. a subclass registered by hand, however, keeps its base as it is -----------------------

# Each: the subclass's module after ``class Sub(Base)``'s line, and how the base's reason names
# the registration. ``setup()`` runs a registration made in a function.
SUBCLASS_REGISTERED = {
    "register_dataclass": (
        """
        import dataclasses
        import jax
        from base import Base


        @dataclasses.dataclass
        class Sub(Base):
            w: object
            v: object


        jax.tree_util.register_dataclass(Sub, data_fields=["w", "v"], meta_fields=[])
        """,
        "with jax.tree_util.register_dataclass",
    ),
    "register_dataclass_partial": (
        """
        import dataclasses
        import functools
        from jax import tree_util as jtu
        from base import Base


        @functools.partial(jtu.register_dataclass, data_fields=["w"], meta_fields=[])
        @dataclasses.dataclass
        class Sub(Base):
            w: object
        """,
        "with jax.tree_util.register_dataclass",
    ),
    "register_static": (
        """
        from jax.tree_util import register_static
        from base import Base


        @register_static
        class Sub(Base):
            def __hash__(self):
                return 0

            def __eq__(self, other):
                return True
        """,
        "with jax.tree_util.register_static",
    ),
    "under_if": (
        """
        import os
        import jax
        from base import Base


        class Sub(Base):
            def __init__(self, w, v):
                super().__init__(w)
                self.v = v


        if os.environ.get("NEVER_SET_CM10") is None:
            jax.tree_util.register_pytree_node(
                Sub, lambda s: ((s.w, s.v), None), lambda _, c: Sub(*c)
            )
        """,
        "is left (PTK102)",
    ),
    "in_function": (
        """
        import jax
        from base import Base


        class Sub(Base):
            def __init__(self, w, v):
                super().__init__(w)
                self.v = v


        def setup():
            jax.tree_util.register_pytree_node(
                Sub, lambda s: ((s.w, s.v), None), lambda _, c: Sub(*c)
            )
        """,
        "is left (PTK101)",
    ),
    "by_a_helper": (
        """
        import jax
        from base import Base


        def register(cls):
            jax.tree_util.register_pytree_node(
                cls, lambda s: ((s.w, s.v), None), lambda _, c: cls(*c)
            )
            return cls


        @register
        class Sub(Base):
            def __init__(self, w, v):
                super().__init__(w)
                self.v = v
        """,
        "is left (PTK101)",
    ),
}


@pytest.mark.parametrize("case", sorted(SUBCLASS_REGISTERED))
def test_a_base_whose_subclass_is_registered_otherwise_is_left_even_with_unsafe(
    tmp_path: Path, case: str
) -> None:
    subclass, named = SUBCLASS_REGISTERED[case]
    write(tmp_path, {"base.py": HAND_REGISTERED_BASE, "sub.py": subclass})
    before = (tmp_path / "base.py").read_bytes()
    result = codemod(tmp_path, "--unsafe", "--comments", "never", "--report", "json", ".")
    base = by_class(result)["Base"]
    assert (base["verdict"], base["code"]) == ("left", "PTK113"), base
    assert "subclass Sub (in sub)" in base["reason"] and named in base["reason"], base["reason"]
    assert (tmp_path / "base.py").read_bytes() == before
    # the subclass's own registration still runs once: no "Duplicate custom PyTreeDef"
    run = python_in(tmp_path, "import sub; getattr(sub, 'setup', lambda: None)()")
    assert run.returncode == 0, run.stderr


def test_a_subclass_registered_with_register_dataclass_in_a_third_module_is_seen(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "base.py": HAND_REGISTERED_BASE,
            "sub.py": """
                from base import Base


                class Sub(Base):
                    pass
                """,
            "setup_trees.py": """
                import jax
                from sub import Sub as Registered

                jax.tree_util.register_dataclass(Registered, data_fields=[], meta_fields=[])
                """,
        },
    )
    result = codemod(tmp_path, "--check", "--unsafe", "--report", "json", ".")
    base = by_class(result)["Base"]
    assert (base["verdict"], base["code"]) == ("left", "PTK113"), base
    assert "register_dataclass (in setup_trees)" in base["reason"], base["reason"]


def test_a_subclass_a_loop_may_register_keeps_its_base(tmp_path: Path) -> None:
    """A registration the codemod cannot tie to a class (``for c in (Sub,)``), in a module that
    names the subclass: it may register it, so the base is not rewritten."""
    write(
        tmp_path,
        {
            "base.py": HAND_REGISTERED_BASE,
            "sub.py": """
                from base import Base


                class Sub(Base):
                    pass
                """,
            "setup_trees.py": """
                import jax
                from sub import Sub

                for _cls in (Sub,):
                    jax.tree_util.register_pytree_node(
                        _cls, lambda s: ((s.w,), None), lambda _, c: Sub(*c)
                    )
                """,
        },
    )
    result = codemod(tmp_path, "--unsafe", "--report", "json", ".")
    base = by_class(result)["Base"]
    assert (base["verdict"], base["code"]) == ("left", "PTK113"), base
    assert "Sub (in sub) may be registered by hand in setup_trees.py" in base["reason"], base
    run = python_in(tmp_path, "import setup_trees")
    assert run.returncode == 0, run.stderr


def test_a_subclass_registered_in_another_registry_still_becomes_a_pytree(tmp_path: Path) -> None:
    """optree's registry is not JAX's: the subclass is unregistered for JAX (PTK204 stays)."""
    write(
        tmp_path,
        {
            "base.py": HAND_REGISTERED_BASE,
            "sub.py": """
                import optree
                from base import Base


                class Sub(Base):
                    pass


                optree.register_pytree_node(
                    Sub, lambda s: ((s.w,), None), lambda _, c: Sub(*c), namespace="x"
                )
                """,
        },
    )
    base = by_class(codemod(tmp_path, "--check", "--report", "json", "."))["Base"]
    assert (base["verdict"], base["code"]) == ("unsafe", "PTK204"), base
