"""Draining with real worker processes: the clock runs from starting the processes until
the last one exits (``--burst`` / ``--batch`` exit once nothing is claimable), so it
includes each worker's start-up (Django setup, about 0.3 s)."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import django_mqlite as mq

from .. import peers
from ..backlog import BODY, fill
from ..harness import Context, Stopwatch, pending, rate, repeat, reset, skipped, wait_all

CONCURRENCY = "32"  # handler threads per worker; the handler is a no-op


def runworker_args(burst: bool = True) -> list[str]:
    # One process each: the scenario starts 1 and 2 of them itself.
    args = ["runworker", "--queue", "bench", "--concurrency", CONCURRENCY, "--processes", "1"]
    args += ["--no-reaper", "-v0"]
    return [*args, "--burst"] if burst else args


def first_claim(workers: list[subprocess.Popen[bytes]]) -> float:
    """``perf_counter()`` when the workers first claimed (their start-up is over)."""
    from django.db import connection

    while all(w.poll() is None for w in workers):
        with connection.cursor() as c:
            c.execute("SELECT 1 FROM mqlite_message WHERE state = 'locked' LIMIT 1")
            if c.fetchone() is not None:
                break
        time.sleep(0.005)
    return time.perf_counter()


def consumer_drain(ctx: Context) -> dict[str, Any]:
    n = ctx.size("drain")
    out: dict[str, Any] = {}
    variants: list[tuple[int, dict[str, str], str]] = [(1, {}, ""), (2, {}, "")]
    if ctx.db == "postgres":
        # What bounds PostgreSQL here is the commit's WAL flush; with the workers'
        # sessions at synchronous_commit=off (a per-connection choice an operator can
        # make: a lost completion is a redelivery) the same drain shows the difference.
        variants.append((2, {"BENCH_PG_ASYNC_COMMIT": "1"}, "_async_commit"))
    for procs, env, suffix in variants:
        steady: list[float] = []

        def once(
            procs: int = procs, env: dict[str, str] = env, steady: list[float] = steady
        ) -> tuple[float, float]:
            reset()
            fill("bench", n)
            with Stopwatch() as t:
                workers = [ctx.manage(*runworker_args(), env=env) for _ in range(procs)]
                first = first_claim(workers)
                wait_all(workers, 600)
            left = pending()
            if left:
                raise RuntimeError(f"drain left {left} messages")
            steady.append(rate(n, t.start + t.seconds - first))
            return t.result(n)

        key = f"mqlite.drain_{procs}proc{suffix}"
        out[key] = repeat(ctx, once, "msg/s", n=n)
        out[key]["steady_median"] = sorted(steady)[len(steady) // 2]
    if peers.has_tasks_db():
        m = ctx.size("tasks_drain")
        for procs in (1, 2):

            def once_tasks(procs: int = procs) -> tuple[float, float]:
                reset()
                peers.enqueue_tasks(m, per_transaction=256)
                with Stopwatch() as t:
                    wait_all([ctx.manage(*peers.db_worker_args()) for _ in range(procs)], 600)
                left = peers.tasks_pending()
                if left:
                    raise RuntimeError(f"db_worker left {left} tasks")
                return t.result(m)

            out[f"tasks_db.drain_{procs}proc"] = repeat(ctx, once_tasks, "tasks/s", n=m)
    return out


def tasks_drain(ctx: Context) -> dict[str, Any]:
    """Django Tasks end to end: enqueue through the Tasks API, drain with each backend's
    own worker command. django-tasks-db's figure is ``drain`` (tasks_db.drain_1proc)."""
    if not peers.has_mqlite_backend():
        return {"mqlite.tasks_drain_1proc": skipped(peers.MQLITE_BACKEND_MISSING)}
    return {"mqlite.tasks_drain_1proc": _mqlite_tasks_drain(ctx)}  # pragma: no cover


def _mqlite_tasks_drain(ctx: Context) -> dict[str, Any]:  # pragma: no cover
    """Once ``django_mqlite.backends.MQLiteBackend`` is merged the bench settings add it as
    the ``mqlite`` Tasks backend (serving queue ``default``): enqueue through
    ``noop_task.using(backend="mqlite")`` in transactions of 256 and drain with
    ``runworker --queue default --burst`` as above."""
    n = ctx.size("drain")

    def once() -> tuple[float, float]:
        reset()
        peers.enqueue_tasks(n, per_transaction=256, backend="mqlite")
        with Stopwatch() as t:
            worker = ctx.manage(
                "runworker",
                "--queue",
                "default",
                "--burst",
                "-c",
                CONCURRENCY,
                "-p",
                "1",
                "--no-reaper",
            )
            wait_all([worker], 600)
        left = pending("default")
        if left:
            raise RuntimeError(f"the Tasks drain left {left} tasks")
        return t.result(n)

    return repeat(ctx, once, "tasks/s", n=n)


def end_to_end(ctx: Context) -> dict[str, Any]:
    """Produce (batches of 64) and consume at once: one worker runs while this process
    sends; the clock stops when the last message is gone."""
    n = ctx.size("end_to_end")

    def once() -> float:
        reset()
        worker = ctx.manage(*runworker_args(burst=False))
        time.sleep(1.0)  # let it start and go idle: we time the queue, not Django's setup
        with Stopwatch() as t:
            for start in range(0, n, 64):
                mq.send_batch("bench", [mq.OutMessage(BODY) for _ in range(min(64, n - start))])
            while pending():
                time.sleep(0.005)
        worker.terminate()
        wait_all([worker], 60)
        return t.result(n)[0]  # the worker's CPU is not ours to count here

    out = {"mqlite.end_to_end": repeat(ctx, once, "msg/s", n=n)}
    if peers.has_tasks_db():
        m = ctx.size("tasks_drain")

        def once_tasks() -> float:
            reset()
            worker = ctx.manage("db_worker", "--no-startup-delay", "--interval", "0.01")
            time.sleep(1.0)
            with Stopwatch() as t:
                peers.enqueue_tasks(m, per_transaction=64)
                while peers.tasks_pending():
                    time.sleep(0.005)
            worker.terminate()
            worker.wait(60)
            return t.result(m)[0]

        out["tasks_db.end_to_end"] = repeat(ctx, once_tasks, "tasks/s", n=m)
    return out
