"""``python -m benchmarks.workflows [--db sqlite|postgres|both] [--n 10000] [--repeat 3]``:
the overhead of a batch. N no-op Django tasks enqueued as the children of one
``mq.batch`` (with an ``on_complete`` callback) against the same N tasks enqueued
plain, each drained by one ``runworker --burst`` (no tuning flag: ``--burst`` only makes
it exit once nothing is claimable), in one run, on a fresh database per vendor
(docs/workflows.md cites it).

Both sides enqueue the same tasks in transactions of 1,000 (the batch's inside its one
``with mq.batch(...)`` block) before the clock starts; the clock runs from starting the
worker until it exits, start-up included on both sides. The two are interleaved repeat
by repeat, so a change in the machine's load falls on both. Each batch drain is checked:
the batch finished with every child completed and its callback enqueued exactly once.
Prints the median drain time of each and the ratio batch / plain (the target is 1.5x at
most); writes nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from . import per_database
from .per_database import setup_child

PER_TRANSACTION = 1000
CALLBACK_QUEUE = "bench-done"  # no worker serves it: the callback stays to be counted


def _reset() -> None:
    from django.db import connection, transaction

    from .harness import reset

    reset()
    with transaction.atomic(), connection.cursor() as c:
        for table in ("mqlite_dependency", "mqlite_batch"):
            c.execute(f"DELETE FROM {table}")


def _enqueue(n: int, batch: bool) -> int | None:
    """Enqueue ``n`` no-op tasks (children of one batch when ``batch``); the batch id."""
    import django_mqlite as mq

    from .peers import enqueue_tasks

    if not batch:
        enqueue_tasks(n, per_transaction=PER_TRANSACTION, backend="mqlite")
        return None
    with mq.batch(on_complete=mq.Callback(CALLBACK_QUEUE, {"done": True})) as b:
        enqueue_tasks(n, per_transaction=PER_TRANSACTION, backend="mqlite")
    return b.id


def _drain(n: int, batch: bool) -> float:
    """Seconds one ``runworker --burst`` takes to drain the ``n`` tasks."""
    import django_mqlite as mq

    from .harness import MANAGE, pending

    _reset()
    batch_id = _enqueue(n, batch)
    if pending("default") != n:
        raise RuntimeError(f"expected {n} ready tasks")
    start = time.perf_counter()
    worker = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, str(MANAGE), "runworker", "--burst", "-v0"],
        env={**os.environ, "BENCH_SYSTEM": "mqlite"},
        capture_output=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - start
    if worker.returncode != 0:
        raise RuntimeError(f"runworker failed: {worker.stderr[-2000:]!r}")
    left = pending("default")
    if left:
        raise RuntimeError(f"the drain left {left} tasks")
    if batch_id is not None:
        info = mq.get_batch(batch_id)
        fired = mq.stats(CALLBACK_QUEUE).counts["active"]
        if (info.state, info.completed, fired) != ("finished", n, 1):
            raise RuntimeError(f"batch {info}, {fired} callbacks")
    return seconds


def measure(n: int, repeat: int) -> dict[str, list[float]]:
    import django_mqlite as mq

    mq.create_queue(CALLBACK_QUEUE)
    samples: dict[str, list[float]] = {"plain": [], "batch": []}
    for _ in range(repeat):
        for label in ("plain", "batch"):
            samples[label].append(_drain(n, label == "batch"))
    return samples


def child(db: str, n: int, repeat: int) -> None:
    setup_child(db)
    got = measure(n, repeat)
    plain, batch = statistics.median(got["plain"]), statistics.median(got["batch"])
    print(
        f"{db:9s} {n} tasks, runworker --burst: plain {plain:7.2f} s ({n / plain:7.0f}/s)   "
        f"one batch {batch:7.2f} s ({n / batch:7.0f}/s)   ratio {batch / plain:.2f}x   "
        f"(samples plain {[round(s, 2) for s in got['plain']]}, "
        f"batch {[round(s, 2) for s in got['batch']]})",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    return per_database.main(
        "benchmarks.workflows", argv, default_n=10_000, n_help="tasks per drain", child=child
    )


if __name__ == "__main__":
    sys.exit(main())
