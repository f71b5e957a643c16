"""Why a registration is left, one case per reason the analysis gives: the code, and a reason that
names the culprit. (tests/test_migrate_rules.py shows where the comment goes and that a second
run keeps it; here only the verdicts.)"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from conftest import require

require("libcst")

from migrate_helpers import codemod, write  # noqa: E402

CLASS_FORM = """
    import jax


    @jax.tree_util.register_pytree_node_class
    class C:
        def __init__(self, x, n=1):
            self.x = x
            self.n = n

        def tree_flatten(self):
            return (self.x,), (self.n,)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(children[0], aux[0])
"""


def _with(old: str, new: str) -> str:
    text = textwrap.dedent(CLASS_FORM)
    old, new = old.strip("\n"), new.strip("\n")
    assert old in text, old
    return text.replace(old, new)


INIT = """\
    def __init__(self, x, n=1):
        self.x = x
        self.n = n"""
FLATTEN = """\
    def tree_flatten(self):
        return (self.x,), (self.n,)"""
UNFLATTEN = """\
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux[0])"""

FUNCTIONS = """
    import jax


    class C:
        def __init__(self, x, n=1):
            self.x = x
            self.n = n


    REGISTRATION
"""


def _functions(registration: str) -> str:
    return textwrap.dedent(FUNCTIONS).replace("REGISTRATION", textwrap.dedent(registration))


CASES: list[tuple[str, str, str, str]] = [
    # -- the registration ----------------------------------------------------------------------
    (
        "a registration with no statement to hold a comment",
        _functions("for _ in [jax.tree_util.register_pytree_node_class(C)]:\n    pass\n"),
        "PTK102",
        r"under a 'for' statement",
    ),
    (
        "*args in the registration call",
        _functions("functions = (f, g)\njax.tree_util.register_pytree_node(C, *functions)\n"),
        "PTK116",
        r"passes \*args",
    ),
    (
        "no unflatten given",
        _functions("jax.tree_util.register_pytree_node(C, lambda c: ((c.x,), (c.n,)))\n"),
        "PTK116",
        "gives no unflatten function",
    ),
    (
        "no flatten given",
        _functions(
            "jax.tree_util.register_pytree_with_keys(C, unflatten_func=lambda a, c: C(*c))\n"
        ),
        "PTK116",
        "gives no flatten function",
    ),
    (
        "an abstract tree_flatten",
        _with(FLATTEN, "    @abc.abstractmethod\n" + FLATTEN).replace(
            "import jax", "import abc\nimport jax"
        ),
        "PTK116",
        "C has no tree_flatten method in the scanned files",
    ),
    (
        "flatten takes *args",
        _functions(
            "def flatten(*c):\n    return (c[0].x,), None\n"
            "jax.tree_util.register_pytree_node(C, flatten, lambda a, c: C(*c))\n"
        ),
        "PTK116",
        r"flatten takes \*args",
    ),
    (
        "a decorated flatten method",
        _with(FLATTEN, "    @functools.cache\n" + FLATTEN).replace(
            "import jax", "import functools\nimport jax"
        ),
        "PTK116",
        r"tree_flatten is decorated \(functools.cache\)",
    ),
    (
        "flatten takes two arguments",
        _with(FLATTEN, FLATTEN.replace("(self)", "(self, other)")),
        "PTK116",
        "does not take the instance alone",
    ),
    (
        "unflatten takes three arguments",
        _with(UNFLATTEN, UNFLATTEN.replace("aux, children", "aux, children, extra")),
        "PTK116",
        r"does not take \(aux, children\)",
    ),
    # -- flatten -------------------------------------------------------------------------------
    (
        "flatten stores into something",
        _with(FLATTEN, FLATTEN.replace("return", "CACHE[0] = self\n        return")),
        "PTK104",
        r"flatten assigns CACHE\[0\]",
    ),
    (
        "flatten returns nothing",
        _with(FLATTEN, "    def tree_flatten(self):\n        pass"),
        "PTK104",
        "flatten returns nothing the codemod can read",
    ),
    (
        "flatten returns one list",
        _with(FLATTEN, "    def tree_flatten(self):\n        return [self.x]"),
        "PTK104",
        r"flatten returns \[self.x\], not \(children, aux\)",
    ),
    (
        "flatten unpacks a sequence into the children",
        _with(FLATTEN, "    def tree_flatten(self):\n        return (*self.x,), None"),
        "PTK104",
        r"flatten returns \(\*self.x,\) as children",
    ),
    (
        "flatten reads an attribute twice",
        _with(FLATTEN, "    def tree_flatten(self):\n        return (self.x, self.x), (self.n,)"),
        "PTK104",
        "flatten reads x twice",
    ),
    (
        "flatten and flatten_with_keys disagree",
        _functions(
            "jax.tree_util.register_pytree_with_keys(\n"
            "    C,\n"
            "    lambda c: (((jax.tree_util.GetAttrKey('x'), c.x),), None),\n"
            "    lambda a, c: C(*c),\n"
            "    lambda c: ((c.n,), None),\n"
            ")\n"
        ),
        "PTK104",
        "flatten and flatten_with_keys carry different attributes",
    ),
    (
        "flatten_with_keys without keys",
        _functions(
            "jax.tree_util.register_pytree_with_keys(\n"
            "    C, lambda c: ((c.x,), None), lambda a, c: C(*c)\n"
            ")\n"
        ),
        "PTK104",
        r"flatten_with_keys returns c.x, not \(key, attribute\)",
    ),
    (
        "aux data computed",
        _with(FLATTEN, FLATTEN.replace("(self.n,)", "len(self.x)")),
        "PTK105",
        r"aux data is len\(self.x\)",
    ),
    (
        "flatten reads a method",
        _with(FLATTEN, FLATTEN.replace("(self.x,)", "(self.x, self.scale)"))
        + "\n    def scale(self):\n        return 2\n",
        "PTK106",
        "flatten reads scale, which C defines as a method",
    ),
    (
        "flatten reads a descriptor",
        _with(FLATTEN, FLATTEN.replace("(self.x,)", "(self.x, self.scale)"))
        + "\n    scale = Descriptor()\n",
        "PTK106",
        r"defines as a class attribute \(Descriptor\(\)\)",
    ),
    (
        "a private name",
        _with(
            INIT + "\n\n" + FLATTEN,
            INIT.replace("self.n = n", "self.__n = n")
            + "\n\n"
            + FLATTEN.replace("self.n", "self.__n"),
        ),
        "PTK108",
        "__n is a private name",
    ),
    # -- unflatten -----------------------------------------------------------------------------
    (
        "unflatten runs other code",
        _with(UNFLATTEN, UNFLATTEN.replace("return", "print(children)\n        return")),
        "PTK107",
        r"unflatten runs print\(children\)",
    ),
    (
        "unflatten returns nothing",
        _with(UNFLATTEN, UNFLATTEN.replace("return cls(children[0], aux[0])", "pass")),
        "PTK107",
        "unflatten returns nothing the codemod can read",
    ),
    (
        "unflatten unpacks into too many names",
        _with(UNFLATTEN, UNFLATTEN.replace("return", "x, y = children\n        return")),
        "PTK107",
        "unflatten unpacks x, y from a value of another length",
    ),
    (
        "unflatten unpacks with a star",
        _with(UNFLATTEN, UNFLATTEN.replace("return", "(*rest,) = children\n        return")),
        "PTK107",
        r"unflatten unpacks \(\*rest,\)",
    ),
    (
        "unflatten indexes with a name",
        _with(UNFLATTEN, UNFLATTEN.replace("children[0]", "children[i]")),
        "PTK107",
        r"unflatten passes children\[i\], not a child or aux value",
    ),
    (
        "unflatten passes the aux data flatten leaves None",
        _with(
            FLATTEN + "\n\n" + UNFLATTEN,
            FLATTEN.replace("(self.n,)", "None")
            + "\n\n"
            + UNFLATTEN.replace("children[0], aux[0]", "children[0], aux"),
        ),
        "PTK107",
        "unflatten passes aux, which flatten sets None",
    ),
    (
        "unflatten copies the children first",
        _with(
            UNFLATTEN,
            UNFLATTEN.replace(
                "return cls(children[0]", "copy = list(children)\n        return cls(copy[0]"
            ),
        ),
        "PTK107",
        r"unflatten passes copy\[0\], not a child or aux value",
    ),
    (
        "a new object storing all the children in one attribute",
        _with(
            UNFLATTEN,
            UNFLATTEN.replace(
                "return cls(children[0], aux[0])",
                "new = object.__new__(cls)\n        new.x = children\n        new.n = aux[0]\n"
                "        return new",
            ),
        ),
        "PTK107",
        r"flatten reads x into children\[0\], but unflatten stores a sequence there",
    ),
    (
        "__init__ unpacks a value it was given",
        _with(INIT, INIT.replace("self.x = x\n        self.n = n", "self.x, self.n = x")),
        "PTK109",
        r"__init__ stores part of x in x, not the argument itself",
    ),
    (
        "unflatten stores into the children",
        _with(UNFLATTEN, UNFLATTEN.replace("return", "children[0] = 1\n        return")),
        "PTK107",
        r"unflatten assigns children\[0\]",
    ),
    (
        "unflatten passes a slice",
        _with(UNFLATTEN, UNFLATTEN.replace("children[0], aux[0]", "*children[0:1], *aux")),
        "PTK107",
        r"unflatten unpacks \*children\[0:1\]",
    ),
    (
        "unflatten unpacks keywords",
        _with(UNFLATTEN, UNFLATTEN.replace("aux[0]", "**dict(n=aux[0])")),
        "PTK107",
        r"unflatten unpacks \*\*dict",
    ),
    (
        "unflatten leaves a parameter to its default",
        _with(UNFLATTEN, UNFLATTEN.replace("children[0], aux[0]", "children[0]")),
        "PTK107",
        "unflatten does not pass n: __init__ stores the default of n",
    ),
    (
        "unflatten passes too many arguments",
        _with(UNFLATTEN, UNFLATTEN.replace("aux[0]", "aux[0], children[0]")),
        "PTK107",
        "unflatten passes 3 positional arguments; C.__init__ takes 2",
    ),
    (
        "unflatten passes an unknown keyword",
        _with(UNFLATTEN, UNFLATTEN.replace("aux[0]", "m=aux[0]")),
        "PTK107",
        "unflatten passes m=, which C.__init__ does not take",
    ),
    (
        "unflatten misses a required argument",
        _with(
            INIT + "\n\n" + FLATTEN + "\n\n" + UNFLATTEN,
            INIT.replace("n=1", "n")
            + "\n\n"
            + FLATTEN
            + "\n\n"
            + UNFLATTEN.replace("children[0], aux[0]", "x=children[0]"),
        ),
        "PTK107",
        "unflatten does not pass n to C.__init__",
    ),
    (
        "a store into a new object in the wrong place",
        _with(
            UNFLATTEN,
            UNFLATTEN.replace(
                "return cls(children[0], aux[0])",
                "new = object.__new__(cls)\n        new.x = aux[0]\n        new.n = children[0]\n"
                "        return new",
            ),
        ),
        "PTK107",
        r"flatten reads x into children\[0\], but unflatten stores aux\[0\] there",
    ),
    (
        "a new object missing a store",
        _with(
            UNFLATTEN,
            UNFLATTEN.replace(
                "return cls(children[0], aux[0])",
                "new = object.__new__(cls)\n        new.x = children[0]\n        return new",
            ),
        ),
        "PTK107",
        "unflatten never stores n",
    ),
    (
        "a new object with an extra store",
        _with(
            UNFLATTEN,
            UNFLATTEN.replace(
                "return cls(children[0], aux[0])",
                "new = object.__new__(cls)\n        new.x = children[0]\n        new.n = aux[0]\n"
                "        new.extra = None\n        return new",
            ),
        ),
        "PTK107",
        "unflatten also stores extra",
    ),
    # -- __init__ ------------------------------------------------------------------------------
    (
        "no __init__, but arguments",
        _with(INIT, "    pass"),
        "PTK107",
        "unflatten passes arguments, but C has no __init__",
    ),
    (
        "__init__ takes *args",
        _with(
            INIT,
            INIT.replace("x, n=1", "*args").replace("= x", "= args[0]").replace("= n", "= args[1]"),
        ),
        "PTK107",
        r"__init__ takes \*args or \*\*kwargs",
    ),
    (
        "__init__ never sets a carried attribute",
        _with(INIT, INIT.replace("        self.n = n", "        self.other = n")),
        "PTK108",
        "__init__ sets other, which flatten does not carry",
    ),
    (
        "__init__ sets a carried attribute nowhere",
        _with(INIT, INIT.replace("        self.n = n\n", "").replace("self.n = n", "del n")),
        "PTK108",
        "__init__ never sets n",
    ),
    (
        "an annotated class with other fields",
        _with(INIT, "    x: float\n    extra: int\n" + INIT),
        "PTK108",
        "C annotates extra, which flatten does not carry and does not annotate n",
    ),
    (
        "an InitVar",
        _with(INIT, "    x: float\n    n: dataclasses.InitVar[int]\n" + INIT).replace(
            "import jax", "import dataclasses\nimport jax"
        ),
        "PTK108",
        r"C declares n: dataclasses.InitVar\[int\]",
    ),
    (
        "a dataclass field outside __init__",
        _with(INIT, "    x: float\n    n: int = dataclasses.field(init=False, default=1)")
        .replace("import jax", "import dataclasses\nimport jax")
        .replace("class C:", "@dataclasses.dataclass\nclass C:"),
        "PTK108",
        r"field n of C is not an __init__ parameter \(init=False\)",
    ),
    (
        "__init__ raises",
        _with(INIT, INIT + "\n        raise NotImplementedError"),
        "PTK108",
        "__init__ of C raises unconditionally",
    ),
    (
        "__init__ stores into a dict of self",
        _with(INIT, INIT + "\n        self.__dict__['y'] = 1"),
        "PTK108",
        r"__init__ of C assigns self.__dict__\['y'\]",
    ),
    (
        "__init__ increments",
        _with(INIT, INIT + "\n        self.n += 1"),
        "PTK109",
        r"__init__ stores self.n \+= 1 in n",
    ),
    (
        "__init__ converts with something that is not idempotent",
        _with(INIT, INIT.replace("self.x = x", "self.x = jnp.sin(x)")).replace(
            "import jax", "import jax\nimport jax.numpy as jnp"
        ),
        "PTK109",
        r"__init__ stores jnp.sin\(children\[0\]\) in x, not the argument itself",
    ),
    (
        "__init__ calls itself",
        _with(INIT, INIT.replace("self.x = x", "C.__init__(self, x)")),
        "PTK108",
        "__init__ calls nest too deep to follow",
    ),
    (
        "super().__init__ under multiple bases",
        _with(INIT, INIT.replace("self.x = x", "super().__init__()\n        self.x = x"))
        .replace(
            "class C:",
            "class A:\n    pass\n\n\nclass B:\n    pass\n\n\n"
            "@jax.tree_util.register_pytree_node_class\nclass C(A, B):",
        )
        .replace("@jax.tree_util.register_pytree_node_class\nclass A", "class A"),
        "PTK108",
        r"C has several bases: super\(\).__init__ is not followed",
    ),
    (
        "arguments to object.__init__",
        _with(INIT, INIT.replace("self.x = x", "super().__init__(x)\n        self.x = x")),
        "PTK108",
        "C passes arguments to object.__init__",
    ),
    (
        "arguments to a base without __init__",
        _with(INIT, INIT.replace("self.x = x", "super().__init__(x)\n        self.x = x"))
        .replace(
            "class C:",
            "class Base:\n    pass\n\n\n@jax.tree_util.register_pytree_node_class\nclass C(Base):",
        )
        .replace("@jax.tree_util.register_pytree_node_class\nclass Base", "class Base"),
        "PTK108",
        "C passes arguments to object.__init__",
    ),
    (
        "*args to super().__init__",
        _with(INIT, INIT.replace("self.x = x", "super().__init__(*x)\n        self.x = x"))
        .replace(
            "class C:",
            "class Base:\n    def __init__(self, a):\n        pass\n\n\n"
            "@jax.tree_util.register_pytree_node_class\nclass C(Base):",
        )
        .replace("@jax.tree_util.register_pytree_node_class\nclass Base", "class Base"),
        "PTK108",
        r"C passes \*x to super\(\).__init__",
    ),
    (
        "a call on something else's __init__",
        _with(INIT, INIT.replace("self.x = x", "x.__init__(self)\n        self.x = x")),
        "PTK108",
        r"runs x.__init__\(self\), which may set attributes",
    ),
    (
        "a branch that stores",
        _with(INIT, INIT + "\n        while False:\n            self.y = 1"),
        "PTK108",
        "sets attributes under a 'while' statement",
    ),
    # -- statics -------------------------------------------------------------------------------
    (
        "a static defaulting to list()",
        _with(INIT, INIT.replace("n=1", "n=list()")),
        "PTK114",
        r"static n defaults to list\(\), which is unhashable",
    ),
    # -- the class -----------------------------------------------------------------------------
    (
        "a decorator under the registration",
        _with(INIT, INIT)
        .replace("class C:", "@functools.total_ordering\nclass C:")
        .replace("import jax", "import functools\nimport jax"),
        "PTK112",
        "C is decorated with @functools.total_ordering",
    ),
    (
        "a base with a decorator",
        _with(INIT, INIT)
        .replace(
            "@jax.tree_util.register_pytree_node_class\nclass C:",
            "@functools.total_ordering\nclass Base:\n    pass\n\n\n"
            "@jax.tree_util.register_pytree_node_class\nclass C(Base):",
        )
        .replace("import jax", "import functools\nimport jax"),
        "PTK112",
        "base Base is decorated with @functools.total_ordering",
    ),
    (
        "a base with __setattr__",
        _with(INIT, INIT).replace(
            "@jax.tree_util.register_pytree_node_class\nclass C:",
            "class Base:\n    def __setattr__(self, name, value):\n        pass\n\n\n"
            "@jax.tree_util.register_pytree_node_class\nclass C(Base):",
        ),
        "PTK112",
        "Base defines __setattr__",
    ),
    (
        "a subclass that keeps a base's static as a leaf",
        textwrap.dedent(CLASS_FORM)
        + textwrap.dedent(
            """

            @jax.tree_util.register_pytree_node_class
            class D(C):
                def tree_flatten(self):
                    return (self.x, self.n), None

                @classmethod
                def tree_unflatten(cls, aux, children):
                    return cls(*children)
            """
        ),
        "PTK113",
        "its subclass D carries n as a leaf, which pytreekit would keep static there as in C",
    ),
]


@pytest.mark.parametrize(
    ("source", "code", "match"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_reason(source: str, code: str, match: str, tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": source})
    result = codemod(tmp_path, "--check", "--report", "json", "mod.py")
    entries = [entry for entry in result.report["registrations"] if entry["code"]]
    assert entries, result.report
    assert (entries[0]["code"], entries[0]["verdict"]) == (code, "left"), entries[0]
    assert re.search(match, entries[0]["reason"]), entries[0]["reason"]


def test_a_hierarchy_across_modules_names_the_module(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "base.py": CLASS_FORM,
            "sub.py": """
                import jax

                from base import C


                @jax.tree_util.register_pytree_node_class
                class D(C):
                    def __init__(self, x, n=1):
                        super().__init__(x, n)
                        self.cache = {}
            """,
        },
    )
    entries = codemod(tmp_path, "--report", "json", ".").report["registrations"]
    assert [(e["class"], e["code"]) for e in entries] == [("C", "PTK113"), ("D", "PTK108")]
    assert "its hand-registered subclass D (in sub) is left (PTK108)" in entries[0]["reason"]
