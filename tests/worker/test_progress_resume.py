"""Progress and checkpoints in a worker: reports ride on its lease renewals (visible while
the handler runs) and on the completion; a checkpoint survives a failed attempt; at a
worker's shutdown a ``resumable`` consumer is asked to stop (an ``async def`` one is
cancelled) and its message is given back to resume from its checkpoint, its delivery not
counted and no failure recorded."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from tests.support.concurrency import retrying
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)

BOUND_S = 20.0


def _serve(registry: Registry) -> tuple[Worker, threading.Thread]:
    worker = Worker(["work"], install_signals=False, registry=registry, reaper=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return worker, thread


def _until(check: Any) -> Any:
    deadline = time.monotonic() + BOUND_S
    while not (got := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
    return got


def test_progress_is_visible_while_running_and_after_completion() -> None:
    mq.create_queue("work", lock_duration=1, keep_results=60)  # renewed every 0.5 s
    go = threading.Event()

    def handle(msg: mq.Received) -> None:
        msg.set_progress({"step": 1})
        go.wait(BOUND_S)
        msg.set_progress({"step": 2})  # written by the completion

    seq = mq.send("work", "x")
    registry = Registry()
    registry.register("work", handle)
    worker, thread = _serve(registry)
    try:
        running = _until(lambda: [p for p in retrying(lambda: mq.peek("work")) if p.progress])
        assert (running[0].state, running[0].progress) == ("locked", {"step": 1})
        go.set()
        done = _until(lambda: retrying(lambda: mq.peek("work", state="completed")))
    finally:
        go.set()
        worker.stop()
        thread.join(BOUND_S)
    assert (done[0].seq, done[0].progress) == (seq, {"step": 2})


def test_a_checkpoint_survives_a_failed_attempt() -> None:
    mq.create_queue("work", max_delivery_count=3)
    seen: list[Any] = []

    def handle(msg: mq.Received) -> None:
        seen.append(msg.last_checkpoint)
        if msg.delivery_count == 1:
            msg.checkpoint({"page": 3})  # never renewed: the abandon's renewal writes it
            raise RuntimeError("first attempt fails")

    mq.send("work", "x")
    registry = Registry()
    registry.register("work", handle)
    with mq.clock.frozen() as clock:
        burst(registry, "work")
        clock.advance(3600)  # past the retry's backoff
        mq.reap()
        burst(registry, "work")
    assert seen == [None, {"page": 3}]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_resumable_handler_is_given_back_at_shutdown(kind: str) -> None:
    mq.create_queue("work", max_delivery_count=1)
    starts: list[int] = []
    reached = threading.Event()

    def sync_handle(msg: mq.Received) -> None:
        start = msg.last_checkpoint or 0
        starts.append(start)
        for step in range(start, 10**6):
            msg.checkpoint(step)
            if step >= 5:
                reached.set()
            if msg.stop_requested:
                raise RuntimeError("stopping")
            if step >= start + 5 and len(starts) > 1:
                return
            time.sleep(0.005)

    async def async_handle(msg: mq.Received) -> None:
        start = msg.last_checkpoint or 0
        starts.append(start)
        for step in range(start, 10**6):
            msg.checkpoint(step)
            if step >= 5:
                reached.set()
            if step >= start + 5 and len(starts) > 1:
                return
            await asyncio.sleep(0.005)

    seq = mq.send("work", "x")
    registry = Registry()
    registry.register("work", sync_handle if kind == "sync" else async_handle, resumable=True)
    worker, thread = _serve(registry)
    assert reached.wait(BOUND_S)
    worker.stop()
    thread.join(BOUND_S)
    assert not thread.is_alive()
    [back] = mq.peek("work")
    # Given back: active, its delivery not counted, no failure, the checkpoint stored.
    assert (back.seq, back.state, back.delivery_count, back.last_error) == (seq, "active", 0, None)
    assert back.checkpoint >= 5 and worker.pool.failures == 0
    burst(registry, "work")  # one delivery allowed, and it is still the first
    assert starts[0] == 0 and starts[1] == back.checkpoint
    assert mq.peek("work") == [] and mq.stats("work").totals["completed"] == 1
