"""What the two durable steps of a pickup cost back to back and after an idle gap:
``python -m benchmarks.gap_steps`` (``BENCH_DB=sqlite`` or ``postgres``; a scratch SQLite
database in the temporary directory, or ``BENCH_SQLITE_PATH``).

The brokers scenario's pickup run sends one task every 50 ms to an idle worker; each
pickup is the producer's enqueue (a Django Tasks ``enqueue()`` through django-mqlite's
backend: on PostgreSQL one prepared statement, on SQLite one write transaction), the
worker's claim (``mq.receive`` of one) and what is around them. Here the same two steps
run in one process, one after the other, with no gap (a drain's pace) and with
``GAP_MS`` (default 50) of sleep before each (the pickup run's pace), the two paces
alternated in blocks of ``BLOCK`` rounds (the first round of a block not counted, it
follows the other pace), ``ROUNDS`` (default 60) samples of each step at each pace;
``SELECT 1`` beside them is the database's round trip at the same pace, and a Redis
``LPUSH`` (the broker's side of Celery on Redis's enqueue) when Redis answers at
``BENCH_BROKER_REDIS``. Medians in ms.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from .per_database import setup_script


def _timed(gap: float, run: Callable[[], object]) -> float:
    time.sleep(gap)
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


BLOCK = 10


def measure(rounds: int, gap_ms: float) -> dict[str, dict[float, list[float]]]:
    """Each step's samples (ms) by gap (s)."""
    from django.db import connection

    import django_mqlite as mq
    from benchmarks.benchproject.noop.tasks import noop_task

    def select_1() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    def claim() -> None:
        if not mq.receive("default", max_messages=1):
            raise RuntimeError("the claim took nothing: the enqueue did not land")

    steps: dict[str, Callable[[], object]] = {
        "a Django Tasks enqueue()": noop_task.enqueue,
        "a claim of one (mq.receive)": claim,
        "SELECT 1": select_1,
    }
    redis = _redis()
    if redis is not None:
        steps["a Redis LPUSH"] = lambda: redis.lpush("bench-gap-steps", b"x")
    out: dict[str, dict[float, list[float]]] = {name: {} for name in steps}
    gaps = (0.0, gap_ms / 1000)
    for _warm in range(5):
        for run in steps.values():
            run()
    counted = BLOCK - 1
    for block in range(2 * -(-rounds // counted)):
        gap = gaps[block % 2]
        for i in range(BLOCK):
            for name, run in steps.items():
                took = _timed(gap, run)
                if i:
                    out[name].setdefault(gap, []).append(took)
    return out


def _redis() -> Any:
    try:
        import redis

        from benchmarks.brokers.record import BROKER_REDIS

        client = redis.Redis.from_url(BROKER_REDIS)
        client.delete("bench-gap-steps")
    except Exception:  # not installed, or not running: the step is left out
        return None
    return client


def table(samples: dict[str, dict[float, list[float]]], vendor: str, gap_ms: float) -> str:
    lines = [
        f"| {vendor}: step | back to back, p50 (ms) | after {gap_ms:g} ms idle, p50 (ms) |",
        "|---|---|---|",
    ]
    for name, by_gap in samples.items():
        warm, cold = (statistics.median(by_gap[g]) for g in sorted(by_gap))
        lines.append(f"| {name} | {warm:.3f} | {cold:.3f} |")
    return "\n".join(lines)


def main() -> None:
    os.environ["BENCH_SYSTEM"] = "mqlite"  # the worker's project: Tasks go to django-mqlite
    setup_script("mqlite-gap-steps.sqlite3")
    from django.db import connection

    gap_ms = float(os.environ.get("GAP_MS", "50"))
    samples = measure(int(os.environ.get("ROUNDS", "60")), gap_ms)
    print(table(samples, connection.vendor, gap_ms))


if __name__ == "__main__":
    main()
