"""Producing: one message per transaction (autocommit), and batches of 64 and 256."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq

from .. import peers
from ..backlog import BODY
from ..harness import Context, Stopwatch, repeat, reset


def single(ctx: Context) -> dict[str, Any]:
    n = ctx.size("single")

    def once() -> tuple[float, float]:
        reset()
        with Stopwatch() as t:
            for _ in range(n):
                mq.send("bench", BODY)
        return t.result(n)

    out = {"mqlite.produce_single": repeat(ctx, once, "msg/s", n=n)}
    if peers.has_tasks_db():

        def once_tasks() -> tuple[float, float]:
            reset()
            with Stopwatch() as t:
                peers.enqueue_tasks(n)
            return t.result(n)

        out["tasks_db.produce_single"] = repeat(ctx, once_tasks, "tasks/s", n=n)
    return out


def batch(ctx: Context) -> dict[str, Any]:
    n = ctx.size("batch")
    out: dict[str, Any] = {}
    for size in (64, 256):

        def once(size: int = size) -> tuple[float, float]:
            reset()
            with Stopwatch() as t:
                for start in range(0, n, size):
                    k = min(size, n - start)
                    mq.send_batch("bench", [mq.OutMessage(BODY) for _ in range(k)])
            return t.result(n)

        out[f"mqlite.produce_batch_{size}"] = repeat(ctx, once, "msg/s", n=n)
    if peers.has_tasks_db():
        # Django Tasks has no bulk enqueue: the nearest thing is many enqueues in one
        # transaction.
        m = max(256, n // 10)

        def once_tasks() -> tuple[float, float]:
            reset()
            with Stopwatch() as t:
                peers.enqueue_tasks(m, per_transaction=256)
            return t.result(m)

        out["tasks_db.produce_batch_256"] = repeat(
            ctx, once_tasks, "tasks/s", n=m, note="256 enqueue() calls per transaction"
        )
    return out
