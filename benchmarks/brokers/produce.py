"""``python -m benchmarks.brokers.produce SYSTEM N [--every SECONDS [--warm SECONDS]]``:
enqueue N of the record task through SYSTEM's own API, in a process of its own. With
``--every``, one task each SECONDS carrying the wall time it was enqueued at (the
pickup-latency run); without, as fast as the API goes, unmeasured (the backlog a drain
starts from).

With ``--warm``, the process first sends one task of its own (timed like the others: the
pickup of a fresh producer's first task, its connection and first statements included),
waits until a worker has recorded it, stays idle for ``--warm`` seconds, and only then
sends the N: those are sent by a producer that is warm, as a web process's long-lived
connection or broker pool is, into a worker that is warm and idle."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

APPS = "benchmarks.brokers.apps"


def _sender(system: str) -> Callable[[float | None], Any]:
    if system.startswith("celery"):
        from .apps.celery_app import record as c

        return lambda t: c.delay(t)
    if system.startswith("dramatiq"):
        from .apps.dramatiq_app import record as d

        return lambda t: d.send(t)
    if system == "huey":
        from .apps.huey_app import record as h

        return lambda t: h(t)
    if system == "rq":
        from .apps.rq_app import queue
        from .apps.rq_app import record as r

        q: Any = queue()
        return lambda t: q.enqueue(r, t)
    if system == "procrastinate":
        from .apps.procrastinate_app import app
        from .apps.procrastinate_app import record as p

        app.open()
        return lambda t: p.defer(enqueued_at=t)
    if system in ("mqlite", "tasks_db", "ox"):  # Django Tasks, in the bench project
        import django

        os.environ.setdefault("BENCH_SYSTEM", system)
        django.setup()
        from benchmarks.benchproject.noop.tasks import record_task

        return lambda t: record_task.enqueue(t)
    raise SystemExit(f"unknown system {system!r}")


def _warm_up(send: Callable[[float | None], Any], idle_s: float) -> None:
    """One timed task, waited for (2 minutes at most), then ``idle_s`` of nothing."""
    from . import record

    before = record.done()
    send(time.time())
    deadline = time.monotonic() + 120
    while record.done() <= before:
        if time.monotonic() > deadline:
            raise SystemExit("the warm-up task was not recorded within 120 s")
        time.sleep(0.005)
    time.sleep(idle_s)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("system")
    parser.add_argument("n", type=int)
    parser.add_argument("--every", type=float, default=0.0)
    parser.add_argument("--warm", type=float, default=None)
    args = parser.parse_args()
    send = _sender(args.system)
    if args.warm is not None:
        _warm_up(send, args.warm)
    if args.every:
        next_at = time.perf_counter()
        for _ in range(args.n):
            send(time.time())
            next_at += args.every
            time.sleep(max(0.0, next_at - time.perf_counter()))
        return
    if args.system in ("mqlite", "tasks_db", "ox"):
        from django.db import transaction

        for start in range(0, args.n, 1000):
            with transaction.atomic():
                for _ in range(min(1000, args.n - start)):
                    send(None)
        return
    for _ in range(args.n):
        send(None)


if __name__ == "__main__":
    main()
