"""mkdocs hook: links into the Python, NumPy and JAX documentation.

- The API reference's signatures, and any inline code on any page that names an object
  (`jax.custom_jvp`, `dataclasses.replace`, `jnp.tanh`, `object.__new__`, `pytreekit.replace`),
  link to that object's documentation. mkdocstrings resolves the names through the projects'
  Sphinx inventories (``objects.inv``, listed in mkdocs.yml).
- The inventories are fetched at build time. Where the build machine cannot reach a project's
  site (a closed network, as on the CI machines), its inventory is generated instead from the
  installed package: every public name of the modules below, at the address that project's
  documentation gives such a name (JAX's and NumPy's autosummary pages, Python's library pages).
  Only names that the installed release has are listed.

(The API reference's "source" links open the site's own pages of the package's modules:
docs/_hooks/repository_files.py.)
"""

from __future__ import annotations

import builtins
import functools
import importlib
import logging
import re
import tempfile
import types
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocstrings import Inventory

log = logging.getLogger("mkdocs.hooks.crossrefs")

# A site that answers does within this; a closed network fails at once (no DNS).
PROBE_SECONDS = 5

PYTHON_MODULES = (
    "abc",
    "collections",
    "collections.abc",
    "concurrent.futures",
    "contextlib",
    "copy",
    "dataclasses",
    "enum",
    "functools",
    "importlib",
    "inspect",
    "itertools",
    "multiprocessing",
    "operator",
    "pathlib",
    "pickle",
    "runpy",
    "tempfile",
    "threading",
    "types",
    "typing",
    "warnings",
    "weakref",
)
# Builtin types whose entries are on the "Built-in Types" page, not "Built-in Functions".
PYTHON_STDTYPES = {
    "bytearray",
    "bytes",
    "dict",
    "frozenset",
    "list",
    "memoryview",
    "range",
    "set",
    "str",
    "tuple",
}
PYTHON_CONSTANTS = {"Ellipsis", "False", "None", "NotImplemented", "True"}
# object's methods that the data model page describes (`object.__new__`, ...).
PYTHON_DATAMODEL = ("__new__", "__init__", "__eq__", "__hash__", "__repr__", "__setattr__")

JAX_MODULES = (
    "jax",
    "jax.ad_checkpoint",
    "jax.debug",
    "jax.dtypes",
    "jax.export",
    "jax.flatten_util",
    "jax.lax",
    "jax.nn",
    "jax.numpy",
    "jax.random",
    "jax.sharding",
    "jax.stages",
    "jax.tree",
    "jax.tree_util",
    "jax.typing",
)
NUMPY_MODULES = ("numpy", "numpy.random", "numpy.testing")

# How pages abbreviate modules in inline code: `jnp.tanh` is jax.numpy.tanh.
ABBREVIATIONS = {"jnp": "jax.numpy", "np": "numpy", "jtu": "jax.tree_util"}


# --- inventories -------------------------------------------------------------------------------


def _public(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    for name in sorted(getattr(module, "__all__", None) or dir(module)):
        if not name.startswith("_"):
            try:
                value = getattr(module, name)
            except AttributeError:  # a lazy or deprecated name
                continue
            if not isinstance(value, types.ModuleType):
                yield name, value


def _role(value: Any) -> str:
    if isinstance(value, type):
        return "exception" if issubclass(value, BaseException) else "class"
    return "function" if callable(value) else "data"


def python_inventory() -> Inventory:
    inventory = Inventory(project="Python")
    for name, value in _public(builtins):
        if name in PYTHON_CONSTANTS:
            page = "library/constants.html"
        elif isinstance(value, type) and issubclass(value, BaseException):
            page = "library/exceptions.html"
        elif name in PYTHON_STDTYPES:
            page = "library/stdtypes.html"
        elif callable(value):
            page = "library/functions.html"
        else:
            continue
        inventory.register(name, "py", _role(value), f"{page}#{name}")
    for method in PYTHON_DATAMODEL:
        name = f"object.{method}"
        inventory.register(name, "py", "method", f"reference/datamodel.html#{name}")
    for module_name in PYTHON_MODULES:
        module = importlib.import_module(module_name)
        page = f"library/{module_name}.html"
        inventory.register(module_name, "py", "module", f"{page}#module-{module_name}")
        for name, value in _public(module):
            full = f"{module_name}.{name}"
            inventory.register(full, "py", _role(value), f"{page}#{full}")
    return inventory


def _autosummary_inventory(project: str, modules: tuple[str, ...], page: str) -> Inventory:
    """Names documented one page each, as Sphinx's autosummary lays them out."""
    inventory = Inventory(project=project)
    for module_name in modules:
        module = importlib.import_module(module_name)
        inventory.register(module_name, "py", "module", f"{module_name}.html#module-{module_name}")
        for name, value in _public(module):
            full = f"{module_name}.{name}"
            inventory.register(full, "py", _role(value), page.format(name=full))
    return inventory


def jax_inventory() -> Inventory:
    return _autosummary_inventory("JAX", JAX_MODULES, "_autosummary/{name}.html#{name}")


def numpy_inventory() -> Inventory:
    return _autosummary_inventory("NumPy", NUMPY_MODULES, "reference/generated/{name}.html#{name}")


GENERATORS = {
    "docs.python.org": python_inventory,
    "numpy.org": numpy_inventory,
    "docs.jax.dev": jax_inventory,
}


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_SECONDS) as response:
            return bool(response.status == 200)
    except OSError:
        return False


# Where generated inventories live while mkdocs runs (removed when it exits).
_GENERATED = tempfile.TemporaryDirectory(prefix="pytreekit-inventories-")


@functools.cache  # once per process: `mkdocs serve` rebuilds call on_config again
def _stand_in(url: str) -> tuple[tuple[str, str], ...]:
    """An inventory generated from the installed package, for an unreachable ``url``."""
    host = urllib.parse.urlsplit(url).netloc
    inventory = GENERATORS[host]()
    path = Path(_GENERATED.name) / f"{host}.inv"
    path.write_bytes(inventory.format_sphinx())
    log.info(
        "%s is out of reach: linking to it through an inventory of %d names generated from the "
        "installed package",
        url,
        len(inventory),
    )
    return ("url", path.as_uri()), ("base_url", url.rsplit("/", 1)[0] + "/")


@event_priority(100)  # before mkdocstrings' on_config, which starts the downloads
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    handler = config.plugins["mkdocstrings"].config["handlers"]["python"]
    inventories = []
    for entry in handler.get("inventories", []):
        url = entry if isinstance(entry, str) else entry["url"]
        if urllib.parse.urlsplit(url).netloc in GENERATORS and not _reachable(url):
            entry = dict(_stand_in(url))
        inventories.append(entry)
    handler["inventories"] = inventories
    return config


# --- inline code that names an object ---------------------------------------------------------

# Regions whose inline code stays as it is: code blocks, links, headings, existing references.
_UNTOUCHED = re.compile(r"<(pre|a|autoref|h[1-6])\b.*?</\1>", re.DOTALL)
_NAME = re.compile(r"<code>([A-Za-z_]\w*(?:\.\w+)+)</code>")
_ROOTS = {"jax", "numpy", "object", "pytreekit", *ABBREVIATIONS}
_ROOTS |= {module.partition(".")[0] for module in PYTHON_MODULES}


def _link_names(html: str) -> str:
    def link(match: re.Match[str]) -> str:
        name = match.group(1)
        root, _, rest = name.partition(".")
        if root not in _ROOTS:
            return match.group(0)
        identifier = f"{ABBREVIATIONS.get(root, root)}.{rest}"
        # optional: a name no inventory knows stays plain code, without a warning.
        return f'<autoref identifier="{identifier}" optional>{match.group(0)}</autoref>'

    pieces, position = [], 0
    for region in _UNTOUCHED.finditer(html):
        pieces.append(_NAME.sub(link, html[position : region.start()]))
        pieces.append(region.group(0))
        position = region.end()
    pieces.append(_NAME.sub(link, html[position:]))
    return "".join(pieces)


def on_page_content(html: str, page: Page, **kwargs: Any) -> str:
    return _link_names(html)
