"""The defaults table: every system as its documentation starts it, with no tuning.

For each system (django-mqlite's Tasks backend, django-tasks-db, django-ox when it is
installed), with the same N for all:

- ``enqueue_txn``: N no-op tasks enqueued through the Tasks API in one
  ``transaction.atomic()``;
- ``enqueue_single``: tasks enqueued one by one in autocommit (each its own commit);
  for django-mqlite also ``mq.send`` of a small body in autocommit;
- ``drain``: the N tasks drained by the system's own worker command with no option
  but the one that makes it exit when the queue is empty. Start-up is included: the
  clock runs from starting the process until it exits;
- ``drain_steady``: the same run, start-up excluded the same way for every system: an
  observer polls the count of tasks not yet finished every few milliseconds, and the
  rate is (tasks finished between its first and last change) / (time between them).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import django_mqlite as mq

from .. import peers
from ..harness import Context, Stopwatch, rate, repeat, reset, skipped, wait_all

POLL_S = 0.005


@dataclass
class System:
    name: str
    backend: str  # the Tasks backend alias in the bench settings
    worker: list[str]  # manage.py arguments: the worker command, no tuning
    remaining: Callable[[], int]  # tasks not yet finished


def systems() -> list[System]:
    out = [System("mqlite", "mqlite", ["runworker", "--burst"], _mqlite_remaining)]
    if peers.has_tasks_db():
        out.append(System("tasks_db", "default", ["db_worker", "--batch"], peers.tasks_pending))
    if peers.has_ox():
        out.append(System("ox", "ox", peers.ox_worker_args(), peers.ox_pending))
    return out


def _mqlite_remaining() -> int:
    from ..harness import pending

    return pending("default")


def _enqueue(system: System, n: int, one_transaction: bool) -> tuple[float, float]:
    reset()
    with Stopwatch() as t:
        peers.enqueue_tasks(n, per_transaction=n if one_transaction else 1, backend=system.backend)
    return t.result(n)


def _send_single(n: int) -> tuple[float, float]:
    reset()
    with Stopwatch() as t:
        for i in range(n):
            mq.send("bench", {"i": i})
    return t.result(n)


def _drain(ctx: Context, system: System, n: int, steady: list[float]) -> tuple[float, float]:
    reset()
    peers.enqueue_tasks(n, per_transaction=min(n, 1000), backend=system.backend)
    if system.remaining() != n:
        raise RuntimeError(f"{system.name}: expected {n} ready tasks")
    seen: list[tuple[float, int]] = []
    with Stopwatch() as t:
        worker = ctx.manage(*system.worker)
        while worker.poll() is None:
            left = system.remaining()
            if not seen or left != seen[-1][1]:
                seen.append((time.perf_counter(), left))
            if left == 0:
                break
            time.sleep(POLL_S)
        wait_all([worker], 900)
    left = system.remaining()
    if left:
        raise RuntimeError(f"{system.name}: the drain left {left} tasks")
    # First observed change to the last: finished tasks over the time between them.
    changes = [s for s in seen if s[1] < n]
    if len(changes) >= 2:
        (t0, left0), (t1, left1) = changes[0], changes[-1]
        steady.append(rate(left0 - left1, t1 - t0))
    return t.result(n)


def defaults(ctx: Context) -> dict[str, Any]:
    n = ctx.size("defaults")
    singles = ctx.size("defaults_single")
    out: dict[str, Any] = {}
    if not peers.has_mqlite_backend():
        return {"mqlite.defaults": skipped(peers.MQLITE_BACKEND_MISSING)}
    out["mqlite.send_single"] = repeat(ctx, lambda: _send_single(singles), "msg/s", n=singles)
    for s in systems():
        out[f"{s.name}.enqueue_txn"] = repeat(ctx, lambda s=s: _enqueue(s, n, True), "tasks/s", n=n)
        out[f"{s.name}.enqueue_single"] = repeat(
            ctx, lambda s=s: _enqueue(s, singles, False), "tasks/s", n=singles
        )
        steady: list[float] = []
        key = f"{s.name}.defaults_drain"
        out[key] = repeat(ctx, lambda s=s, st=steady: _drain(ctx, s, n, st), "tasks/s", n=n)
        out[f"{s.name}.defaults_drain_steady"] = (
            {"unit": "tasks/s", "n": n, **_spread(steady)}
            if steady
            else skipped("too fast to observe two changes")
        )
    if not peers.has_ox():
        out["ox.defaults_drain"] = skipped(peers.OX_MISSING)
    return out


def _spread(samples: list[float]) -> dict[str, Any]:
    s = sorted(samples)
    return {"min": s[0], "median": statistics.median(s), "max": s[-1], "samples": s}
