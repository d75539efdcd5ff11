"""How long one claim takes as the backlog grows, and behind a long blocked group.

A claim here is ``receive(max_messages=1)`` followed by ``complete`` of what it got (so
the backlog stays the same size); the figure is the receive alone, in milliseconds.
"""

from __future__ import annotations

import time
from typing import Any

import django_mqlite as mq

from .. import peers
from ..backlog import BODY, fill_direct
from ..harness import Context, reset, summary

SAMPLES = 300


def _claim_ms(queue: str, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        got = mq.receive(queue, max_messages=1)
        out.append((time.perf_counter() - t) * 1000)
        if not got:
            raise RuntimeError(f"{queue} ran dry")
        mq.complete(queue, got[0].seq, got[0].lock_token or "")
    return out


def _stats(samples: list[float], backlog: int) -> dict[str, Any]:
    # The median of SAMPLES claims per repeat, summarised over repeats; p99 from all.
    ordered = sorted(samples)
    return {"backlog": backlog, "p99": ordered[int(len(ordered) * 0.99) - 1]}


def claim_latency(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for backlog in ctx.sizes["backlogs"]:
        reset()
        fill_direct("bench", backlog)
        _claim_ms("bench", 50)  # warm the cache and the connection
        medians, everything = [], []
        for _ in range(ctx.repeat):
            s = _claim_ms("bench", SAMPLES)
            medians.append(sorted(s)[len(s) // 2])
            everything += s
        out[f"mqlite.claim_{backlog}"] = summary(medians, "ms", **_stats(everything, backlog))
    if peers.has_tasks_db():
        for backlog in ctx.sizes["tasks_backlogs"]:
            reset()
            peers.bulk_tasks(backlog)
            medians, everything = [], []
            for _ in range(ctx.repeat):
                s = []
                for _ in range(SAMPLES // 3):
                    t = time.perf_counter()
                    task = peers.claim_one_task()
                    s.append((time.perf_counter() - t) * 1000)
                    task.set_successful(None)
                medians.append(sorted(s)[len(s) // 2])
                everything += s
            out[f"tasks_db.claim_{backlog}"] = summary(medians, "ms", **_stats(everything, backlog))
    return out


def blocked_group(ctx: Context) -> dict[str, Any]:
    """A group_fifo queue whose group "big" holds 20k messages behind a head that a
    consumer holds locked: claims of other groups must not wade through them."""
    n = ctx.size("blocked")
    reset()
    mq.create_queue("grouped", ordering="group_fifo")
    for start in range(0, n, 256):
        k = min(256, n - start)
        mq.send_batch("grouped", [mq.OutMessage(BODY, group_id="big") for _ in range(k)])
    head = mq.receive("grouped", max_messages=1)
    assert head and head[0].group_id == "big"
    per = SAMPLES + 50
    medians, everything = [], []
    for r in range(ctx.repeat):
        mq.send_batch(
            "grouped",
            [mq.OutMessage(BODY, group_id=f"g{r}-{i}") for i in range(per)],
        )
        _claim_ms("grouped", 50)
        s = _claim_ms("grouped", SAMPLES)
        medians.append(sorted(s)[len(s) // 2])
        everything += s
    mq.complete("grouped", head[0].seq, head[0].lock_token or "")
    mq.delete_queue("grouped", force=True)
    return {"mqlite.claim_behind_blocked": summary(medians, "ms", **_stats(everything, n))}
