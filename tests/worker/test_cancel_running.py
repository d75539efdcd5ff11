"""Cancelling running work in a worker: the request reaches a running handler through the
lease renewal the worker makes anyway (at once through NOTIFY on PostgreSQL); a handler
that stops is dead-lettered as ``Cancelled`` (no retry, no failure counted); an ``async
def`` handler is cancelled; one that ignores the request is stopped by its timeout and
dead-lettered as cancelled too; one that finishes first completes."""

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
from tests.support.features import requires

pytestmark = pytest.mark.django_db(transaction=True)

BOUND_S = 20.0  # every wait below is bounded by this


def _serve(handle: Any, *, timeout: float | None = None) -> tuple[Worker, threading.Thread]:
    registry = Registry()
    registry.register("work", handle, timeout=timeout)
    worker = Worker(["work"], install_signals=False, registry=registry, reaper=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return worker, thread


def _stop(worker: Worker, thread: threading.Thread) -> None:
    worker.stop()
    thread.join(BOUND_S)
    assert not thread.is_alive()


def _until(check: Any) -> None:
    deadline = time.monotonic() + BOUND_S
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _dead(seq: int) -> list[mq.Peeked]:
    return [p for p in mq.peek("work", state="dead_lettered") if p.seq == seq]


def test_a_sync_handler_sees_the_request_and_is_dead_lettered_as_cancelled() -> None:
    mq.create_queue("work", lock_duration=1, max_delivery_count=5)  # renewed every 0.5 s
    started = threading.Event()
    seen: list[bool] = []

    def handle(msg: mq.Received) -> None:
        started.set()
        deadline = time.monotonic() + BOUND_S
        while not msg.cancel_requested and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(msg.cancel_requested)
        raise RuntimeError("stopping")

    seq = mq.send("work", "x")
    worker, thread = _serve(handle)
    try:
        assert started.wait(BOUND_S)
        assert retrying(lambda: mq.request_cancel("work", seq)) is True
        _until(lambda: _dead(seq))
    finally:
        _stop(worker, thread)
    [dead] = _dead(seq)
    assert seen == [True] and dead.dead_letter_reason == "Cancelled"
    assert dead.delivery_count == 1  # not retried
    assert worker.pool.failures == 0
    assert mq.stats("work").totals["rejected"] == 1


def test_an_async_handler_is_cancelled() -> None:
    mq.create_queue("work", lock_duration=1)
    started = threading.Event()
    cancelled: list[bool] = []

    async def handle(msg: mq.Received) -> None:
        started.set()
        try:
            await asyncio.sleep(BOUND_S)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    seq = mq.send("work", "x")
    worker, thread = _serve(handle)
    try:
        assert started.wait(BOUND_S)
        retrying(lambda: mq.request_cancel("work", seq))
        _until(lambda: _dead(seq))
    finally:
        _stop(worker, thread)
    assert cancelled == [True]
    assert _dead(seq)[0].dead_letter_reason == "Cancelled"


def test_a_handler_that_ignores_the_request_is_stopped_by_its_timeout() -> None:
    mq.create_queue("work", lock_duration=1, max_delivery_count=5)
    started = threading.Event()
    release = threading.Event()

    def handle(msg: mq.Received) -> None:
        started.set()
        release.wait(BOUND_S)

    seq = mq.send("work", "x")
    worker, thread = _serve(handle, timeout=2)
    try:
        assert started.wait(BOUND_S)
        retrying(lambda: mq.request_cancel("work", seq))
        _until(lambda: _dead(seq))
    finally:
        release.set()
        _stop(worker, thread)
    [dead] = _dead(seq)
    assert dead.dead_letter_reason == "Cancelled" and dead.delivery_count == 1


def test_a_handler_that_returns_completes_whatever_was_asked() -> None:
    mq.create_queue("work", lock_duration=1, keep_results=60)
    started = threading.Event()

    def handle(msg: mq.Received) -> None:
        started.set()
        _until(lambda: msg.cancel_requested)

    seq = mq.send("work", "x")
    worker, thread = _serve(handle)
    try:
        assert started.wait(BOUND_S)
        retrying(lambda: mq.request_cancel("work", seq))
        _until(lambda: mq.peek("work", state="completed"))
    finally:
        _stop(worker, thread)
    assert [p.seq for p in mq.peek("work", state="completed")] == [seq]


@requires("listen_notify")
@pytest.mark.skipif(
    "os.environ.get('MQLITE_TEST_DB') == 'pgbouncer'",
    reason="LISTEN needs a session; through a transaction-pooling PgBouncer it hears nothing "
    "(tests/worker/test_listen.py covers that path)",
)
def test_notify_brings_the_request_before_any_renewal() -> None:
    """With a 60 s lease the first renewal is 30 s away: the request's NOTIFY reaches
    the handler at once (without NOTIFY the tests above show the renewal bringing it)."""
    mq.create_queue("work", lock_duration=60)
    started = threading.Event()
    seen_after: list[float] = []

    def handle(msg: mq.Received) -> None:
        started.set()
        t0 = time.monotonic()
        _until(lambda: msg.cancel_requested)
        seen_after.append(time.monotonic() - t0)
        raise mq.Cancelled()

    seq = mq.send("work", "x")
    worker, thread = _serve(handle)
    try:
        assert started.wait(BOUND_S)
        listeners = [t for t in worker._threads if hasattr(t, "listening")]
        _until(lambda: listeners and listeners[0].listening.is_set())
        mq.request_cancel("work", seq)
        _until(lambda: _dead(seq))
    finally:
        _stop(worker, thread)
    assert seen_after and seen_after[0] < 10
