import os
import sys
from pathlib import Path

os.environ["JAX_PLATFORMS"] = "cpu"

ROOT = Path(__file__).resolve().parent.parent
# The quickstart's classes are the seed classes the tests exercise: import them, don't copy them.
sys.path.insert(0, str(ROOT / "examples"))
