"""``python -m benchmarks``: run every benchmark (benchmarks/run.py) and print its tables.

A full run writes its results to docs/speed/results.json: the documentation's Speed page draws
every table and chart from that file when the site is built (docs/_hooks/speed.py). A ``--quick``
run (tiny sizes, one repeat: a check that nothing has rotted) writes benchmarks/results.json
instead, so it never replaces the page's figures; ``--json PATH`` writes elsewhere.
"""

import sys
from pathlib import Path

from benchmarks.run import main

PAGE_RESULTS = Path(__file__).resolve().parent.parent / "docs" / "speed" / "results.json"

argv = sys.argv[1:]
if "--quick" not in argv and "--json" not in argv:
    argv += ["--json", str(PAGE_RESULTS)]
main(argv)
if "--quick" not in argv and argv[argv.index("--json") + 1] == str(PAGE_RESULTS):
    print(f"\nwrote {PAGE_RESULTS}: the Speed page's tables and charts are drawn from it")
