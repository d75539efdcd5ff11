"""How often a draining worker's main loop runs: once per batch, not once per message.

A handler's return wakes the loop only when the loop has something to do before the
deadline it sleeps to (``Worker._needs_wake``): the first settlement waiting (its group
commit), a full batch, an empty pool, room to claim, a stop. Each pass of the loop costs
CPU (the connection's health, the flush, timeout and renewal checks), and in a drain a
pass per message was about a sixth of the worker's CPU a task (measured: a 20,000-task
SQLite drain took 7.7-8.0 s of CPU with the rule against 9.8-10.9 without).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker, prefetch, runner
from django_mqlite.worker.prefetch import MAX_BATCH
from tests.support.inprocess import Running
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

N = 1000
HANDLER_S = 0.0003


def _drain(concurrency: int) -> tuple[int, list[int]]:
    mq.create_queue("passes")
    mq.send_batch("passes", [mq.OutMessage(str(n)) for n in range(N)])
    done: list[int] = []
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        time.sleep(HANDLER_S)  # as a task's I/O does, it lets the loop's thread run
        done.append(int(msg.body))

    registry.register("passes", handle)
    worker = Worker(
        ["passes"],
        burst=True,
        concurrency=concurrency,
        reaper=False,
        periodic=False,
        install_signals=False,
        registry=registry,
    )
    real = worker._tick
    passes = 0

    def tick(*args: Any) -> Any:
        nonlocal passes
        passes += 1
        return real(*args)

    worker._tick = tick  # type: ignore[method-assign]
    assert worker.run() == 0
    return passes, done


@pytest.mark.parametrize(("concurrency", "most"), [(1, N // 4), (4, N // 7)])
def test_a_drain_runs_the_loop_about_once_a_batch(
    concurrency: int, most: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Settlements are written when MAX_BATCH wait or the pool is empty, not when 4 ms
    # have passed, and the prefetch is MAX_BATCH however long a handler takes, so the
    # count does not depend on this machine's speed.
    monkeypatch.setattr(prefetch, "GROUP_COMMIT_S", 600.0)
    monkeypatch.setattr(prefetch, "HORIZON_S", 600.0)
    monkeypatch.setattr(runner, "GROUP_COMMIT_S", 600.0)
    passes, done = _drain(concurrency)
    assert sorted(done) == list(range(N))
    stats = mq.stats("passes")
    assert stats.counts["active"] == 0 and stats.counts["locked"] == 0
    assert stats.totals["completed"] == N
    # A pass a message before (measured 0.92 with one thread; 0.23 with four, whose
    # returns often come while the loop runs). Now a claim per half a prefetch, a write
    # per batch (two passes: the first settlement waiting sets the sleep's deadline),
    # and at the end of a burst, which claims at every pass, a claim per return once
    # the queue is empty: at most a prefetch's worth (measured 0.14-0.16 and 0.08).
    assert passes <= most, f"{passes} passes of the loop for {N} messages"
    assert MAX_BATCH <= N


def test_a_handler_s_return_wakes_the_loop_only_when_it_has_work() -> None:
    mq.create_queue("passes")
    registry = Registry()
    registry.register("passes", lambda msg: None)
    worker = Worker(["passes"], concurrency=2, install_signals=False, registry=registry)
    # An empty pool: flush at once, claim, or end a burst.
    assert worker._needs_wake(0, 0, 5)
    # A full batch waits to be written.
    assert worker._needs_wake(10, 1, MAX_BATCH)
    # A free thread with nothing waiting for it: claim.
    assert worker._needs_wake(0, 1, 3)
    # Both threads busy and enough waiting for them: the loop sleeps on.
    worker.prefetch.observe(0.001)
    assert not worker._needs_wake(worker.prefetch.target() - 2, 2, 3)
    # A stop in progress hears every return.
    worker.stop("test")
    assert worker._needs_wake(worker.prefetch.target() - 2, 2, 3)


def test_a_settlement_is_written_at_its_group_commit_while_the_pool_stays_full() -> None:
    """The first settlement waiting wakes the loop even when nothing else would (its
    one thread busy, enough claimed to keep it busy): the loop, asleep until the next
    renewal or a poll (a second or more), must shorten its sleep to the group commit."""
    mq.create_queue("passes")
    mq.send_batch("passes", [mq.OutMessage(str(n)) for n in range(40)])
    release = threading.Event()
    returned: list[float] = []

    def handle(msg: mq.Received) -> None:
        if msg.body == b"0":
            time.sleep(0.3)  # the loop has claimed and gone to sleep
            returned.append(time.monotonic())
        elif msg.body == b"1":
            release.wait(30)

    registry = Registry()
    registry.register("passes", handle)
    worker = Worker(
        ["passes"],
        concurrency=1,
        reaper=False,
        periodic=False,
        install_signals=False,
        registry=registry,
    )
    worker.prefetch.observe(0.001)  # measured: the first claim takes all 40
    with Running(worker):
        try:
            # "0" returns, "1" holds the thread, 38 wait for it.
            wait_for(
                lambda: mq.stats("passes").totals["completed"] >= 1,
                timeout=20,
                every=0.005,
                what="the first completion written",
            )
            took = time.monotonic() - returned[0]
            assert worker.pool.counts()[0] == 38
        finally:
            release.set()
    assert took < 0.5, f"the first completion was written after {took:.2f} s"
