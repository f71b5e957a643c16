"""The codemod in CI: --comments never (the report alone), --select/--ignore of codes, a
'# noqa: PTKnnn' comment per class, TODO comments within the project's line length, and what
the report says about hashing and the new run-time dependency."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import require

require("libcst")

from migrate_helpers import codemod, write  # noqa: E402

LEFT = """
    import jax


    @jax.tree_util.register_pytree_node_class
    class Settings:
        def __init__(self, w, options):
            self.w = w
            self.options = options

        def tree_flatten(self):
            return (self.w,), {"options": self.options, "and a much longer key": self.options}

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children, **aux)


    @jax.tree_util.register_pytree_node_class
    class Cached:
        def __init__(self, w):
            self.w = w
            self.cache = None

        def tree_flatten(self):
            return (self.w,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
"""


def test_comments_never_reports_without_writing_a_comment(tmp_path: Path) -> None:
    write(tmp_path, {"left.py": LEFT})
    before = (tmp_path / "left.py").read_text()
    check = codemod(tmp_path, "--check", "--comments", "never", ".")
    assert check.code == 0  # nothing to rewrite, and no comment pending: CI passes
    assert "left, PTK105" in check.out and "left, PTK108" in check.out
    assert check.out.endswith("0 files would be transformed, 0 skipped, 2 warnings, 0 failures.\n")
    assert codemod(tmp_path, "--comments", "never", ".").code == 0
    assert (tmp_path / "left.py").read_text() == before
    assert codemod(tmp_path, "--check", ".").code == 1  # the comments would be written


def test_select_and_ignore_codes(tmp_path: Path) -> None:
    write(tmp_path, {"left.py": LEFT})
    ignored = codemod(tmp_path, "--check", "--ignore", "PTK105", "--report", "json", ".")
    summary = ignored.report["summary"]
    assert summary["left"] == {"PTK108": 1} and summary["suppressed"] == 1
    assert summary["warnings"] == 1
    codemod(tmp_path, "--select", "PTK1", "--ignore", "ptk108", ".")
    comments = [line for line in (tmp_path / "left.py").read_text().splitlines() if "TODO" in line]
    assert [c.split(":")[0] for c in comments] == ["# TODO[pytreekit-migrate] PTK105"]
    bad = codemod(tmp_path, "--select", "E501", ".")
    assert bad.code == 2 and "E501 is not a code" in bad.err


def test_a_noqa_comment_silences_a_class(tmp_path: Path) -> None:
    source = LEFT.replace(
        "    class Cached:", "    class Cached:  # noqa: PTK108 (the cache is rebuilt lazily)"
    )
    write(tmp_path, {"left.py": source})
    result = codemod(tmp_path, "--report", "json", ".")
    entries = {e["class"]: e for e in result.report["registrations"]}
    assert entries["Cached"]["suppressed"] == "# noqa"
    assert entries["Settings"]["suppressed"] is None
    text = (tmp_path / "left.py").read_text()
    assert text.count("TODO[pytreekit-migrate]") == 1
    assert "left, PTK108" not in codemod(tmp_path, "--check", ".").out


def test_a_bare_ptk_noqa_keeps_a_rewritable_class_as_it_is(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "point.py": """
                import jax


                @jax.tree_util.register_pytree_node_class  # noqa: PTK
                class Point:
                    def __init__(self, x):
                        self.x = x

                    def tree_flatten(self):
                        return (self.x,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """
        },
    )
    before = (tmp_path / "point.py").read_text()
    result = codemod(tmp_path, "--check", "--report", "json", ".")
    assert result.code == 0
    [entry] = result.report["registrations"]
    assert (entry["code"], entry["suppressed"]) == ("PTK100", "# noqa")
    assert codemod(tmp_path, ".").code == 0 and (tmp_path / "point.py").read_text() == before


def test_comments_stay_within_the_project_s_line_length(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/left.py": LEFT, "pyproject.toml": "[tool.ruff]\nline-length = 79\n"})
    codemod(tmp_path, "pkg")
    comments = [
        line for line in (tmp_path / "pkg/left.py").read_text().splitlines() if line.startswith("#")
    ]
    # the code and the whole reason, wrapped onto continuation lines within the line length
    assert comments == [
        '# TODO[pytreekit-migrate] PTK105: aux data is a dict ({"options": self.options,',
        '#   "and a much longer key": self.o...)',
        "# TODO[pytreekit-migrate] PTK108: __init__ sets cache, which flatten does not",
        "#   carry",
    ]
    assert all(len(line) <= 79 for line in comments)
    assert codemod(tmp_path, "--check", "pkg").code == 0  # a second run: the same comments
    codemod(tmp_path, "pkg", "--line-length", "120")
    text = (tmp_path / "pkg/left.py").read_text()
    assert (
        "# TODO[pytreekit-migrate] PTK108: __init__ sets cache, which flatten does not carry"
        in (text)
    )


def test_hashing_is_reported_as_python_decides_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "shapes.py": """
                import jax


                class Base:
                    def __eq__(self, other):
                        return type(self) is type(other)


                @jax.tree_util.register_pytree_node_class
                class Circle(Base):
                    def __init__(self, r):
                        self.r = r

                    def tree_flatten(self):
                        return (self.r,), None

                    @classmethod
                    def tree_unflatten(cls, aux, children):
                        return cls(*children)
            """
        },
    )
    result = codemod(tmp_path, "--report", "json", ".")
    [entry] = result.report["registrations"]
    assert entry["changes"]["hashing"] == (
        "unchanged (eq=False): unhashable (Base defines __eq__ without __hash__), as before"
    )
    assert result.report["summary"]["imports_pytreekit"] == ["shapes.py"]


def test_the_project_s_formatter_runs_on_the_written_files(tmp_path: Path) -> None:
    formatter = tmp_path / "formatter.py"
    formatter.write_text(
        "import sys\n"
        "for name in sys.argv[1:]:\n"
        "    with open(name, 'a', encoding='utf-8') as file:\n"
        "        file.write('# formatted\\n')\n",
        encoding="utf-8",
    )
    write(tmp_path, {"pkg/left.py": LEFT, "pkg/other.py": "x = 1\n"})
    command = f"{sys.executable} {formatter}"
    result = codemod(tmp_path, "pkg", "--format-command", command)
    assert result.code == 0
    assert (tmp_path / "pkg/left.py").read_text().endswith("# formatted\n")
    assert (tmp_path / "pkg/other.py").read_text() == "x = 1\n"  # not written: not formatted
    failing = codemod(
        tmp_path, "pkg", "--line-length", "120", "--format-command", f"{sys.executable} -c 1/0"
    )
    assert failing.code == 2
    assert "pkg/left.py: failed: written, but --format-command failed (exit 1)" in failing.out
