"""Imported by nothing: tests/test_codec.py checks that loading static data naming it does not
import it (importing it writes the file ``PYTREEKIT_CODEC_MARKER`` names)."""

import os

from pytreekit import add_safe_references

marker = os.environ.get("PYTREEKIT_CODEC_MARKER")
if marker:
    with open(marker, "w") as out:
        out.write("imported")


def function() -> None:
    """What an artifact names."""


# A module whose functions artifacts may name says so when it is imported (issue 33).
add_safe_references([function])
