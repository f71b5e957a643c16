"""Defects the codemod14 probe found: a class patched through a name the codemod did not follow
(an import alias, a self-import, tuple unpacking, a parameter, a loop variable, ``type(obj)``,
``obj.__class__``), a flatten helper's ``__code__`` swapped from another module, and a dotted
``import jax.experimental.checkify`` deleted with the submodule it loads. Each test fails without
its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import by_class, codemod, left_alone, python_in, write  # noqa: E402

_MOD = """
import jax


@jax.tree_util.register_pytree_node_class
class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def tree_flatten(self):
        return (self.a,), self.b

    @classmethod
    def tree_unflatten(cls, aux, ch):
        return cls(ch[0], aux)


def _both(self):
    return (self.a, self.b), None
"""

# -- F1. the class patched through any name: PTK112, the reason naming the write and its line ----

# case -> (appended to pkg/mod.py, pkg/patch.py or None, what the reason names)
PATCHES = {
    "import_alias_elsewhere": (
        "",
        "from pkg.mod import C as K, _both\n\nK.tree_flatten = _both\n",
        "K.tree_flatten (in pkg.patch, line 3)",
    ),
    "setattr_alias_elsewhere": (
        "",
        'from pkg.mod import C as K, _both\n\nsetattr(K, "tree_flatten", _both)\n',
        "(in pkg.patch, line 3)",
    ),
    "relative_self_import": (
        "\n\nfrom .mod import C as _K  # noqa: E402\n\n_K.tree_flatten = _both\n",
        None,
        "_K.tree_flatten",
    ),
    "absolute_self_import": (
        "\n\nfrom pkg.mod import C as _K  # noqa: E402\n\n_K.tree_flatten = _both\n",
        None,
        "_K.tree_flatten",
    ),
    "tuple_unpacking": ("\n\nK, _unused = C, None\nK.tree_flatten = _both\n", None, "K."),
    "function_parameter": (
        "\n\ndef patch(cls):\n    cls.tree_flatten = _both\n\n\npatch(C)\n",
        None,
        "cls.tree_flatten",
    ),
    "parameter_elsewhere": (
        "",
        "def patch(cls, f):\n    cls.tree_flatten = f\n",
        "(in pkg.patch, line 2)",
    ),
    "type_of_instance": ("\n\ntype(C(0, 0)).tree_flatten = _both\n", None, "type(C(0, 0))"),
    "loop_variable": ("\n\nfor k in (C,):\n    k.tree_flatten = _both\n", None, "k.tree_flatten"),
    "dunder_class": ("\n\nC(0, 0).__class__.tree_flatten = _both\n", None, "__class__"),
    "comprehension": ('\n\n[setattr(k, "tree_flatten", _both) for k in (C,)]\n', None, "setattr"),
    "type_setattr": ('\n\ntype.__setattr__(C, "tree_flatten", _both)\n', None, "__setattr__"),
    "loop_over_constant_names": (
        '\n\ndef patch(cls, f):\n    for name in ("__doc__", "tree_flatten"):\n'
        "        setattr(cls, name, f)\n",
        None,
        "setattr(cls, name, f)",
    ),
    "mock_patch_object": (
        "\n\nfrom unittest import mock  # noqa: E402\n\n"
        'mock.patch.object(C, "tree_flatten", _both).start()\n',
        None,
        "mock.patch.object(C",
    ),
    "monkeypatch_setattr": (
        "",
        "from pkg.mod import C, _both\n\n\ndef test_it(monkeypatch):\n"
        '    monkeypatch.setattr(C, "tree_flatten", _both)\n',
        "monkeypatch.setattr(C",
    ),
    "del_through_parameter": (
        "\n\ndef strip(cls):\n    del cls.tree_flatten\n",
        None,
        "del cls.tree_flatten",
    ),
    "init_through_parameter": (
        "\n\ndef patch(cls):\n    cls.__init__ = lambda self, a, b: None\n",
        None,
        "cls.__init__",
    ),
    "setattr_name_not_constant": (
        "\n\ndef patch(cls, name, f):\n    setattr(cls, name, f)\n",
        None,
        "its name is not a constant",
    ),
    "classmethod_of_the_class": (
        "\n\ndef _swap(cls):\n    cls.tree_flatten = _both\n\n\nC.swap = classmethod(_swap)\n",
        None,
        "cls.tree_flatten (in pkg.mod, line 23)",
    ),
    "instance_method_write": (
        "",
        "from pkg.mod import C, _both\n\n\ndef make(a, b):\n    c = C(a, b)\n"
        "    c.tree_flatten = _both.__get__(c)\n    return c\n",
        "c.tree_flatten",
    ),
}


@pytest.mark.parametrize("case", sorted(PATCHES))
def test_a_class_patched_through_any_name_is_left_alone(tmp_path: Path, case: str) -> None:
    after, patch, named = PATCHES[case]
    files = {"pkg/__init__.py": "", "pkg/mod.py": _MOD + after}
    if patch is not None:
        files["pkg/patch.py"] = patch
    entry = left_alone(tmp_path, files)["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK112"), entry
    assert named in entry["reason"], entry["reason"]


# -- F3. a function internal written from any scanned module: PTK116 ------------------------------

_HELPERS = """
import jax


class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def _flat(x):
    return (x.a,), x.b


def _unflat(aux, ch):
    return C(ch[0], aux)


jax.tree_util.register_pytree_node(C, _flat, _unflat)
"""
_REGISTER = "jax.tree_util.register_pytree_node(C, _flat, _unflat)\n"

INTERNALS = {
    "code_imported": (
        "from pkg.mod import _flat\n\n_flat.__code__ = (lambda x: ((x.a, x.b), None)).__code__\n"
    ),
    "code_through_module": "import pkg.mod\n\npkg.mod._flat.__code__ = pkg.mod._unflat.__code__\n",
    "defaults": "from pkg.mod import _flat\n\n_flat.__defaults__ = (1,)\n",
    "kwdefaults": "from pkg import mod\n\nmod._unflat.__kwdefaults__ = {}\n",
    "setattr_code": (
        'from pkg.mod import _flat, _unflat\n\nsetattr(_flat, "__code__", _unflat.__code__)\n'
    ),
    "parameter": "def swap(f, g):\n    f.__code__ = g.__code__\n",
}


@pytest.mark.parametrize("case", sorted(INTERNALS))
def test_a_helper_changed_from_another_module_is_left_alone(tmp_path: Path, case: str) -> None:
    files = {"pkg/__init__.py": "", "pkg/mod.py": _HELPERS, "pkg/patch.py": INTERNALS[case]}
    entry = left_alone(tmp_path, files)["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK116"), entry
    assert "(in pkg.patch, line" in entry["reason"], entry["reason"]


# -- what is provably another object does not leave the class -------------------------------------

_UNRELATED = """
import functools
import os
import types


def deco(f):
    def wrapper(*args):
        return f(*args)

    wrapper.__wrapped__ = f
    wrapped = functools.partial(f)
    wrapped.__wrapped__ = f
    wrapper.__doc__ = f.__doc__
    return functools.update_wrapper(wrapper, f)


class D:
    def __init__(self, value):
        self.value = value
        self.__dict__.update(other=1)
        setattr(self, "count", 0)

    def __setstate__(self, state):
        self.__dict__ = state

    @classmethod
    def make(cls):
        cls.made = True
        return cls(0)


LayerParams = collections.namedtuple("LayerParams", ["a", "b"])
LayerParams.__new__.__defaults__ = (None, None)


def clone(fn, name):
    cloned = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__)
    cloned.__kwdefaults__ = fn.__kwdefaults__
    cloned.__annotations__ = dict(fn.__annotations__)
    return cloned


class Params(collections.namedtuple("Params", ["a", "b"])):
    pass


Params.__new__.__defaults__ = (None, None)


def write(config, **overrides):
    for name, value in overrides.items():
        setattr(config, name, value)


def configure(obj, value):
    obj.value = value
    obj.__project_tag__ = "a project's own dunder"
    obj.describe = None  # an instance attribute named like a method of C
    obj.__doc__ = "configured"
    os.environ.x = 1


class Meta(type):
    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        cls.__post_init__ = lambda self: None
        return cls


class E:
    def __setattr__(self, name, value):
        super().__setattr__(name, value)


def copy_names(wrapped, original):
    for attr in ["__name__", "__qualname__", "__doc__"]:
        setattr(wrapped, attr, getattr(original, attr))


D.__module__ = "elsewhere"
D.__init__ = D.__init__
"""


def test_writes_to_other_objects_leave_the_class_rewritten(tmp_path: Path) -> None:
    mod = _MOD.replace(
        "    def tree_flatten",
        "    def describe(self):\n        return 'C'\n\n    def tree_flatten",
        1,
    )
    write(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": mod, "pkg/other.py": _UNRELATED})
    entry = by_class(codemod(tmp_path, "--check", "--report", "json", "."))["C"]
    assert entry["verdict"] == "rewritten", (entry["code"], entry["reason"])


# -- F2. an import that loads a submodule stays, and the report says so ---------------------------

_SUBMODULE = {
    "case.py": """
        # the only import: it binds jax and loads jax.experimental.checkify for other modules
        import jax.experimental.checkify


        @jax.tree_util.register_pytree_node_class
        class C:
            def __init__(self, a, b):
                self.a = a
                self.b = b

            def tree_flatten(self):
                return (self.a,), self.b

            @classmethod
            def tree_unflatten(cls, aux, ch):
                return cls(ch[0], aux)
        """,
    "other.py": """
        import jax

        import case


        def make():
            assert jax.experimental.checkify.checkify is not None
            return case.C(1.0, "s")
        """,
}


def test_an_import_loading_a_submodule_is_kept(tmp_path: Path) -> None:
    write(tmp_path, _SUBMODULE)
    entry = by_class(codemod(tmp_path, "--report", "json", "."))["C"]
    assert entry["verdict"] == "rewritten", (entry["code"], entry["reason"])
    assert "import jax.experimental.checkify" in entry["changes"]["kept"], entry["changes"]
    source = (tmp_path / "case.py").read_text(encoding="utf-8")
    assert "import jax.experimental.checkify\n" in source
    assert "register_pytree_node_class" not in source
    ran = python_in(tmp_path, "import other; print(other.make().a)")
    assert (ran.returncode, ran.stdout.strip()) == (0, "1.0"), ran.stderr


@pytest.mark.parametrize(
    ("imports", "decorator", "gone"),
    [
        ("import jax.tree_util", "jax.tree_util.register_pytree_node_class", True),
        ("import jax.tree_util as jtu", "jtu.register_pytree_node_class", True),
        ("from jax import tree_util", "tree_util.register_pytree_node_class", True),
        (
            "from jax.tree_util import register_pytree_node_class",
            "register_pytree_node_class",
            True,
        ),
        ("import jax.experimental", "jax.tree_util.register_pytree_node_class", False),
    ],
)
def test_only_imports_of_modules_jax_loads_itself_are_removed(
    tmp_path: Path, imports: str, decorator: str, gone: bool
) -> None:
    source = (
        f"{imports}\n\n\n@{decorator}\nclass C:\n"
        f"    def __init__(self, a):\n        self.a = a\n\n"
        f"    def tree_flatten(self):\n        return (self.a,), None\n\n"
        f"    @classmethod\n    def tree_unflatten(cls, aux, ch):\n        return cls(*ch)\n"
    )
    write(tmp_path, {"case.py": source})
    codemod(tmp_path, "--report", "json", ".")
    text = (tmp_path / "case.py").read_text(encoding="utf-8")
    assert "pytree_class" in text
    assert (f"{imports}\n" not in text) == gone, text


@pytest.mark.parametrize(
    ("statement", "loaded"),
    [
        ("import jax", None),
        ("import jax.numpy as jnp", None),
        ("import jax.experimental.checkify", "jax.experimental.checkify"),
        ("from jax import numpy", None),
        ("from jax import Array", None),
        ("from jax import register_pytree_node_class", None),
        ("from jax import experimental", "jax.experimental"),
        ("from jax.tree_util import tree_map", None),
        ("from jax.experimental import checkify", "jax.experimental"),
        ("from jax.numpy import linalg", "jax.numpy.linalg"),
        ("from . import mod", None),
    ],
)
def test_loads_more_names_the_submodule_an_import_loads(statement: str, loaded: str) -> None:
    import libcst as cst

    from pytreekit.migrate._imports import loads_more

    line = cst.parse_statement(statement)
    assert isinstance(line, cst.SimpleStatementLine)
    small = line.body[0]
    assert isinstance(small, cst.Import | cst.ImportFrom)
    assert not isinstance(small.names, cst.ImportStar)
    assert loads_more(small, small.names[0]) == loaded


# -- F4. a reason quoting a line number of its own file: a second run changes nothing -------------

SECOND_RUN = {
    "exec": 'jax.tree_util.register_pytree_node(C, _flat, _unflat)\n\nexec("X = 1")\n',
    "patch": "jax.tree_util.register_pytree_node(C, _flat, _unflat)\n\nC.tree_flatten = _flat\n",
    "binding": "jax.tree_util.register_pytree_node(C, _flat, _unflat)\n\n_flat = None\n",
}


@pytest.mark.parametrize("case", sorted(SECOND_RUN))
def test_a_reason_quoting_a_line_is_stable_over_a_second_run(tmp_path: Path, case: str) -> None:
    write(tmp_path, {"case.py": _HELPERS.replace(_REGISTER, SECOND_RUN[case])})
    first = codemod(tmp_path, ".")
    assert first.code == 0, first.err
    written = (tmp_path / "case.py").read_text(encoding="utf-8")
    assert "TODO[pytreekit-migrate]" in written and "line" in written
    check = codemod(tmp_path, "--check", ".")
    assert check.code == 0, check.out
    codemod(tmp_path, ".")
    assert (tmp_path / "case.py").read_text(encoding="utf-8") == written
