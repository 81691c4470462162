"""Benchmarks: `bench/run` runs them all and prints one table (see bench/README.md)."""
