"""Benchmarks: `bench/run` runs them all and prints one table (see bench/README.md)."""

import os

# every hub a benchmark starts moves its demo instruments at any hour (SPEC 16: --demo-hours always, load tests)
os.environ.setdefault("MARKET_DEMO_HOURS", "always")
