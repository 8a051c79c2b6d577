"""Benchmark suite of dpsk: ``python -m benchmarks --help`` (see benchmarks/README.md)."""
