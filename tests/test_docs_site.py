"""The documentation site as a visitor sees it: what the hooks (docs/_hooks/) make of the pages,
the API page's entries, the repository's address, and the check in a real browser
(tools/site_check.py), shown to fail on a code block wider than the content column.

The hooks' tests need the docs extra, and the browser check Debian's chromium too: without them
they skip; .ci/run's site step installs both and runs this file again, where nothing may skip.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
import urllib.parse
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from conftest import ROOT

import pytreekit

HOOKS = ROOT / "docs" / "_hooks"
# What the hooks import (the docs extra), and what a build and the browser check need besides.
HOOK_MODULES = ("mkdocs", "mkdocstrings", "griffe")
BROWSER_MODULES = (*HOOK_MODULES, "material", "playwright")
needs_docs_extra = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in HOOK_MODULES),
    reason="the docs extra is not installed; .ci/run's site step runs this",
)
needs_browser = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in BROWSER_MODULES)
    or not Path("/usr/bin/chromium").is_file(),
    reason="needs the docs extra (Playwright) and Debian's chromium; .ci/run's site step runs this",
)


def load(path: Path) -> ModuleType:
    """A module of the repository that is not in a package (a hook, a tool), by its path."""
    spec = importlib.util.spec_from_file_location(f"_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def hook(name: str) -> ModuleType:
    return load(HOOKS / f"{name}.py")


def page(src_uri: str) -> Any:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


# --- without the docs extra ------------------------------------------------------------------


def test_pip_names_the_repository_the_site_names_and_none_while_it_is_empty() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    repo_url = re.search(r"^repo_url: (\S+)$", config, re.MULTILINE)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert repo_url is not None
    named = repo_url.group(1).strip("\"'")
    assert project.get("urls", {}).get("Repository", "") == named


def test_the_api_page_has_every_public_name_pytree_class_and_field_first() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    entries = re.findall(r"^::: pytreekit\.(\w+)$", text, re.MULTILINE)
    assert entries[:2] == ["pytree_class", "field"]
    assert sorted(entries) == sorted(set(pytreekit.__all__) - {"MISSING"})
    assert "`MISSING`" in text


def test_every_type_variable_of_a_public_signature_is_explained_once() -> None:
    """The API page explains each type variable (and ``JVPRule``) its signatures show, once."""
    import typing

    found: set[str] = set()

    def collect(hint: object) -> None:
        if isinstance(hint, typing.TypeVar | typing.ParamSpec | typing.TypeVarTuple):
            found.add(hint.__name__)
        for argument in typing.get_args(hint):
            collect(argument)

    objects = [getattr(pytreekit, name) for name in pytreekit.__all__ if name != "MISSING"]
    for obj in objects:
        functions = [obj, *vars(obj).values()] if isinstance(obj, type) else [obj]
        for function in functions:
            if not callable(function) or getattr(function, "__module__", "") == "builtins":
                continue
            try:
                hints = typing.get_type_hints(function)
            except Exception:  # a class attribute that is not a function
                continue
            for hint in hints.values():
                collect(hint)
            written = " ".join(map(str, getattr(function, "__annotations__", {}).values()))
            found |= {"JVPRule"} & set(re.findall(r"\w+", written))
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## Reading the signatures")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (.+?) \|", section, re.MULTILINE)[1:]  # after the header
    explained = [name for row in rows for name in re.findall(r"`(\w+)", row)]
    assert {"T", "S", "P", "R"} <= found
    assert sorted(set(explained)) == sorted(explained)  # once each
    assert found <= set(explained), found - set(explained)


# --- the hooks -------------------------------------------------------------------------------


@needs_docs_extra
def test_no_page_links_to_a_host_the_configuration_does_not_name() -> None:
    site_check = load(ROOT / "tools" / "site_check.py")
    hosts = site_check.configured_hosts(ROOT / "mkdocs.yml")
    assert {"docs.python.org", "docs.jax.dev"} <= hosts
    assert "github.com" not in hosts and "pypi.org" not in hosts  # neither is published yet
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {
        f"{path.relative_to(ROOT)}: {url}"
        for path in pages
        for url in re.findall(r"https?://[^\s)\"'<>`]+", path.read_text(encoding="utf-8"))
        if urllib.parse.urlsplit(url).hostname not in hosts
    }
    found |= {
        f"pyproject.toml: {url}"
        for url in pyproject.get("urls", {}).values()
        if urllib.parse.urlsplit(url).hostname not in hosts
    }
    assert found == set()


@needs_docs_extra
def test_the_link_check_finds_missing_pages_anchors_and_unnamed_hosts(tmp_path: Path) -> None:
    site_check = load(ROOT / "tools" / "site_check.py")
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text(
        '<h1 id="top">T</h1><a href="guide/#part">ok</a> <a href="#top">ok</a> '
        '<a href="https://docs.python.org/3/">ok</a> <a href="mailto:x@y.z">ok</a> '
        '<img src="guide/missing.png"> <a href="guide/#nowhere">no anchor</a> '
        '<a href="https://github.com/someone/pytreekit">unnamed host</a> '
        '<a href="https:/github.com/x/tests/test_why.md">one slash</a>',
        encoding="utf-8",
    )
    (tmp_path / "guide" / "index.html").write_text(
        '<h2 id="part">P</h2><a href="../">up</a> <a href="../other/">gone</a>', encoding="utf-8"
    )
    report = site_check.check_links(tmp_path, {"docs.python.org"})
    assert report.problems == {
        "/index.html": [
            "a link to nothing: guide/missing.png",
            "a link to an anchor its page lacks: guide/#nowhere",
            "a link to a host mkdocs.yml does not name: https://github.com/someone/pytreekit",
            "a malformed address: https:/github.com/x/tests/test_why.md",
        ],
        "/guide/index.html": ["a link to nothing: ../other/"],
    }


@needs_docs_extra
def test_a_cited_test_file_is_a_page_with_a_section_per_function() -> None:
    repository_files = hook("repository_files")
    assert "In the repository" not in repository_files.source_page("tests/test_why.py", "")
    markdown = repository_files.source_page("tests/test_why.py", "https://example.org/r/")
    source = (ROOT / "tests" / "test_why.py").read_text(encoding="utf-8").splitlines()
    sections = re.findall(r'^## `(\w+)` \{#\1\}\n\n```python linenums="(\d+)"\n', markdown, re.M)
    for name in ("test_rebuilding_calls_init", "test_static_fields"):
        assert dict(sections)[name] == str(_first_line(name, source))
    assert "search:\n  exclude: true" in markdown
    link = "[tests/test_why.py](https://example.org/r/blob/main/tests/test_why.py)"
    assert link in markdown
    # The page's own links are rewritten like any page's; an address with a scheme is left alone.
    generated = repository_files.on_page_markdown(markdown, page("tests/test_why.md"), None, None)
    assert link in generated


def _first_line(name: str, source: list[str]) -> int:
    """The line of ``def name`` or of the first decorator above it, from 1."""
    line = next(i for i, text in enumerate(source) if text.startswith(f"def {name}("))
    while line > 0 and source[line - 1].startswith(("@", " ", ")")):
        line -= 1
    return line + 1


@needs_docs_extra
def test_links_to_repository_files_open_their_page_at_the_name() -> None:
    repository_files = hook("repository_files")
    markdown = (
        "[a](../tests/test_why.py#test_static_fields), [b](../examples/quickstart.py), "
        "[c](../tests/test_why.py), [d](other.md), [e](../examples/missing.py), "
        "[f](https://example.org/r/blob/main/tests/test_why.py)"
    )
    rewritten = repository_files.on_page_markdown(markdown, page("guide/x.md"), None, None)
    assert rewritten == (
        "[a](../tests/test_why.md#test_static_fields), [b](../examples/training-loop.md), "
        "[c](../tests/test_why.md), [d](other.md), [e](../examples/missing.py), "
        "[f](https://example.org/r/blob/main/tests/test_why.py)"
    )


@needs_docs_extra
def test_reproductions_and_fixes_are_told_apart_and_variables_filled_in() -> None:
    pages = hook("pages")
    markdown = "\n".join(
        [
            "# P",
            "<!-- pitfalls-test: raises -->",
            "```python",
            "raise ValueError",
            "```",
            "```text",
            "```python not a fence opening here",
            "```",
            "```python",
            "",
            "fixed = True",
            "```",
            "{{ repo_url }} {{ version }} {{ other }}",
        ]
    )
    config = SimpleNamespace(repo_url="https://example.org/r/")
    result = pages.on_page_markdown(markdown, page("p.md"), config, None)
    assert result.splitlines() == [
        "# P",
        "<!-- pitfalls-test: raises -->",
        '!!! failure "Reproduces the error: this raises"',
        "",
        "    ```python",
        "    raise ValueError",
        "    ```",
        "```text",
        "```python not a fence opening here",
        "```",
        '!!! success "Runs cleanly"',
        "",
        "    ```python",
        "",
        "    fixed = True",
        "    ```",
        f"https://example.org/r {pages.version()} {{{{ other }}}}",
    ]
    plain = "# Q\n```python\nx = 1\n```\n"
    assert pages.on_page_markdown(plain, page("q.md"), config, None) == plain
    # No repository yet: a page that would link to it fails the build, naming itself.
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=r"docs/p\.md uses \{\{ repo_url \}\}"):
        pages.on_page_markdown(
            "[r]({{ repo_url }})", page("p.md"), SimpleNamespace(repo_url=""), None
        )


@needs_docs_extra
def test_inline_code_naming_an_object_links_to_its_documentation() -> None:
    crossrefs = hook("crossrefs")
    html = (
        "<p><code>jnp.tanh</code>, <code>object.__new__</code>, <code>model.weights</code>, "
        '<code>x</code></p><pre><code>jax.grad</code></pre><a href="#"><code>jax.jit</code></a>'
        '<h2 id="h"><code>jax.vmap</code></h2>'
    )
    assert crossrefs._link_names(html) == (
        '<p><autoref identifier="jax.numpy.tanh" optional><code>jnp.tanh</code></autoref>, '
        '<autoref identifier="object.__new__" optional><code>object.__new__</code></autoref>, '
        "<code>model.weights</code>, <code>x</code></p><pre><code>jax.grad</code></pre>"
        '<a href="#"><code>jax.jit</code></a><h2 id="h"><code>jax.vmap</code></h2>'
    )


@needs_docs_extra
def test_inventories_made_from_the_installed_packages_give_the_documented_addresses() -> None:
    crossrefs = hook("crossrefs")
    python = crossrefs.python_inventory()
    assert python["dataclasses.replace"].uri == "library/dataclasses.html#dataclasses.replace"
    assert python["object.__new__"].uri == "reference/datamodel.html#object.__new__"
    assert python["int"].uri == "library/functions.html#int"
    assert python["tuple"].uri == "library/stdtypes.html#tuple"
    assert python["TypeError"].uri == "library/exceptions.html#TypeError"
    jax = crossrefs.jax_inventory()
    assert jax["jax.custom_jvp"].uri == "_autosummary/jax.custom_jvp.html#jax.custom_jvp"
    assert jax["jax.tree_util.register_pytree_node"].role == "function"
    assert crossrefs.numpy_inventory()["numpy.ndarray"].role == "class"


@needs_docs_extra
def test_an_unreachable_inventory_is_generated_and_linked_to_its_site(monkeypatch) -> None:
    crossrefs = hook("crossrefs")
    monkeypatch.setattr(crossrefs, "_reachable", lambda url: False)
    handler = {"inventories": ["https://docs.jax.dev/en/latest/objects.inv", "https://x.org/o.inv"]}
    mkdocstrings = SimpleNamespace(config={"handlers": {"python": handler}})
    config = SimpleNamespace(plugins={"mkdocstrings": mkdocstrings}, repo_url="https://r.org/p/")
    crossrefs.on_config(config)
    generated, other = handler["inventories"]
    assert generated["base_url"] == "https://docs.jax.dev/en/latest/"
    assert generated["url"].startswith("file://")
    assert b"# Project: JAX" in Path(generated["url"].removeprefix("file://")).read_bytes()
    assert other == "https://x.org/o.inv"  # a site it cannot stand in for stays as it is


@needs_docs_extra
def test_griffe_sees_the_init_pytree_class_generates_and_the_package_example() -> None:
    import griffe

    extensions = griffe.load_extensions(
        f"{HOOKS / 'griffe_doctests.py'}:DoctestFences",
        f"{HOOKS / 'griffe_pytree_class.py'}:PytreeClassInit",
    )
    package = griffe.load("pytreekit", search_paths=[ROOT], extensions=extensions)
    init = package["_wrappers.Static"].members["__init__"]
    assert [(p.name, str(p.annotation)) for p in init.parameters] == [
        ("self", "None"),
        ("value", "T"),
    ]
    assert "```pycon\n>>> import jax" in package.docstring.value


@needs_docs_extra
def test_every_pytree_class_parameter_is_described_in_its_own_words() -> None:
    import griffe

    extensions = griffe.load_extensions(f"{HOOKS / 'griffe_pytree_class.py'}:PytreeClassInit")
    package = griffe.load("pytreekit", search_paths=[ROOT], extensions=extensions)
    function = package["_decorator.pytree_class"]
    assert function.docstring is not None
    [parameters] = [
        section.value
        for section in function.docstring.parse("google")
        if section.kind is griffe.DocstringSectionKind.parameters
    ]
    described = {
        parameter.name: " ".join(parameter.description.split()) for parameter in parameters
    }
    assert list(described) == [p.name for p in function.parameters]
    assert len(set(described.values())) == len(described)  # no two alike
    for name, text in described.items():
        assert not text.startswith("See "), name
        assert "dataclasses.dataclass``'s arguments" not in text, name
    # A docstring with its own words is shown as it is.
    own = "Args:\n    order: Only ``False``: mine.\n    init: Mine too.\n"
    assert hook("griffe_pytree_class").described(own) == own


# --- in a browser ------------------------------------------------------------------------------


def _tiny_site(tmp_path: Path, line: str, chart: bool = False) -> Path:
    """A Material site of two pages (its content column about 700 px wide: 80 columns of code):
    the front page shows ``line`` in a code block. ``chart``: a third page shows an image 2000 px
    wide without a link to it."""
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: tiny\ntheme:\n  name: material\n  font: false\n"
        "markdown_extensions:\n  - pymdownx.highlight:\n      pygments_lang_class: true\n"
        "  - pymdownx.superfences\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "index.md").write_text(f"# Tiny\n\n```python\n{line}\n```\n")
    (tmp_path / "docs" / "pitfalls.md").write_text(
        "# Pitfalls\n\n```text\nTypeError: zeros_like requires ndarray or scalar arguments\n"
        "TypeError: unhashable type: 'Linear'\n```\n"
    )
    if chart:
        (tmp_path / "docs" / "chart.md").write_text("# Chart\n\n![a chart](chart.svg)\n")
        (tmp_path / "docs" / "chart.svg").write_text(
            '<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="400">'
            '<rect width="2000" height="400" fill="#ccc"/></svg>'
        )
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        check=True,
        timeout=300,
    )
    return tmp_path / "site"


@needs_browser
def test_the_browser_check_fails_on_a_code_block_wider_than_the_column(tmp_path: Path) -> None:
    site_check = load(ROOT / "tools" / "site_check.py")

    fits = site_check.run(_tiny_site(tmp_path / "fits", "x = " + "1 + " * 14 + "1"))  # 60 chars
    assert fits.problems == {}
    assert fits.checked == 6  # 2 pages at 3 widths

    too_wide = site_check.run(_tiny_site(tmp_path / "wide", "x = " + "1 + " * 50 + "1", chart=True))
    assert sorted(too_wide.problems) == ["/ at 1280 px", "/ at 1920 px", "/chart/ at 390 px"]
    [shrunk] = too_wide.problems["/chart/ at 390 px"]
    assert "an image is shown at" in shrunk and "of its 2000 px" in shrunk
    assert "a code block scrolls sideways" in too_wide.problems["/ at 1280 px"][0]
    assert "x = 1 + 1 + 1" in too_wide.problems["/ at 1280 px"][0]
