"""Defects the codemod12 probe found: a flatten function read by its name while another binding
of the name is the one JAX registers, a class body or module changing a method after the def
the codemod read, a subclass whose base is an expression becoming a pytree, form feeds deleted
outside the edits, ``super(Mid, self)`` followed as ``super()``: each test fails without its
fix."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import by_class, codemod, hand_registered, left_alone, write  # noqa: E402

import pytreekit.migrate._rewrite as rewrite_module  # noqa: E402
import pytreekit.migrate._scan as scan  # noqa: E402
from pytreekit.migrate import _bindings  # noqa: E402

# -- D1. a flatten function is trusted only when its name is bound once, by a def above ---------

# Each registers ``C`` keeping ``b`` static; something else binds the name JAX reads.
_C = """
import jax


class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def _flat(x):
    return (x.a,), x.b


def _unflat(aux, children):
    return C(children[0], aux)
"""
_REGISTER = "jax.tree_util.register_pytree_node(C, _flat, _unflat)\n"
_LEAF_B = "(lambda x: ((x.a, x.b), None))"

REBOUND = {
    "def_again_after": _REGISTER + "\n\ndef _flat(x):  # noqa: F811\n    return (x.a, x.b), None\n",
    "tuple_before": f"_flat, _other = {_LEAF_B}, 0\n" + _REGISTER,
    "lambda_again_after": _REGISTER + f"_flat = {_LEAF_B}\n",
    "def_under_if": (
        "import sys\nif sys.version_info >= (3, 8):\n\n    def _flat(x):\n"
        "        return (x.a, x.b), None\n\n\n" + _REGISTER
    ),
    "import_under_try": "try:\n    from accel import _flat\nexcept ImportError:\n    pass\n"
    + _REGISTER,
    "del_after": _REGISTER + "del _flat\n",
    "global_in_function": _REGISTER
    + f"\n\ndef patch():\n    global _flat\n    _flat = {_LEAF_B}\n",
    "walrus": f"if (_flat := {_LEAF_B}):\n    pass\n" + _REGISTER,
    "globals_write": f'globals()["_flat"] = {_LEAF_B}\n' + _REGISTER,
    "star_import_after_def": "from accel import *\n" + _REGISTER,
    "with_target": "import contextlib\nwith contextlib.nullcontext() as _flat:\n    pass\n"
    + _REGISTER,
    "loop_target": "for _flat in ():\n    pass\n" + _REGISTER,
}


@pytest.mark.parametrize("case", sorted(REBOUND))
def test_a_flatten_function_bound_again_isleft_alone(tmp_path: Path, case: str) -> None:
    accel = f"_flat = {_LEAF_B}\n__all__ = ['_flat']\n"
    found = left_alone(tmp_path, {"case.py": _C + "\n\n" + REBOUND[case], "accel.py": accel})
    entry = found["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK116"), entry
    assert "flatten _flat is bound" in entry["reason"], entry["reason"]
    assert "which function JAX registers cannot be proven" in entry["reason"]


def test_a_flatten_function_defined_below_the_registration_isleft_alone(tmp_path: Path) -> None:
    source = _C.replace("\n\ndef _flat(x):\n    return (x.a,), x.b\n", "\n")
    source += "\n\n" + _REGISTER + "\n\ndef _flat(x):\n    return (x.a,), x.b\n"
    entry = left_alone(tmp_path, {"case.py": source})["C"]
    assert entry["code"] == "PTK116", entry
    assert "not by a def above the registration" in entry["reason"], entry["reason"]


def test_helper_names_reused_for_each_class_are_left_with_a_true_reason(tmp_path: Path) -> None:
    """The copy-paste pattern: each class's registration reuses ``_flatten``/``_unflatten``.
    It was refused with a false PTK107 (the last ``_unflatten`` read for the first class)."""
    source = _C.replace("C", "Scaled") + "\n\n" + _REGISTER.replace("C", "Scaled")
    source += "\n\n" + _C.split("\n\n\n", 1)[1].replace("C", "Shifted") + "\n\n"
    source += _REGISTER.replace("C", "Shifted") + "\n"
    source = source.replace("import jax\n", "", 1)
    found = left_alone(tmp_path, {"case.py": "import jax\n" + source})
    for name in ("Scaled", "Shifted"):
        assert found[name]["code"] == "PTK116", found[name]
        assert "bound 2 times" in found[name]["reason"], found[name]["reason"]


def test_a_star_import_above_the_function_does_not_keep_it(tmp_path: Path) -> None:
    source = "from accel import *\n" + _C + "\n\n" + _REGISTER
    write(tmp_path, {"case.py": source, "accel.py": f"_flat = {_LEAF_B}\n__all__ = ['_flat']\n"})
    result = codemod(tmp_path, "--report", "json", "case.py")
    assert by_class(result)["C"]["verdict"] == "rewritten", by_class(result)["C"]


def test_the_bindings_of_a_module_are_each_found() -> None:
    source = textwrap.dedent(
        """
        import os.path, sys as system
        from m import *
        from . import *
        a: int = 1
        b: int
        c += 1
        [d, *e] = f.g = h[0] = 1, 2
        async def i(j=(k := 1)): ...
        @decorated(l := 2)
        class M(Base, meta=(n := 3)): ...
        try:
            pass
        except E as o:
            pass
        match p:
            case {"q": q, **r} if (s := 1):
                pass
            case [*t]:
                pass
        while (u := 0):
            lambda: (v := 1)
        w = [x for x in () if (y := x)]
        del z
        async def later():
            global a
            globals().update(a=2)
            vars()["b"] = 3
            async with A() as (aa, bb):
                pass
            async for cc in D():
                pass
        """
    )
    found = _bindings.module_bindings(ast.parse(source))
    hows = {name: [b.how for b in found[name]] for name in found}
    assert hows["os"] == ["an import"] and hows["system"] == ["an import"]
    assert [b.how for b in found[_bindings.STAR]] == ["from m import *", "from . import *"]
    assert hows["a"] == ["an assignment", "a 'global' statement in function 'later'"]
    assert "b" not in hows and hows["c"] == ["an assignment"]
    assert hows["d"] == hows["e"] == ["an assignment"] and "f" not in hows and "h" not in hows
    assert hows["i"] == ["a def"] and hows["M"] == ["a class statement"]
    for walrus in ("k", "l", "n", "s", "u", "y"):
        assert hows[walrus] == ["an assignment expression (:=)"], walrus
    assert "v" not in hows and "x" not in hows and "aa" not in hows and "cc" not in hows
    assert hows["o"] == ["an except clause"]
    assert hows["q"] == hows["r"] == hows["t"] == ["a match pattern"]
    assert hows["z"] == ["a del statement"] and hows["later"] == ["a def"]
    assert len(found[_bindings.GLOBALS]) == 2
    broken = scan.Module(Path("x.py"), "x.py", "x", Path("."), "def (:\n")
    assert broken.syntax().body == [] and broken.bindings() == {}
    inner = _bindings.scope_bindings(
        ast.parse("with B():\n    pass\nasync with A() as (aa, bb):\n    for cc in D(): pass").body
    )
    assert {name: [b.how for b in bs] for name, bs in inner.items()} == {
        "aa": ["a with statement"],
        "bb": ["a with statement"],
        "cc": ["a loop"],
    }
    assert not inner["cc"][0].direct and inner["aa"][0].describe() == "a with statement (line 3)"


# -- D2. a class whose methods change after the def the codemod read is left --------------------

_DECORATED = hand_registered("C", style="from")

IN_THE_BODY = {
    "tree_flatten = other": ("tree_flatten = lambda self: ((self.x, 1), None)", "PTK116"),
    "tree_unflatten = classmethod(...)": (
        "tree_unflatten = classmethod(lambda cls, aux, children: cls(children[0]))",
        "PTK116",
    ),
    "__init__ = other": ("__init__ = lambda self, x: setattr(self, 'x', x)", "PTK112"),
    "a def under if": (
        "if True:\n\n        def tree_flatten(self):\n            return (self.x, 2), None",
        "PTK116",
    ),
}


@pytest.mark.parametrize("case", sorted(IN_THE_BODY))
def test_a_method_the_class_body_binds_again_isleft_alone(tmp_path: Path, case: str) -> None:
    line, code = IN_THE_BODY[case]
    entry = left_alone(tmp_path, {"case.py": _DECORATED + "\n    " + line + "\n"})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", code), entry
    assert "the body of C binds" in entry["reason"], entry["reason"]


PATCHES = {
    "assignment": ("case.py", "C.tree_flatten = lambda self: ((self.x,), None)\n", "case"),
    "setattr": ("case.py", "setattr(C, 'tree_flatten', lambda self: ((self.x,), None))\n", "case"),
    "in a function": ("case.py", "def patch():\n    C.tree_unflatten = None\n", "case"),
    "del": ("case.py", "del C.tree_flatten\n", "case"),
    "another module": ("other.py", "from case import C\n\nC.tree_flatten = None\n", "other"),
    "augmented": ("other.py", "import case\n\ncase.C.count += 1\n", "other"),
}


@pytest.mark.parametrize("case", sorted(PATCHES))
def test_a_class_patched_after_its_statement_isleft_alone(tmp_path: Path, case: str) -> None:
    name, text, where = PATCHES[case]
    files = {"case.py": _DECORATED + "\n\n" + (text if name == "case.py" else "")}
    if name != "case.py":
        files[name] = text
    entry = left_alone(tmp_path, files)["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK112"), entry
    assert f"(in {where}, line" in entry["reason"] and "changes class C" in entry["reason"]


def test_writes_to_other_objects_keep_the_rewrite(tmp_path: Path) -> None:
    other = "class D:\n    pass\n\n\nD.tree_flatten = None\nsetattr(D, 'x', 1)\nC_x = 1\n"
    write(
        tmp_path,
        {
            "case.py": _DECORATED + "\n    to_parts = tree_flatten\n\n\n" + other,
            # a class C of its own, and a module that does not parse: neither patches case.C
            "own.py": "class C:\n    pass\n\n\nC.tree_flatten = None\n",
            "broken.py": "C.tree_flatten = (\n",
        },
    )
    result = codemod(tmp_path, "--check", "--report", "json", ".")
    assert by_class(result)["C"]["verdict"] == "rewritten", by_class(result)["C"]


# -- D3. a subclass whose base is an expression may subclass the class: unsafe ------------------

_BASE = hand_registered("Base", style="from")

EXPRESSION_BASES = {
    "a conditional": "import os\n\n\nclass Sub(Base if os.sep else object):\n    pass\n",
    "a starred tuple": "_bases = (Base,)\n\n\nclass Sub(*_bases):\n    pass\n",
    "a call": "def make():\n    return Base\n\n\nclass Sub(make()):\n    pass\n",
    "a variable": "_B = Base if True else object\n\n\nclass Sub(_B):\n    pass\n",
    "under an if": "_bases = (Base,)\nif True:\n\n    class Sub(*_bases):\n        pass\n",
}


@pytest.mark.parametrize("case", sorted(EXPRESSION_BASES))
@pytest.mark.parametrize("where", ["base.py", "sub.py"])
def test_a_subclass_whose_base_is_an_expression_makes_the_rewrite_unsafe(
    tmp_path: Path, case: str, where: str
) -> None:
    subclass = EXPRESSION_BASES[case]
    if where == "base.py":
        files = {"base.py": _BASE + "\n\n" + subclass}
    else:
        files = {"base.py": _BASE, "sub.py": "from base import Base\n\n\n" + subclass}
    entry = left_alone(tmp_path, files)["Base"]
    assert (entry["verdict"], entry["code"]) == ("unsafe", "PTK204"), entry
    module = where.removesuffix(".py")
    assert f"{module} makes a class with class Sub(" in entry["reason"], entry["reason"]
    assert "from bases the codemod cannot read" in entry["reason"]


def test_a_namedtuple_base_is_no_subclass(tmp_path: Path) -> None:
    other = "from collections import namedtuple\n\n\nclass P(namedtuple('P', 'x y')):\n    pass\n"
    write(tmp_path, {"base.py": _BASE + "\n\n" + other})
    result = codemod(tmp_path, "--check", "--report", "json", ".")
    assert by_class(result)["Base"]["verdict"] == "rewritten", by_class(result)["Base"]


# -- D4. a file LibCST does not give back byte for byte is never written -------------------------

_FORM_FEEDS = "import jax\n\n\n\fdef unrelated():\n    return 1\n\n\n\fclass Unrelated:\n    pass\n"


@pytest.mark.parametrize("registered", ["left", "rewritable"])
def test_a_file_with_a_form_feed_opening_a_line_is_not_written(
    tmp_path: Path, registered: str
) -> None:
    stores = "x * 2" if registered == "left" else "x"
    source = (
        _FORM_FEEDS + f"\n\nclass Bad:\n    def __init__(self, x):\n        self.x = {stores}\n\n\n"
        "jax.tree_util.register_pytree_node(Bad, lambda b: ((b.x,), None), lambda a, c: Bad(*c))\n"
    )
    (tmp_path / "case.py").write_text(source, encoding="utf-8", newline="")
    result = codemod(tmp_path, "--report", "json", "case.py")  # comments on, as by default
    assert (tmp_path / "case.py").read_bytes().decode() == source
    entry = by_class(result)["Bad"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK117"), entry
    assert "case.py does not come back unchanged through LibCST (line 4" in entry["reason"]
    assert result.report["summary"]["failures"] == 0


def test_a_form_feed_alone_on_a_blank_line_is_kept(tmp_path: Path) -> None:
    source = _BASE.lstrip("\n") + "\n\f\n\nx = 1\n"
    (tmp_path / "case.py").write_text(source, encoding="utf-8", newline="")
    result = codemod(tmp_path, "--report", "json", "case.py")
    assert by_class(result)["Base"]["verdict"] == "rewritten", by_class(result)["Base"]
    assert "\n\f\n" in (tmp_path / "case.py").read_bytes().decode()


def test_the_rewrite_of_a_module_that_does_not_round_trip_fails(tmp_path: Path) -> None:
    """The analysis leaves such a module's registrations; the rewrite refuses it all the same."""
    (tmp_path / "case.py").write_text(_FORM_FEEDS + "register_pytree_node = 1\n", encoding="utf-8")
    project = scan.scan([tmp_path])
    module = project.modules[0]
    assert project.parse(module) is not None and module.changed_line() == 4
    kind, why = rewrite_module._module_result(module, rewrite_module._Edits())
    assert kind == "failed" and "LibCST does not give its text back unchanged (line 4)" in why


# -- D5. only super() and super(C, self) are followed -------------------------------------------

_SUPER = """
import jax


class Root:
    def __init__(self, a):
        self.a = a


class Mid(Root):
    def __init__(self, a):
        super().__init__(a)
        self.extra = "mid"


@jax.tree_util.register_pytree_node_class
class C(Mid):
    def __init__(self, a, b):
        {call}.__init__(a)
        self.b = b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


@pytest.mark.parametrize(
    "call", ["super(Mid, self)", "super(type(self), self)", "super(C)", "super(C, *())"]
)
def test_a_super_naming_another_class_is_not_followed(tmp_path: Path, call: str) -> None:
    entry = left_alone(tmp_path, {"case.py": _SUPER.replace("{call}", call)})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK108"), entry
    assert f"C.__init__ calls {call}.__init__: only super() and super(C, self)" in entry["reason"]


@pytest.mark.parametrize("call", ["super()", "super(C, self)"])
def test_super_of_the_class_itself_is_followed(tmp_path: Path, call: str) -> None:
    write(tmp_path, {"case.py": _SUPER.replace("{call}", call)})
    result = codemod(tmp_path, "--check", "--report", "json", ".")
    entry = by_class(result)["C"]
    # followed into Mid.__init__, which sets extra: a true reason, not one about super
    assert (entry["code"], "sets extra") == ("PTK108", "sets extra"), entry
    assert "extra" in entry["reason"] and "super(" not in entry["reason"], entry["reason"]


# -- cosmetic: the reason for a subclass made by type(...) ---------------------------------------


def test_a_subclass_made_by_type_is_named_in_plain_words(tmp_path: Path) -> None:
    write(tmp_path, {"base.py": _BASE + "\n\nSub = type('Sub', (Base,), {})\n"})
    entry = by_class(codemod(tmp_path, "--check", "--report", "json", "."))["Base"]
    assert entry["code"] == "PTK204", entry
    assert "subclass Sub is made by type(...), where the codemod" in entry["reason"]
