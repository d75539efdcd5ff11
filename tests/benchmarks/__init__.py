"""Tests of benchmarks/: the harness runs, and the docs show what its results files say."""
