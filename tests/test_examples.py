"""Every example script runs and its own checks hold (they assert against undecorated JAX), and
every one is in the examples gallery (docs/examples/), whose pages run the scripts and draw their
plots while the site is built (markdown-exec): here those blocks run as the build runs them."""

import contextlib
import functools
import io
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
GALLERY = ROOT / "docs" / "examples"
GALLERY_PAGES = sorted(path for path in GALLERY.glob("*.md") if path.name != "index.md")
# A block markdown-exec runs: ```python exec="on" ...```, its options after the language.
EXEC_BLOCK = re.compile(
    r'^```python (?P<options>[^\n]*exec="on"[^\n]*)\n(?P<code>.*?)^```$', re.M | re.S
)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out  # each example reports what it showed


def test_all_scenarios_have_examples():
    names = {p.name for p in EXAMPLES}
    assert {"quickstart.py", "scaled_model_jvp.py", "repeated_jvps.py"} <= names
    assert {"clipped_gradient_vjp.py", "stable_gradient.py"} <= names


def test_the_readme_quickstart_command_prints_what_it_did():
    """`python examples/quickstart.py`, as the README says to run it: the trained model and the
    loss going down, nothing else."""
    result = subprocess.run(
        [sys.executable, "examples/quickstart.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        "Model(linear=Linear(in_features=3, out_features=2, weights=f32[2,3]"
    )
    assert re.fullmatch(r"loss \d+\.\d{4} -> \d+\.\d{4}", lines[1])


def test_every_example_has_one_gallery_page_listed_on_the_gallery_index():
    included = {
        page.name: re.findall(r'^--8<-- "(examples/\w+\.py)"$', page.read_text(), re.M)
        for page in GALLERY_PAGES
    }
    scripts = sorted(script for found in included.values() for script in found)
    assert scripts == sorted(path.relative_to(ROOT).as_posix() for path in EXAMPLES)
    index = (GALLERY / "index.md").read_text(encoding="utf-8")
    for page, found in included.items():
        assert len(found) == 1, f"{page} includes {found}: one script a page"
        assert f"]({page})" in index, f"docs/examples/index.md does not link {page}"


@pytest.mark.parametrize("page", GALLERY_PAGES, ids=lambda p: p.name)
def test_gallery_page_runs_its_script_and_draws_its_plot(page, monkeypatch):
    """The page's exec blocks, in order, as markdown-exec runs them: one namespace per session,
    from the repository's root, ``print`` collecting the output the page shows."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    sessions: dict[str, dict] = {}
    outputs = []
    for block in EXEC_BLOCK.finditer(page.read_text(encoding="utf-8")):
        options = dict(re.findall(r'(\w+)="([^"]*)"', block.group("options")))
        namespace = sessions.setdefault(options.get("session", str(len(outputs))), {})
        shown = io.StringIO()
        namespace["print"] = functools.partial(print, file=shown)
        with contextlib.redirect_stdout(io.StringIO()) as stray:
            exec(compile(block.group("code"), f"{page.name} block", "exec"), namespace)
        assert stray.getvalue() == "", "the page's output must go through print"
        outputs.append((options, shown.getvalue()))
    script = re.search(r'--8<-- "(examples/\w+\.py)"', page.read_text()).group(1)
    expected = subprocess.run(
        [sys.executable, script], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    ).stdout
    (first, output), *plots = outputs
    assert first.get("result") == "text" and output == expected
    for options, output in plots:
        assert options.get("html") == "1"
        assert output.startswith('<div class="gallery-figure"><svg') and "</svg>" in output
