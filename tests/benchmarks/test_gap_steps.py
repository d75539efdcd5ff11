"""``python -m benchmarks.gap_steps`` still runs end to end (a few rounds, SQLite): each
claim checks it took the task the enqueue before it sent. Asserts shape, never timing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .scripts import run_script


@pytest.mark.slow
def test_the_gap_steps_benchmark_runs(tmp_path: Path) -> None:
    env = {
        "BENCH_DB": "sqlite",
        "BENCH_SQLITE_PATH": str(tmp_path / "gap.sqlite3"),
        "ROUNDS": "3",
        "GAP_MS": "1",
        "BENCH_BROKER_REDIS": "redis://127.0.0.1:1/0",  # no Redis: the step is left out
    }
    out = run_script("benchmarks.gap_steps", env=env, timeout=120)
    number = r"\d+\.\d{3}"
    for step in ("a Django Tasks enqueue\\(\\)", "a claim of one \\(mq.receive\\)", "SELECT 1"):
        assert re.search(rf"^\| {step} \| {number} \| {number} \|$", out, re.M), out
    assert "after 1 ms idle" in out and "Redis" not in out, out
