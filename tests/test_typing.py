"""mypy --strict on tests/typing: *_ok.py files are clean, *_errors.py report the marked lines."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
TYPING = ROOT / "tests" / "typing"
MARK = re.compile(r"#\s*E:\s*([\w-]+)")


def _mypy(path: Path) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--show-error-codes",
            str(path),
        ],
        cwd=ROOT,  # finds ./pytreekit whether the package is installed editable or not
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("path", sorted(TYPING.glob("*_ok.py")), ids=lambda p: p.name)
def test_typing_cases_mypy_accepts(path):
    output = _mypy(path)
    assert "Success: no issues found" in output, output


@pytest.mark.parametrize("path", sorted(TYPING.glob("*_errors.py")), ids=lambda p: p.name)
def test_typing_cases_mypy_flags_expected_lines(path):
    expected = {
        (number, match.group(1))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (match := MARK.search(line))
    }
    assert expected, f"{path.name} marks no expected errors"
    output = _mypy(path)
    reported = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(rf"{re.escape(path.name)}:(\d+): error: .*\[([\w-]+)\]", output)
    }
    assert reported == expected, output
