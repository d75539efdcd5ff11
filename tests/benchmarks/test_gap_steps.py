"""``python -m benchmarks.gap_steps`` still runs end to end (a few rounds, SQLite): each
claim checks it took the task the enqueue before it sent. Asserts shape, never timing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gap_steps_benchmark_runs(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "BENCH_DB": "sqlite",
        "BENCH_SQLITE_PATH": str(tmp_path / "gap.sqlite3"),
        "ROUNDS": "3",
        "GAP_MS": "1",
        "BENCH_BROKER_REDIS": "redis://127.0.0.1:1/0",  # no Redis: the step is left out
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.gap_steps"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout
    number = r"\d+\.\d{3}"
    for step in ("a Django Tasks enqueue\\(\\)", "a claim of one \\(mq.receive\\)", "SELECT 1"):
        assert re.search(rf"^\| {step} \| {number} \| {number} \|$", out, re.M), out
    assert "after 1 ms idle" in out and "Redis" not in out, out
