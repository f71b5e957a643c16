"""Side-by-side speed measurements; run with ``python -m benchmarks``."""
