"""Defects the codemod7 probe found (package re-exports, class-body aliases, hidden subclasses,
rebound class names, misnamed causes, ...): each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import HAND_REGISTERED_BASE as BASE  # noqa: E402
from migrate_helpers import by_class, codemod, python_in, write  # noqa: E402

# -- 1. a base reached through a package's re-export ----------------------------------------------

REGISTERED_SUB = """
from jax.tree_util import register_pytree_node_class

{imports}


@register_pytree_node_class
class Sub({base}):
    def __init__(self, w, extra):
        super().__init__(w)
        self.extra = extra
        self.cache = {{}}

    def tree_flatten(self):
        return (self.w,), (self.extra,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)
"""

# how pkg/__init__.py re-exports Base, how pkg/b.py imports it, and the base as b.py writes it
REEXPORTS = {
    "relative": ("from .a import Base\n", "from pkg import Base", "Base"),
    "absolute": ("from pkg.a import Base\n", "from pkg import Base", "Base"),
    "star": ("from .a import *\n", "from pkg import Base", "Base"),
    "package": ("from .a import Base\n", "import pkg", "pkg.Base"),
}


@pytest.mark.parametrize("how", sorted(REEXPORTS))
def test_a_registered_subclass_through_a_reexport_keeps_the_tree_importable(
    how: str, tmp_path: Path
) -> None:
    init, imports, base = REEXPORTS[how]
    sub = REGISTERED_SUB.format(imports=imports, base=base)
    write(tmp_path, {"pkg/__init__.py": init, "pkg/a.py": BASE, "pkg/b.py": sub})
    result = codemod(tmp_path, "--report", "json", "pkg")
    entries = by_class(result)
    assert entries["Base"]["code"] == "PTK113", entries["Base"]
    assert "Sub" in entries["Base"]["reason"]
    assert "not in the scanned files" not in entries["Sub"]["reason"]
    run = python_in(tmp_path, "import pkg.b; pkg.b.Sub(1.0, 2); pkg.a.Base(1.0)")
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("how", sorted(REEXPORTS))
def test_an_unregistered_subclass_through_a_reexport_is_unsafe(how: str, tmp_path: Path) -> None:
    init, imports, base = REEXPORTS[how]
    sub = f"{imports}\n\n\nclass Sub({base}):\n    pass\n"
    write(tmp_path, {"pkg/__init__.py": init, "pkg/a.py": BASE, "pkg/b.py": sub})
    result = codemod(tmp_path, "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204")
    assert "Sub" in entry["reason"]


def test_a_conditional_reexport_leaves_the_base_rather_than_guessing(tmp_path: Path) -> None:
    init = "try:\n    from .a import Base\nexcept ImportError:\n    Base = None\n"
    sub = "from pkg import Base\n\n\nclass Sub(Base):\n    pass\n"
    write(tmp_path, {"pkg/__init__.py": init, "pkg/a.py": BASE, "pkg/b.py": sub})
    result = codemod(tmp_path, "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204")
    assert "may be Base" in entry["reason"]


SECOND_REGISTRATION = """
import contextlib

import jax

from pkg import Base

with contextlib.suppress(ValueError):
    jax.tree_util.register_pytree_node_class(Base)
"""

DECORATED_BASE = """
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class Base:
    def __init__(self, w):
        self.w = w

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


def test_a_second_registration_through_a_reexport_is_counted(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "from .a import Base\n",
        "pkg/a.py": DECORATED_BASE,
        "pkg/compat.py": SECOND_REGISTRATION,
    }
    write(tmp_path, files)
    result = codemod(tmp_path, "--report", "json", "pkg")
    codes = sorted(entry["code"] for entry in result.report["registrations"])
    assert codes == ["PTK102", "PTK110"]
    run = python_in(tmp_path, "import pkg.compat; pkg.a.Base(1.0).tree_flatten()")
    assert run.returncode == 0, run.stderr


def test_a_registration_of_a_reexported_class_is_ptk203(tmp_path: Path) -> None:
    registration = (
        "import jax\n\nfrom pkg import Base\n\n"
        "jax.tree_util.register_pytree_node(Base, lambda b: ((b.w,), None), "
        "lambda _, c: Base(*c))\n"
    )
    base = "class Base:\n    def __init__(self, w):\n        self.w = w\n"
    files = {
        "pkg/__init__.py": "from .a import Base\n",
        "pkg/a.py": base,
        "pkg/reg.py": registration,
    }
    write(tmp_path, files)
    result = codemod(tmp_path, "--check", "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert entry["code"] == "PTK203", entry


# -- 2. a class-body alias of a flatten/unflatten method ------------------------------------------

ALIASED = """
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class Linear:
    def __init__(self, w, n):
        self.w = w
        self.n = n

    def tree_flatten(self):
        return (self.w,), self.n

    @classmethod
    def tree_unflatten(cls, n, children):
        return cls(children[0], n)

    {alias}
"""


@pytest.mark.parametrize(
    "alias",
    [
        "to_parts = tree_flatten",
        "_unflatten = tree_unflatten",
        "parts = staticmethod(tree_flatten)",
    ],
)
def test_a_class_body_alias_keeps_the_method(alias: str, tmp_path: Path) -> None:
    write(tmp_path, {"layers.py": ALIASED.format(alias=alias)})
    result = codemod(tmp_path, "--report", "json", "layers.py")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten"
    method = alias.rpartition("(")[2].rstrip(")").split()[-1]
    assert f"def {method}" in (tmp_path / "layers.py").read_text()
    run = python_in(
        tmp_path, "import layers, jax; jax.tree_util.tree_leaves(layers.Linear(1.0, 2))"
    )
    assert run.returncode == 0, run.stderr


# -- 3. a subclass under an import alias ------------------------------------------------------


@pytest.mark.parametrize(
    "sub",
    [
        "from pkg.a import Base as _Base\n\n\nclass Sub(_Base):\n    pass\n",
        "from pkg import a\n\nB2 = a.Base\n\n\nclass Sub(B2):\n    pass\n",
    ],
)
def test_a_subclass_under_another_name_is_found(sub: str, tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": BASE, "pkg/b.py": sub})
    result = codemod(tmp_path, "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204")
    leaf = "jax.tree_util.tree_leaves(pkg.b.Sub(1.0))[0]"
    code = f"import jax, pkg.b; assert type({leaf}).__name__ == 'Sub'"
    assert python_in(tmp_path, code).returncode == 0


# -- 4. a subclass not made by a module-level class statement ------------------------------------

HIDDEN = {
    "if": "import os\nif os.name:\n    class C(Base):\n        pass\n",
    "try": "try:\n    class C(Base):\n        pass\nexcept Exception:\n    pass\n",
    "function": "def make():\n    class C(Base):\n        pass\n    return C\n",
    "type": 'C = type("C", (Base,), {})\n',
}


@pytest.mark.parametrize("where", sorted(HIDDEN))
def test_a_hidden_subclass_makes_the_base_unsafe(where: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": BASE + "\n\n" + HIDDEN[where]})
    result = codemod(tmp_path, "--report", "json", "mod.py")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204"), entry
    assert "C" in entry["reason"]


def test_a_hidden_registered_subclass_leaves_the_base(tmp_path: Path) -> None:
    hidden = (
        "import os\nif os.name:\n    class C(Base):\n        pass\n\n"
        "    jax.tree_util.register_pytree_node(C, lambda c: ((c.w,), None), lambda _, c: C(*c))\n"
    )
    write(tmp_path, {"mod.py": BASE + "\n\n" + hidden})
    result = codemod(tmp_path, "--unsafe", "--report", "json", "mod.py")
    base, sub = result.report["registrations"]
    assert sub["code"] == "PTK102"
    assert base["verdict"] == "left" and base["code"] in ("PTK110", "PTK113"), base
    assert python_in(tmp_path, "import mod; mod.C(1.0)").returncode == 0


# -- 5. a class name bound twice at module level -----------------------------------------------

REBOUND = """
import jax


class A:
    def __init__(self, w):
        self.w = w


jax.tree_util.register_pytree_node(A, lambda a: ((a.w,), None), lambda _, c: A(*c))

Original = A

{again}
"""


@pytest.mark.parametrize(
    "again",
    [
        "class A:\n    def __init__(self, w):\n        self.w = w * 100\n",
        "A = Original\n",
    ],
)
def test_a_class_name_bound_twice_is_left(again: str, tmp_path: Path) -> None:
    write(tmp_path, {"rebound.py": REBOUND.format(again=again)})
    result = codemod(tmp_path, "--report", "json", "rebound.py")
    [entry] = result.report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK103")
    assert "ambiguous" in entry["reason"]
    assert "100" not in entry["reason"]


def test_a_class_rebound_by_its_own_registration_is_still_rewritten(tmp_path: Path) -> None:
    text = (
        "from jax.tree_util import register_pytree_node_class\n\n\nclass A:\n"
        "    def __init__(self, w):\n        self.w = w\n\n    def tree_flatten(self):\n"
        "        return (self.w,), None\n\n    @classmethod\n"
        "    def tree_unflatten(cls, aux, children):\n        return cls(*children)\n\n\n"
        "A = register_pytree_node_class(A)\n"
    )
    write(tmp_path, {"mod.py": text})
    [entry] = codemod(tmp_path, "--report", "json", "mod.py").report["registrations"]
    assert entry["verdict"] == "rewritten"


# -- 8. PTK103 names the real cause ---------------------------------------------------------------


def test_ptk103_names_a_nested_class(tmp_path: Path) -> None:
    text = (
        "import jax\n\n\nclass Outer:\n    class Inner:\n        def __init__(self, w):\n"
        "            self.w = w\n\n\njax.tree_util.register_pytree_node(Outer.Inner, "
        "lambda x: ((x.w,), None), lambda _, c: Outer.Inner(*c))\n"
    )
    write(tmp_path, {"nested.py": text})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "nested.py").report["registrations"]
    assert entry["code"] == "PTK103"
    assert "nested class" in entry["reason"] and "imported" not in entry["reason"]


def test_ptk103_names_a_class_under_if(tmp_path: Path) -> None:
    text = (
        "import sys\n\nimport jax\n\nif sys.version_info >= (3, 99):\n    class A:\n"
        "        pass\nelse:\n    class A:\n        pass\n\n\n"
        "jax.tree_util.register_pytree_node(A, lambda a: ((), None), lambda _, c: A())\n"
    )
    write(tmp_path, {"two.py": text})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "two.py").report["registrations"]
    assert entry["code"] == "PTK103"
    assert "under a 'if' statement" in entry["reason"]


def test_ptk103_names_an_unparsable_module(tmp_path: Path) -> None:
    registration = (
        "import jax\n\nfrom pkg.py2 import Old\n\n"
        "jax.tree_util.register_pytree_node(Old, lambda o: ((o.w,), None), lambda _, c: Old(*c))\n"
    )
    files = {
        "pkg/__init__.py": "",
        "pkg/py2.py": "class Old:\n    pass\n\nprint 'hello'\n",
        "pkg/reg.py": registration,
    }
    write(tmp_path, files)
    result = codemod(tmp_path, "--check", "--report", "json", "pkg")
    [entry] = result.report["registrations"]
    assert entry["code"] == "PTK103"
    assert "could not read" in entry["reason"] and "py2.py" in entry["reason"]


# -- 6. a plain annotated class becomes a dataclass: the report says so ----------------------------

ANNOTATED = """
import jax


class Signal:
    values: jax.Array
    kind: str

    def __init__(self, values, kind):
        self.values = values
        self.kind = kind


jax.tree_util.register_pytree_node(
    Signal, lambda s: ((s.values,), (s.kind,)), lambda aux, ch: Signal(ch[0], aux[0])
)
"""


def test_a_plain_annotated_class_is_reported_to_become_a_dataclass(tmp_path: Path) -> None:
    write(tmp_path, {"sig.py": ANNOTATED})
    result = codemod(tmp_path, "--diff", "--report", "json", "sig.py")
    [entry] = result.report["registrations"]
    assert entry["verdict"] == "rewritten"
    assert "becomes a dataclass" in entry["changes"]["dataclass"]
    text = codemod(tmp_path, "--diff", "sig.py")
    assert "dataclass: becomes a dataclass (it annotates values, kind)" in text.err + text.out
    codemod(tmp_path, "sig.py")
    check = "import dataclasses, sig; assert dataclasses.is_dataclass(sig.Signal(1.0, 'soft'))"
    assert python_in(tmp_path, check).returncode == 0


def test_a_class_annotating_class_vars_only_is_not_reported_as_a_dataclass(
    tmp_path: Path,
) -> None:
    text = ANNOTATED.replace("values: jax.Array\n    kind: str", "count: ClassVar[int] = 0")
    write(tmp_path, {"sig.py": "from typing import ClassVar\n" + text})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "sig.py").report["registrations"]
    assert entry["verdict"] == "rewritten"
    assert entry["changes"]["dataclass"] is None


# -- 7. PTK114: a list reaching a static through a local name or a list-returning call ------------

STATIC = """
from jax.tree_util import register_pytree_node_class


@register_pytree_node_class
class S:
    def __init__(self, w, positions):
        self.w = w
        self.positions = positions

    def tree_flatten(self):
        return (self.w,), (self.positions,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)


{maker}
"""

MAKERS = {
    "local": "def make(w):\n    pos = [1, 2]\n    return S(w, pos)\n",
    "annotated": "def make(w):\n    pos: list[int] = [1, 2]\n    return S(w, pos)\n",
    "sorted": "def make(w):\n    return S(w, positions=sorted({3, 1}))\n",
    "local sorted": "def make(w):\n    pos = sorted({3, 1})\n    return S(w, pos)\n",
    "module level": "POS = {'a': 1}\nS(1.0, POS)\n",
}


@pytest.mark.parametrize("how", sorted(MAKERS))
def test_an_unhashable_static_through_a_name_or_call_is_ptk114(how: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": STATIC.format(maker=MAKERS[how])})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "mod.py").report["registrations"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK114"), entry
    assert "positions" in entry["reason"]


def test_a_name_bound_to_a_list_in_another_function_is_not_followed(tmp_path: Path) -> None:
    maker = (
        "def other():\n    pos = [1, 2]\n    return pos\n\n\n"
        "def make(w, pos=(1, 2)):\n    return S(w, pos)\n"
    )
    write(tmp_path, {"mod.py": STATIC.format(maker=maker)})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "mod.py").report["registrations"]
    assert entry["verdict"] == "rewritten", entry


# -- 9. a section's banner above a deleted registration stays while the section goes on ----------

BANNER = """
import jax


class A:
    def __init__(self, w):
        self.w = w


class Other(tuple):
    pass


# ------------------------------------------------------------------
# Register custom objects with jax.
# ------------------------------------------------------------------


jax.tree_util.register_pytree_node(A, lambda a: ((a.w,), None), lambda _, c: A(*c))


jax.tree_util.register_pytree_node(Other, lambda o: ((), None), lambda _, c: Other())
"""


def test_a_banner_above_a_deleted_registration_is_kept(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": BANNER})
    result = codemod(tmp_path, "--report", "json", "mod.py")
    verdicts = [entry["verdict"] for entry in result.report["registrations"]]
    assert verdicts == ["rewritten", "left"]  # Other is a tuple subclass: PTK111
    text = (tmp_path / "mod.py").read_text()
    banner = text.index("# Register custom objects with jax.")
    assert banner < text.index("PTK111") < text.index("register_pytree_node(Other")
    assert "register_pytree_node(A" not in text
    assert python_in(tmp_path, "import mod; mod.A(1.0)").returncode == 0


def test_a_banner_heading_the_next_statement_is_kept_once(tmp_path: Path) -> None:
    text = BANNER.replace(
        "jax.tree_util.register_pytree_node(Other, lambda o: ((), None), lambda _, c: Other())",
        "VALUE = 1",
    )
    write(tmp_path, {"mod.py": text})
    codemod(tmp_path, "mod.py")
    after = (tmp_path / "mod.py").read_text()
    assert after.count("# Register custom objects with jax.") == 1
    banner = after.index("# Register custom objects")
    assert banner < after.index("VALUE = 1")
    assert python_in(tmp_path, "import mod; mod.A(1.0)").returncode == 0


def test_attributes_set_on_the_class_at_module_level_do_not_rebind_it(tmp_path: Path) -> None:
    text = REBOUND.format(again="A.__add__ = lambda self, other: self\nA.table = {}\n")
    text = text.replace("Original = A\n", "")
    write(tmp_path, {"mod.py": text})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "mod.py").report["registrations"]
    assert entry["code"] != "PTK103", entry


def test_ptk115_names_a_base_the_package_binds_conditionally(tmp_path: Path) -> None:
    init = "try:\n    from .a import Base\nexcept ImportError:\n    Base = None\n"
    sub = REGISTERED_SUB.format(imports="from pkg import Base", base="Base")
    base = "class Base:\n    def __init__(self, w):\n        self.w = w\n"
    write(tmp_path, {"pkg/__init__.py": init, "pkg/a.py": base, "pkg/b.py": sub})
    [entry] = codemod(tmp_path, "--check", "--report", "json", "pkg").report["registrations"]
    assert entry["code"] == "PTK115"
    assert (
        "pkg/__init__.py" in entry["reason"] and "not in the scanned files" not in entry["reason"]
    )


# A package binding the name in a way the codemod does not follow leaves the base unsafe: the
# subclass may be the base's (the lookup's conservative answers, one per way).
UNFOLLOWED = {
    "bound twice": ({"pkg/__init__.py": "from .a import Base\nBase = Base\n"}, "Base"),
    "private through a star": (
        {"pkg/__init__.py": "from .a import *\n", "pkg/a.py": BASE.replace("Base", "_Base")},
        "_Base",
    ),
    "star from a module that does not parse": (
        {"pkg/__init__.py": "from .a import *\nfrom .bad import *\n", "pkg/bad.py": "def (:\n"},
        "Base",
    ),
}


@pytest.mark.parametrize("how", sorted(UNFOLLOWED))
def test_a_name_the_package_binds_unfollowably_leaves_the_base_unsafe(
    how: str, tmp_path: Path
) -> None:
    files, name = UNFOLLOWED[how]
    sub = f"from pkg import {name}\n\n\nclass Sub({name}):\n    pass\n"
    write(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": sub, **files})
    result = codemod(tmp_path, "--report", "json", "pkg")
    entry = next(e for e in result.report["registrations"] if e["class"] == name)
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204"), entry
