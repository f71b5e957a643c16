"""The codemod's edges: each refusal the new proofs can give (the dummy-key form, aux read
through a child, branches, decorators), and each failure a file or a process can meet, with the
reason it names. The happy paths are in test_migrate_rules.py and test_migrate_units.py."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from conftest import require

require("libcst")

from migrate_helpers import codemod, write  # noqa: E402

import pytreekit.migrate._analyze as analyze  # noqa: E402
import pytreekit.migrate._cli as cli  # noqa: E402
import pytreekit.migrate._rewrite as rewrite  # noqa: E402
import pytreekit.migrate._scan as scan  # noqa: E402
from pytreekit.migrate._init import _always_raises, _raises  # noqa: E402

HEAD = "import jax\nimport jax.numpy as jnp\n\n\n"


def _entry(tmp_path: Path, source: str, *args: str) -> dict[str, Any]:
    write(tmp_path, {"mod.py": HEAD + source})
    entries = codemod(tmp_path, "--check", "--report", "json", *args, "mod.py").report
    return entries["registrations"][-1]


def _linear(unflatten: str, init_extra: str = "") -> str:
    return f"""
@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, key, size):
        self.size = size
        self.w = jax.random.normal(key, (size,)){init_extra}

    def tree_flatten(self):
        return (self.w,), (self.size,)

    @classmethod
    def tree_unflatten(cls, aux, children):
{unflatten}
"""


@pytest.mark.parametrize(
    ("unflatten", "code", "reason"),
    [
        (
            "        obj = cls(jax.random.key(0), aux[0])\n        obj.w = children[0]\n"
            "        obj.other = aux[0]\n        return obj",
            "PTK107",
            "unflatten also stores other",
        ),
        (
            "        obj = cls(jax.random.key(0), aux[0])\n        obj.w = aux[0]\n"
            "        return obj",
            "PTK107",
            "flatten reads w into children[0], but unflatten stores aux[0] there",
        ),
        (
            "        obj = cls(jax.random.key(0), aux[0])\n        return obj",
            "PTK109",
            "__init__ stores jax.random.normal(key, (size,)) in w",
        ),
    ],
)
def test_the_dummy_key_form_refuses_what_it_cannot_prove(
    unflatten: str, code: str, reason: str, tmp_path: Path
) -> None:
    entry = _entry(tmp_path, _linear(unflatten))
    assert entry["code"] == code and entry["reason"].startswith(reason), entry["reason"]


def test_a_carried_attribute_init_never_sets_is_named(tmp_path: Path) -> None:
    source = _linear(
        "        obj = cls(jax.random.key(0), aux[0])\n        obj.w = children[0]\n"
        "        return obj"
    ).replace("(self.w,), (self.size,)", "(self.w, self.b), (self.size,)")
    entry = _entry(tmp_path, source)
    assert (entry["code"], entry["reason"]) == ("PTK108", "__init__ never sets b")


MODEL = """
@jax.tree_util.register_pytree_node_class
class Layer:
    def __init__(self, size, scale):
        self.size = size
        self.scale = scale

    def tree_flatten(self):
        return (self.scale,), (self.size,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(aux[0], children[0])


@jax.tree_util.register_pytree_node_class
class Model:
    def __init__(self, size, BUILD):
        self.layer = BUILD

    def tree_flatten(self):
        return (self.layer,), (AUX,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        model = cls(aux[0], None)
        model.layer = children[0]
        return model
"""


@pytest.mark.parametrize(
    ("build", "aux", "reason"),
    [
        (
            "layer",
            "self.other.size",
            "aux data reads other.size, and other is not a child flatten carries",
        ),
        ("layer", "self.layer.size", "aux data reads layer.size: the codemod cannot tell which"),
        ("layer", "self.layer.scale", "aux data reads layer.size: the codemod cannot tell which"),
    ],
)
def test_aux_read_through_a_child_is_refused_unless_the_child_keeps_it_static(
    build: str, aux: str, reason: str, tmp_path: Path
) -> None:
    source = MODEL.replace("BUILD", build).replace("AUX", aux)
    source = source.replace("self.layer = layer", "self.layer = layer")
    entry = _entry(tmp_path, source)
    expected = reason.replace("layer.size", aux.removeprefix("self."))
    assert entry["code"] == "PTK105" and entry["reason"].startswith(expected), entry["reason"]


def test_aux_read_through_a_child_whose_class_keeps_it_as_a_leaf(tmp_path: Path) -> None:
    source = MODEL.replace("self.layer = BUILD", "self.layer = Layer(size, 1.0)")
    source = source.replace("def __init__(self, size, BUILD):", "def __init__(self, size, unused):")
    source = source.replace("AUX", "self.layer.scale")
    entry = _entry(tmp_path, source)
    assert entry["reason"] == (
        "aux data reads layer.scale, which Layer's registration does not keep static"
    )


def test_aux_read_through_a_child_whose_class_cannot_be_read(tmp_path: Path) -> None:
    source = MODEL.replace("self.layer = BUILD", "self.layer = Layer(size, 1.0)")
    source = source.replace("def __init__(self, size, BUILD):", "def __init__(self, size, unused):")
    source = source.replace("AUX", "self.layer.size").replace(
        "return (self.scale,), (self.size,)", "return [self.scale], self.size * 2"
    )
    entry = _entry(tmp_path, source)
    assert entry["reason"].endswith("which Layer's registration does not keep static")


def test_hashing_with_hash_none(tmp_path: Path) -> None:
    source = """
@jax.tree_util.register_pytree_node_class
class Point:
    __hash__ = None

    def __init__(self, x):
        self.x = x

    def tree_flatten(self):
        return (self.x,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""
    entry = _entry(tmp_path, source)
    assert entry["changes"]["hashing"] == (
        "unchanged (eq=False): unhashable (Point sets __hash__ = None), as before"
    )


@pytest.mark.parametrize(
    "decorator",
    [
        "def tag(cls, name):\n    return cls\n",  # two parameters
        "def tag(cls):\n    print(cls)\n    return cls\n",  # does something else
        "def tag(cls):\n    cls.__init__ = None\n    return cls\n",  # sets a dunder
        "def tag(cls):\n    return None\n",  # does not return the class
    ],
)
def test_decorators_that_do_more_than_set_attributes_are_not_followed(
    decorator: str, tmp_path: Path
) -> None:
    source = decorator + _linear("        return cls(None, *aux)").replace(
        "@jax.tree_util", "@tag\n@jax.tree_util"
    ).replace("self.w = jax.random.normal(key, (size,))", "self.w = key")
    entry = _entry(tmp_path, source)
    assert entry["code"] == "PTK112", entry["reason"]


def test_a_decorator_imported_from_outside_is_not_followed(tmp_path: Path) -> None:
    source = "from elsewhere import tag\n\n\n" + _linear("        return cls(None, *aux)").replace(
        "@jax.tree_util", "@tag\n@jax.tree_util"
    )
    assert _entry(tmp_path, source)["reason"].startswith("@tag is applied after the registration")


@pytest.mark.parametrize(
    ("init", "reason"),
    [
        # the branches set different values
        (
            "if key:\n            self.w = key\n        else:\n            self.w = size",
            "sets attributes under a 'if'",
        ),
        # a branch runs what the codemod cannot follow
        (
            "if key:\n            self.w = key\n            self.reset()\n        else:\n"
            "            self.w = key",
            "sets attributes under a 'if'",
        ),
        # the branches set nothing, but one calls a method
        ("if key:\n            self.reset()", "sets attributes under a 'if'"),
    ],
)
def test_branches_that_differ_are_refused(init: str, reason: str, tmp_path: Path) -> None:
    source = f"""
@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, key, size):
        {init}
        self.size = size

    def reset(self):
        pass

    def tree_flatten(self):
        return (self.w,), (self.size,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)
"""
    if "self.w" not in init:
        source = source.replace("(self.w,), (self.size,)", "(), (self.size,)").replace(
            "cls(children[0], *aux)", "cls(None, *aux)"
        )
    entry = _entry(tmp_path, source)
    assert entry["code"] == "PTK108" and reason in entry["reason"], entry["reason"]


def test_locals_set_differently_under_branches_are_opaque_after(tmp_path: Path) -> None:
    source = """
@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, size):
        if size > 1:
            scale = 2.0
            self.w = w
        else:
            scale = 1.0
            self.w = w
        self.size = size * scale

    def tree_flatten(self):
        return (self.w,), (self.size,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.w = children[0]
        obj.size = aux[0]
        return obj
"""
    entry = _entry(tmp_path, source)
    assert entry["code"] is None  # object.__new__: __init__ never reruns, the size is stored


def test_raising_helpers() -> None:
    def statements(text: str) -> list[cst.BaseStatement]:
        return list(cst.parse_module(text).body)

    assert not _always_raises([])
    assert _always_raises(statements("if a:\n    raise X\nelse:\n    raise Y\n"))
    assert not _always_raises(statements("if a:\n    raise X\n"))
    assert not _always_raises(
        statements("if a:\n    raise X\nelif b:\n    pass\nelse:\n    raise Y\n")
    )
    assert not _always_raises(statements("x = 1\n"))
    [nested] = statements("if a:\n    pass\nelif b:\n    if c:\n        raise X\n")
    assert _raises(nested)
    [quiet] = statements("if a:\n    pass\nelse:\n    x = 1\n")
    assert not _raises(quiet)


def test_flatten_reads_dict_and_negative_constants(tmp_path: Path) -> None:
    source = """
@jax.tree_util.register_pytree_node_class
class Pair:
    def __init__(self, a, b, _tolerance=1):
        self.a = a
        self.b = b

    def tree_flatten(self):
        return (self.a, self.b), dict()

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux, _tolerance=-1)
"""
    assert _entry(tmp_path, source)["code"] is None


def test_the_analysis_going_too_deep_is_ptk116(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def deep(self: object, registration: object) -> None:
        raise RecursionError

    monkeypatch.setattr(analyze._Analysis, "_rewrite", deep)
    entry = _entry(tmp_path, _linear("        return cls(None, *aux)"))
    assert (entry["code"], entry["reason"]) == ("PTK116", "the code nests too deep to follow")


# -- files and processes ----------------------------------------------------------------------

POINT = """
@jax.tree_util.register_pytree_node_class
class Point:
    def __init__(self, x):
        self.x = x

    def tree_flatten(self):
        return (self.x,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
"""


def test_a_line_length_below_40_is_a_usage_error(tmp_path: Path) -> None:
    result = codemod(tmp_path, "--line-length", "10", ".")
    assert result.code == 2 and "--line-length must be at least 40" in result.err


def test_a_file_changed_while_the_codemod_ran_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"point.py": HEAD + POINT})
    original = cli.rewrite

    def touching(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        (tmp_path / "point.py").write_text(HEAD + POINT + "# edited\n", encoding="utf-8")
        return result

    monkeypatch.setattr(cli, "rewrite", touching)
    result = codemod(tmp_path, ".")
    assert result.code == 2
    assert "point.py: failed: changed on disk while the codemod ran" in result.out
    assert (tmp_path / "point.py").read_text().endswith("# edited\n")


def test_a_temporary_file_that_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"point.py": HEAD + POINT})

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    result = codemod(tmp_path, ".")
    assert result.code == 2
    failure = f"point.py: failed: not written: Permission denied ({tmp_path})"
    assert failure in " ".join(result.out.split())


def test_a_formatter_that_does_not_exist(tmp_path: Path) -> None:
    write(tmp_path, {"point.py": HEAD + POINT})
    result = codemod(tmp_path, ".", "--format-command", "no-such-formatter-anywhere --fix")
    assert result.code == 2
    assert "point.py: failed: written, but --format-command could not run" in result.out
    assert cli._why(ValueError("plain")) == "plain"


@pytest.mark.parametrize(
    ("pyproject", "expected"),
    [("[tool.black]\nline_length = 100\n", 100), ("[tool.other]\n", 88), ("not toml [", 88)],
)
def test_the_line_length_comes_from_the_nearest_pyproject(
    pyproject: str, expected: int, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    assert cli._line_length([tmp_path / "pkg"]) == expected


def test_worker_processes_in_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """_in_workers's bookkeeping, its pool replaced by one that works here (the fork itself is
    tested in a process of its own, test_migrate_files.py)."""

    class FakePool:
        def __init__(self, processes: int) -> None:
            assert processes == 2

        def __enter__(self) -> FakePool:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def imap(self, function: Any, items: Any) -> Any:
            return map(function, items)

    class Context:
        Pool = FakePool

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Context())
    write(tmp_path, {"a.py": HEAD + POINT, "b.py": HEAD + POINT.replace("Point", "Other")})
    project = scan.scan([tmp_path])
    outcomes = analyze.analyze(project, analyze.Options())
    seen: list[tuple[int, int]] = []
    sources, failures = rewrite.rewrite(
        project, outcomes, jobs=2, progress=lambda done, total: seen.append((done, total))
    )
    assert len(sources) == 2 and not failures and seen == [(1, 2), (2, 2)]
    assert rewrite._WORK == []
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    alone, _ = rewrite.rewrite(project, outcomes, jobs=2)
    assert alone == sources  # no fork: the same work, in this process


def test_a_rewrite_that_does_not_compile_is_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"point.py": HEAD + POINT})
    monkeypatch.setattr(rewrite, "_apply", lambda module, edits: "def broken(:\n")
    result = codemod(tmp_path, ".", "--report", "json")
    assert result.code == 2
    [failure] = result.report["failed_files"]
    assert failure["error"].startswith("the rewritten module does not compile (")


def test_modules_that_fail_to_parse_or_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"a.py": HEAD + POINT, "b.py": HEAD + POINT.replace("Point", "Other")})
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    real_parse, real_index = cst.parse_module, scan._index

    def parse(source: str) -> cst.Module:
        if "class Other" in source:
            raise ValueError("a LibCST failure")
        return real_parse(source)

    monkeypatch.setattr(scan.cst, "parse_module", parse)
    result = codemod(tmp_path, ".", "--report", "json")
    errors = {f["file"]: f["error"] for f in result.report["failed_files"]}
    assert errors["b.py"] == "not parsed (ValueError: a LibCST failure)"
    # a dangling link is named by its own name, and skipped: there is nothing to read
    skipped = {f["file"]: f["reason"] for f in result.report["skipped_files"]}
    assert skipped["dangling.py"] == f"a dangling symbolic link (to {tmp_path / 'missing.py'})"
    assert "missing.py" not in errors
    monkeypatch.setattr(scan.cst, "parse_module", real_parse)

    def index(module: scan.Module) -> None:
        if module.name == "a":
            raise KeyError("index")
        real_index(module)

    monkeypatch.setattr(scan, "_index", index)
    write(tmp_path, {"a.py": HEAD + POINT})  # rewritten by the run above
    result = codemod(tmp_path, ".", "--report", "json")
    errors = {f["file"]: f["error"] for f in result.report["failed_files"]}
    assert errors.get("a.py") == "the codemod failed on it (KeyError: 'index')", errors


def test_statement_lines_fall_back_to_libcst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"point.py": "# header\n\n" + HEAD + POINT})
    project = scan.scan([tmp_path])
    [module] = project.modules
    expected = module.statement_lines()
    module._lines = []

    def failing(source: str) -> None:
        raise SyntaxError("newer syntax")

    monkeypatch.setattr(scan.ast, "parse", failing)
    assert module.statement_lines() == expected
    unparsed = scan.Module(Path("x.py"), "x.py", "x", tmp_path, "")
    assert unparsed.locate(cst.Name("x")) is None


def test_bytes_that_do_not_round_trip_are_not_decoded() -> None:
    # UTF-7 decodes '+AGE-' to 'a', which it encodes back as 'a'
    why = scan.decode(b"# coding: utf-7\nx = '+AGE-'\n")
    assert isinstance(why, str) and "do not round-trip through utf-7" in why


def test_excerpts_drop_comments() -> None:
    node = cst.parse_expression("(self.a,  # the first\n self.b)  ")
    assert scan.code(node) == "(self.a, self.b)"
    assert scan._without_comments("(a,  # open\n") == "(a,  # open\n"  # not tokenizable: as is


def test_modules_that_do_not_parse_are_passed_over_by_the_looks_across_modules(
    tmp_path: Path,
) -> None:
    helper = """
def register(cls):
    jax.tree_util.register_pytree_node(cls, lambda o: ((o.x,), None), lambda a, c: cls(*c))
    return cls
"""
    linear = """
class Linear:
    def __init__(self, w, size):
        self.w = w
        self.size = size


def flatten_linear(linear):
    return (linear.w,), (linear.size,)


def unflatten_linear(aux, children):
    return Linear(children[0], *aux)


jax.tree_util.register_pytree_node(Linear, flatten_linear, unflatten_linear)
"""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": HEAD + helper,
            "pkg/linear.py": HEAD + linear,
            # names Linear, tree_flatten, register and flatten_linear, and does not parse
            "pkg/broken.py": "Linear(1, [2]).tree_flatten() register flatten_linear (\n",
            # the same words, in a generated file: skipped
            "pkg/generated.py": "# @generated\nLinear(1, [2]).tree_flatten() register\n",
        },
    )
    result = codemod(tmp_path, "--check", "--report", "json", "pkg")
    entries = {e["class"]: e for e in result.report["registrations"]}
    assert entries["Linear"]["code"] is None
    assert entries["cls"]["code"] == "PTK101"
    # looked at for what it might say (a call, a use), broken.py did not parse: named
    assert [f["file"] for f in result.report["failed_files"]] == ["pkg/broken.py"]
    assert result.code == 2


def test_a_called_decorator_is_not_followed_unless_declared(tmp_path: Path) -> None:
    source = "def tag(name):\n    return lambda cls: cls\n\n\n" + _linear(
        "        return cls(None, *aux)"
    ).replace("@jax.tree_util", '@tag("dense")\n@jax.tree_util')
    assert _entry(tmp_path, source)["code"] == "PTK112"
    declared = _entry(tmp_path, source, "--transparent-decorator", 'tag("dense")')
    assert declared["code"] != "PTK112"


def test_aux_read_through_a_child_of_an_unregistered_class(tmp_path: Path) -> None:
    source = MODEL.replace("self.layer = BUILD", "self.layer = Layer(size, 1.0)")
    source = source.replace("def __init__(self, size, BUILD):", "def __init__(self, size, unused):")
    source = source.replace("AUX", "self.layer.size")
    # Model's registration first: the search for Layer's goes past it
    model_at = source.index("@jax.tree_util.register_pytree_node_class\nclass Model")
    layer, model = source[:model_at], source[model_at:]
    entry = _entry(tmp_path, model + "\n\n" + layer)
    assert entry["class"] == "Layer"
    unregistered = layer.replace("@jax.tree_util.register_pytree_node_class\n", "")
    write(tmp_path, {"mod.py": HEAD + unregistered + model})
    entries = codemod(tmp_path, "--check", "--report", "json", "mod.py").report
    [entry] = entries["registrations"]
    assert entry["reason"] == (
        "aux data reads layer.size, which Layer's registration does not keep static"
    )


def test_aux_read_through_a_child_of_a_class_whose_init_cannot_be_read(tmp_path: Path) -> None:
    source = MODEL.replace("self.layer = BUILD", "self.layer = Layer(size, 1.0)")
    source = source.replace("def __init__(self, size, BUILD):", "def __init__(self, size, unused):")
    source = source.replace("AUX", "self.layer.size").replace(
        "class Model:\n", "class Model:\n    mode: dataclasses.InitVar[int]\n\n"
    )
    entry = _entry(tmp_path, "import dataclasses\n\n" + source)
    assert "the codemod cannot tell which class layer is" in " ".join(
        r["reason"] for r in entry["reasons"]
    )


def test_a_branch_that_reads_self_without_setting_is_refused(tmp_path: Path) -> None:
    source = """
@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, size):
        if size > 1:
            alias = self
        if size < 0:
            log("negative")
            raise ValueError("size")
        self.w = w
        self.size = size

    def tree_flatten(self):
        return (self.w,), (self.size,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)


def log(message):
    return message
"""
    entry = _entry(tmp_path, source)
    assert entry["reason"].startswith("__init__ of Linear sets attributes under a 'if'")
    assert "if size > 1" in entry["reason"]


def test_a_bug_in_one_module_s_rewrite_and_a_pool_that_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"a.py": HEAD + POINT, "b.py": HEAD + POINT.replace("Point", "Other")})
    project = scan.scan([tmp_path])
    outcomes = analyze.analyze(project, analyze.Options())

    class Refusing:
        def Pool(self, processes: int) -> None:
            raise OSError("no processes")

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Refusing())
    alone, _ = rewrite.rewrite(project, outcomes, jobs=2)
    assert len(alone) == 2  # the pool could not start: done in this process

    def buggy(module: scan.Module, edits: object) -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr(rewrite, "_apply", buggy)
    sources, failures = rewrite.rewrite(project, outcomes)
    assert not sources and len(failures) == 2
    assert all(
        f.startswith("the codemod failed on it (RuntimeError: a bug)") for f in failures.values()
    )
