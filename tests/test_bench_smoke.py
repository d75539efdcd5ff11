"""The benchmark harness still runs end to end (tiny sizes, SQLite). Asserts shape,
never timing: numbers are for ``python -m benchmarks``, not for the test suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_bench_harness_runs_quick_scenarios(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    env = {**os.environ, "BENCH_SIZES": json.dumps(_TINY), "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "run",
            "--db",
            "sqlite",
            "--quick",
            "--repeat",
            "1",
            "--out",
            str(out),
            "--scenario",
            "produce_single",
            "produce_batch",
            "drain",
            "claim_latency",
            "raw_floor",
            "write_amplification",
            "tasks_drain",
            "defaults",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=240,
        capture_output=True,
    )
    data = json.loads(out.read_text())
    sqlite = data["results"]["sqlite"]
    assert data["machine"]["cores"]
    assert len(data["machine"]["load_before"]) == 3
    for key in (
        "mqlite.produce_single",
        "mqlite.produce_batch_256",
        "mqlite.drain_1proc",
        "mqlite.claim_1000",
        "sqlite3.floor_drain_batch_64",
        "mqlite.bytes_per_msg_batch64",
        "mqlite.defaults_drain",
        "mqlite.enqueue_txn",
        "mqlite.send_single",
    ):
        group = next(g for g in sqlite.values() if isinstance(g, dict) and key in g)
        result = group[key]
        assert result["min"] <= result["median"] <= result["max"], key
    assert "mqlite.tasks_drain_1proc" in sqlite["tasks_drain"]
    from benchmarks.report import tables

    assert "Tasks drain, start-up included" in tables(data)


_TINY = {
    "single": 50,
    "batch": 512,
    "drain": 300,
    "tasks_drain": 20,
    "end_to_end": 200,
    "backlogs": [1000],
    "tasks_backlogs": [200],
    "blocked": 300,
    "rss": 500,
    "writes": 200,
    "defaults": 100,
    "defaults_single": 20,
}


def test_the_docs_defaults_table_is_the_results_file() -> None:
    """docs/benchmark.md shows the defaults table of benchmarks/results/defaults.json as
    ``python -m benchmarks report`` renders it: every row from that one run, none edited."""
    from benchmarks.report import defaults_table

    data = json.loads((ROOT / "benchmarks" / "results" / "defaults.json").read_text())
    table = defaults_table(data).strip()
    assert table.count("| Tasks drain, steady state |") == len(data["results"])
    assert table in (ROOT / "docs" / "benchmark.md").read_text()
