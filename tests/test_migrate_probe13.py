"""Defects the codemod13 probe found: a module or class body writing its own namespace (``exec``,
``locals()``, ``sys.modules``, an import of itself, ``__code__``), a class patched through an
alias, a followed decorator setting ``tree_flatten``: each was rewritten from a function other
than the one Python binds. Each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import by_class, codemod, left_alone, write  # noqa: E402

# -- F1/F4. a module that may write its own namespace: its registrations are left (PTK116) -------

_C = """
import sys

import jax


class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def _flat(x):
    return (x.a,), x.b


def _unflat(aux, children):
    return C(children[0], aux)


def _flat2(x):
    return (x.a, x.b), None


"""
_REGISTER = "jax.tree_util.register_pytree_node(C, _flat, _unflat)\n"

WRITERS = {
    "locals_module": ('locals()["_flat"] = _flat2\n', "locals() outside a function"),
    "exec": ('exec("_flat = _flat2")\n', "exec()"),
    "eval": ('eval("0")\n', "eval()"),
    "sys_modules_attribute": ("sys.modules[__name__]._flat = _flat2\n", "sys.modules"),
    "self_import": ("import case as _self\n\n_self._flat = _flat2\n", "import case"),
    "globals_alias": ('g = globals()\ng["_flat"] = _flat2\n', "globals() other than"),
    "setattr_module": (
        'setattr(sys.modules[__name__], "_flat", _flat2)\n',
        "sys.modules",
    ),
    "vars_module": ('vars(sys.modules[__name__])["_flat"] = _flat2\n', "sys.modules"),
    "setattr_other": ('m = sys\nsetattr(m, "_flat", _flat2)\n', "setattr() on m"),
    "dict_update": ("_flat.__dict__.update(x=1)\n", "__dict__"),
    "code_swap": ("_flat.__code__ = _flat2.__code__\n", "a write to _flat.__code__"),
    "defaults_swap": ("_unflat.__defaults__ = (1,)\n", "__defaults__"),
}


@pytest.mark.parametrize("case", sorted(WRITERS))
def test_a_module_writing_its_own_namespace_isleft_alone(tmp_path: Path, case: str) -> None:
    statement, shown = WRITERS[case]
    entry = left_alone(tmp_path, {"case.py": _C + statement + _REGISTER})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK116"), entry
    reasons = " ".join([entry["reason"], *(str(a) for a in entry.get("also", []))])
    assert "may write its own namespace" in reasons, entry
    assert shown in reasons, entry


@pytest.mark.parametrize(
    "statement",
    [
        'exec("tree_flatten = _other")',
        'locals()["tree_flatten"] = _other',
    ],
)
def test_a_class_body_writing_its_namespace_isleft_alone(tmp_path: Path, statement: str) -> None:
    source = f"""
import jax


def _other(self):
    return (self.b, self.a), None


@jax.tree_util.register_pytree_node_class
class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def tree_flatten(self):
        return (self.a, self.b), None

    {statement}

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""
    entry = left_alone(tmp_path, {"case.py": source})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK116"), entry


def test_reading_the_namespace_and_local_setattr_are_still_rewritten(tmp_path: Path) -> None:
    source = (
        _C
        + 'if "torch" in sys.modules:\n    pass\nassert globals()["_flat"] is _flat\n\n\n'
        + "def make(o):\n    setattr(o, 'k', 1)\n    return locals()\n\n\n"
        + _REGISTER
    )
    write(tmp_path, {"case.py": source})
    entry = by_class(codemod(tmp_path, "--report", "json", "case.py"))["C"]
    assert entry["verdict"] == "rewritten", entry


# -- F3/F4/F6. the class changed through an alias, its __init__'s code, a followed decorator -----

_K = """
import jax


def _other(self):
    return (self.b, self.a), None


{decorator}@jax.tree_util.register_pytree_node_class
class C:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""

PATCHES = {
    "alias": ("", "\n\nK = C\nK.tree_flatten = _other\n", {}),
    "init_code_elsewhere": (
        "",
        "",
        {"patch.py": "from case import C, _other\n\nC.__init__.__code__ = _other.__code__\n"},
    ),
    "decorator_sets_tree_flatten": (
        "@swap\n",
        "",
        {},
    ),
}
_SWAP = "\n\ndef swap(cls):\n    cls.tree_flatten = _other\n    return cls\n\n\n"


@pytest.mark.parametrize("case", sorted(PATCHES))
def test_a_class_changed_otherwise_than_by_its_name_isleft_alone(tmp_path: Path, case: str) -> None:
    decorator, after, others = PATCHES[case]
    source = _K.format(decorator=decorator) + after
    if decorator:
        source = source.replace("\n\n@swap", _SWAP + "@swap", 1)
        source = source.replace(
            "@swap\n@jax.tree_util.register_pytree_node_class",
            "@jax.tree_util.register_pytree_node_class\n@swap",
        )
    entry = left_alone(tmp_path, {"case.py": source, **others})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK112"), entry


def test_an_attribute_only_decorator_is_still_followed(tmp_path: Path) -> None:
    source = _K.format(decorator="").replace(
        "@jax.tree_util.register_pytree_node_class\n",
        "@jax.tree_util.register_pytree_node_class\n@tag\n",
    )
    source = source.replace(
        "\n\n@jax", "\n\ndef tag(cls):\n    cls.kind = 'k'\n    return cls\n\n\n@jax", 1
    )
    write(tmp_path, {"case.py": source})
    entry = by_class(codemod(tmp_path, "--report", "json", "case.py"))["C"]
    assert entry["verdict"] == "rewritten", entry


# -- F5. a class data attribute nothing reads is no reason to leave the class ---------------------

_COUNTED = _K.format(decorator="").replace(
    "class C:\n", "class C:\n    count = 0\n\n    def bump(self):\n        C.count += 1\n\n"
)


def test_a_class_counter_or_version_written_later_is_rewritten(tmp_path: Path) -> None:
    write(tmp_path, {"case.py": _COUNTED + '\n\nC.version = "1.0"\n'})
    entry = by_class(codemod(tmp_path, "--report", "json", "case.py"))["C"]
    assert entry["verdict"] == "rewritten", entry


@pytest.mark.parametrize(
    "after",
    [
        "C.tree_flatten = _other\n",
        "C.bump = _other\n",
        "C.a = 1\n",
        "\n\ndef read(x):\n    return x.count\n",
        '\n\ndef read(x):\n    return getattr(x, "count")\n',
    ],
)
def test_a_class_attribute_something_reads_still_leaves_the_class(
    tmp_path: Path, after: str
) -> None:
    entry = left_alone(tmp_path, {"case.py": _COUNTED + "\n\n" + after})["C"]
    assert (entry["verdict"], entry["code"]) == ("left", "PTK112"), entry
