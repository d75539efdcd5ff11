"""``python -m benchmarks.workflows`` still runs end to end (tiny N, SQLite): each drain
is checked by the script itself (every task done, the batch finished, its callback
enqueued once). Asserts shape, never timing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_batch_overhead_benchmark_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.workflows",
            "--db",
            "sqlite",
            "--n",
            "40",
            "--repeat",
            "1",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=240,
        capture_output=True,
        text=True,
    ).stdout
    assert re.search(r"sqlite +40 tasks, runworker --burst: plain .* ratio \d+\.\d\dx", out), out
