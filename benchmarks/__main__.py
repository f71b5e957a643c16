"""``python -m benchmarks``: run every benchmark (benchmarks/run.py), then draw its charts.

The charts go to docs/speed/ (``--charts DIR`` elsewhere); a ``--quick`` run draws none unless
``--charts`` is given, so a smoke test does not overwrite the Speed page's charts.
"""

import sys
from datetime import date
from pathlib import Path

from benchmarks.run import main

argv = sys.argv[1:]
charts_dir = None
if "--charts" in argv:
    at = argv.index("--charts")
    charts_dir = Path(argv[at + 1])
    del argv[at : at + 2]
elif "--quick" not in argv:
    from benchmarks.charts import DEFAULT_DIR as charts_dir

results = main(argv)
if charts_dir is not None:
    from benchmarks.charts import write

    results["machine"].setdefault("date", date.today().isoformat())
    for path in write(results, charts_dir):
        print(f"wrote {path}")
