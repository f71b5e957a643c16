"""Imported by nothing: tests/test_codec.py checks that loading static data naming it does not
import it (importing it writes the file ``PYTREEKIT_CODEC_MARKER`` names)."""

import os

marker = os.environ.get("PYTREEKIT_CODEC_MARKER")
if marker:
    with open(marker, "w") as out:
        out.write("imported")


def function() -> None:
    """What an artifact names."""
