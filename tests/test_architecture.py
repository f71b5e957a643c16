"""docs/architecture.md's claims, each checked against the code, so the page stays true."""

import ast
import dataclasses
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jax
from packaging.version import Version

import pytreekit
from pytreekit import _markers

ROOT = Path(__file__).resolve().parent.parent
# The package as imported: the source tree, or the installed wheel (CI runs the tests without the
# source in one cell), which holds the same files.
PACKAGE = Path(pytreekit.__file__).resolve().parent
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
CORE = sorted(p for p in PACKAGE.rglob("*.py") if "migrate" not in p.relative_to(PACKAGE).parts)
_ABSENT_BACKENDS = {name for name in ("optree", "torch") if importlib.util.find_spec(name) is None}
WINGS = ("_classes", "_derivatives", "_artifacts")


def _module_name(path):
    return path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")


def _sources():
    return {_module_name(path): path.read_text(encoding="utf-8") for path in CORE}


def test_the_tree_on_the_page_is_the_package():
    block = PAGE.split("```\npytreekit/\n", 1)[1].split("```", 1)[0]
    named = set()
    for line in block.splitlines():
        for name in re.findall(r"^\s{2}(\S+?)(?:,|\s|$)", line) + re.findall(
            r",\s*(\S+?\.py)", line
        ):
            named.add(name.rstrip(","))
    top = {p.name for p in PACKAGE.iterdir() if not p.name.startswith(("__pycache__", "py.typed"))}
    top = {name + "/" if (PACKAGE / name).is_dir() else name for name in top}
    assert named == top


def test_the_layers_on_the_page_are_the_import_linter_contract():
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", PAGE, flags=re.M)
    page_layers = [set(re.findall(r"`(\w+)`", modules)) for _, modules in rows]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c.get("containers") == ["pytreekit"]
    )
    assert page_layers == [
        {name.strip() for name in layer.split("|")} for layer in contract["layers"]
    ]


def test_every_marker_name_is_spelled_in_markers_only():
    names = {
        value for key, value in vars(_markers).items() if key.isupper() and isinstance(value, str)
    }
    assert names, "pytreekit._markers defines no marker name"
    spelled = {
        (module, name)
        for module, source in _sources().items()
        if module != "_markers"
        for name in names
        if name in _code_only(source)
    }
    assert spelled == set()


# What only _compat may touch: private APIs of CPython, JAX and torch, and their undocumented
# records. One pattern each; a use elsewhere is a new private dependency to move into _compat.
PRIVATE = {
    "dataclasses' params record": r"__dataclass_params__",
    "dataclasses' private constants": r"dataclasses\._[A-Z]",
    "dataclasses' generated functions, told by file name": r"co_filename\s*(?:in|==)",
    "swapping an object's class": r"\.__class__\s*=[^=]",
    "Enum's member map": r"_member_map_",
    "json's scanner": r"scan_once",
    "json's string encoder": r"encode_basestring",
    "JAX's private modules": r"jax\._src",
    "torch's private pytree module": r"torch\.utils\._pytree|\b_pytree\b",
}


def test_private_apis_are_touched_in_compat_only():
    found = {
        (module, what)
        for module, source in _sources().items()
        if module != "_compat"
        for what, pattern in PRIVATE.items()
        if re.search(pattern, _code_only(source))
    }
    assert found == set()


def _code_only(source):
    """The source without docstrings and comments: they may name a private API to explain it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            first.value.value = ""
    return ast.unparse(tree)


def test_the_field_rule_refuses_names_in_one_place_and_one_missing_sentinel():
    # The tables' check_names is the one refusal of a name as a field; no second copy of the rule.
    checkers = {
        (module, node.name)
        for module, source in _sources().items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name in ("check_names", "_check_names")
    }
    assert checkers == {("_classes.layouts", "check_names")}
    # Every module but the adapters of optional libraries this environment lacks.
    modules = [
        importlib.import_module(f"pytreekit.{name}".removesuffix(".__init__"))
        for name in _sources()
        if name.split(".")[-1] not in _ABSENT_BACKENDS
    ]
    sentinels = {id(module.MISSING) for module in modules if hasattr(module, "MISSING")}
    assert sentinels == {id(dataclasses.MISSING)}


def test_each_wing_has_one_door_and_a_map_the_page_includes():
    for wing in WINGS:
        assert (PACKAGE / wing / "__init__.py").is_file()
        assert (PACKAGE / wing / "README.md").is_file()
        assert re.search(rf'--8<-- "pytreekit/{wing}/README.md(:\d+:\d*)?"', PAGE), wing
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*/README.md" in config["tool"]["setuptools"]["package-data"]["pytreekit"]


def test_import_pytreekit_wraps_jax_export_registration_as_the_page_says():
    assert "wraps\n`jax.export.register_pytree_node_serialization`" in PAGE
    assert getattr(jax.export.register_pytree_node_serialization, _markers.GIVES_WAY, False)


def test_the_version_has_one_source():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in config["project"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pytreekit.__version__"}
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.M)
    version = Version(pytreekit.__version__)
    unreleased = changelog.split("## [Unreleased]", 1)[1].split(f"## [{released[0]}]", 1)[0]
    if version.is_devrelease:  # between releases: the next one's, with changes waiting for it
        assert version.release > Version(released[0]).release and "\n- " in unreleased
    else:
        assert str(version) == released[0]
    for version in released:
        section = changelog.split(f"## [{version}]", 1)[1].split("\n## ", 1)[0]
        # The hash of a release commit can only be written after it: until then, its tag.
        assert re.search(r"Release commit: (`[0-9a-f]{7,}`|the one tagged `v[\d.]+`)", section), (
            version
        )


def test_registering_with_torch_wraps_its_namedtuple_reader_as_the_page_says():
    """Importing pytreekit leaves torch's namedtuple reader alone; registering a class with torch
    wraps it (the page's third change outside pytreekit)."""
    from conftest import require, run_fresh

    require("torch")
    assert "wrapped (in `_compat`) to refuse a class" in PAGE
    out = run_fresh(
        """
        import collections
        import torch.utils._pytree as tp
        import pytreekit

        def reader():
            return tp.SUPPORTED_SERIALIZED_TYPES[collections.namedtuple].from_dumpable_context

        original = tp._namedtuple_deserialize
        print(reader() is original)

        @pytreekit.pytree_class(backends=("torch",))
        class Linear:
            weight: object

        # the entry and the module's name both (a namedtuple registered later reads the name)
        print(reader() is original, reader() is tp._namedtuple_deserialize, reader().__module__)
        """
    ).splitlines()
    assert out == ["True", "False True pytreekit._compat"], out


def test_import_pytreekit_changes_outside_it_what_the_page_lists():
    """The page names three changes outside pytreekit; the second, the finder on sys.meta_path,
    is made in a process that has not imported torch, and it finds no module; the third adds
    pytreekit's own ClassSpec, and nothing else, to copyreg's dispatch table."""
    assert "changes three things outside pytreekit" in PAGE and "`sys.meta_path`" in PAGE
    assert "`copyreg`'s dispatch table" in PAGE
    code = (
        "import sys, copyreg\n"
        "before = list(sys.meta_path)\n"
        "import jax.export\n"
        "wrapped = jax.export.register_pytree_node_serialization\n"
        "import pytreekit\n"
        "added = [f for f in sys.meta_path if f not in before]\n"
        # a library pytreekit imports may add its own (one does at JAX's floor): not ours
        "added = [f for f in added if type(f).__module__.startswith('pytreekit')]\n"
        "print(len(added), type(added[0]).__module__ if added else None)\n"
        "print(added[0].find_spec('json.decoder') if added else 'none')\n"
        "print(jax.export.register_pytree_node_serialization is not wrapped)\n"
        "print('torch' in sys.modules, 'optree' in sys.modules)\n"
        "print(sorted(f'{k.__module__}.{k.__qualname__}' for k in copyreg.dispatch_table\n"
        "             if k.__module__.startswith('pytreekit')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        check=True,
    )
    assert result.stdout.split("\n")[:5] == [
        "1 pytreekit._classes.torch_seen",
        "None",
        "True",
        "False False",
        "['pytreekit._classes.spec.ClassSpec']",
    ], result.stdout + result.stderr


def test_no_class_is_longer_than_250_lines():
    # Issue 35's bar, for the codemod too: a class that grows past it is split, not waved through.
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 250:
                long.append(f"{_module_name(path)}.{node.name}")
    assert long == []


def test_no_import_cycle_through_a_package_either():
    # `from . import sibling` imports the package's __init__ first: an edge to the package, which
    # lint-imports' layers (one container) do not see. Function-local imports count too. The
    # top package, which only re-exports (`from .. import _markers` names a module), is left out.
    edges: dict[str, set[str]] = {}
    modules = {_module_name(path): path for path in CORE}
    names = {f"pytreekit.{m}".removesuffix(".__init__") for m in modules}
    for module, path in modules.items():
        name = f"pytreekit.{module}".removesuffix(".__init__")
        package = name if module.endswith("__init__") else name.rpartition(".")[0]
        found = edges.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = (
                    node.module if not node.level else ".".join(filter(None, [base, node.module]))
                )
                found.update({source} & names)
                found.update({f"{source}.{a.name}" for a in node.names} & names)
    cycles = []
    for start in set(edges) - {"pytreekit"}:  # a path from a module back to itself
        stack, seen = [start], set()
        while stack:
            for target in edges.get(stack.pop(), set()) - {"pytreekit"}:
                if target == start:
                    cycles.append(start)
                elif target not in seen:
                    seen.add(target)
                    stack.append(target)
    assert sorted(set(cycles)) == []
