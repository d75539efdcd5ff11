"""``python -m benchmarks.workflows`` still runs end to end (tiny N, SQLite): each drain
is checked by the script itself (every task done, the batch finished, its callback
enqueued once). Asserts shape, never timing."""

from __future__ import annotations

import re

import pytest

from .scripts import run_script


@pytest.mark.slow
def test_the_batch_overhead_benchmark_runs() -> None:
    args = ("--db", "sqlite", "--n", "40", "--repeat", "1")
    out = run_script("benchmarks.workflows", *args, timeout=240)
    assert re.search(r"sqlite +40 tasks, runworker --burst: plain .* ratio \d+\.\d\dx", out), out
