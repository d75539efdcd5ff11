"""The ``Worker`` class driven in-process: retry backoff on the injectable clock (no
sleeps), handlers that settle their own message. Lease renewal on the engine clock is in
``test_prefetch``."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker, backoff_delay
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def failing(msg: mq.Received) -> None:
    raise RuntimeError(f"attempt {msg.delivery_count}")


def test_backoff_delay_is_half_fixed_half_jitter_and_capped() -> None:
    rng = random.Random(7)
    for attempt, nominal in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 60), (500, 60)]:
        delays = [backoff_delay(attempt, base_s=1, cap_s=60, rng=rng) for _ in range(200)]
        assert all(nominal / 2 <= d <= nominal for d in delays)
        assert max(delays) - min(delays) > nominal / 4  # the jitter is really random


@override_settings(MQLITE={"RETRY_BACKOFF_BASE": 1.0, "RETRY_BACKOFF_CAP": 4.0})
def test_retry_schedule_on_the_frozen_clock(clock: Any) -> None:
    mq.create_queue("bk", max_delivery_count=5)
    seq = mq.send("bk", "x")
    registry = Registry()
    registry.register("bk", failing)
    for attempt, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 4.0)]:
        burst(registry, "bk")
        [p] = mq.peek("bk")
        assert (p.state, p.delivery_count) == ("scheduled", attempt)
        assert p.visible_at is not None
        delay = (p.visible_at - clock.now()).total_seconds()
        assert nominal / 2 - 0.001 <= delay <= nominal
        assert f"RuntimeError: attempt {attempt}" in (p.last_error or "")
        burst(registry, "bk")  # not due yet: nothing to claim
        assert mq.peek("bk")[0].delivery_count == attempt
        clock.advance(delay)
    burst(registry, "bk")
    [dead] = mq.peek("bk", state="dead_lettered")
    assert dead.seq == seq and dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert "RuntimeError: attempt 5" in (dead.last_error or "")


def test_handler_that_settles_itself_is_left_alone(caplog: Any) -> None:
    mq.create_queue("own")
    deferred = mq.send("own", "defer me")
    completed = mq.send("own", "complete me")
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        if msg.seq == deferred:
            msg.defer()
        else:
            msg.complete()

    registry.register("own", handle)
    burst(registry, "own")
    assert [(p.seq, p.state) for p in mq.peek("own")] == [(deferred, "deferred")]
    assert mq.stats("own").totals["completed"] == 1
    assert completed not in [p.seq for p in mq.peek("own")]
    assert "lease lost" not in caplog.text and "could not settle" not in caplog.text


def test_module_level_settlement_marked_on_the_message() -> None:
    """What the Tasks backend does: settle through the engine, then say so."""
    mq.create_queue("res", keep_results=60)
    mq.send("res", "x")
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        from django_mqlite.engine.settle import complete_with_result

        assert msg.lock_token is not None
        complete_with_result(msg.queue, msg.seq, msg.lock_token, {"answer": 42})
        msg.settled = "complete"

    registry.register("res", handle)
    burst(registry, "res")
    [p] = mq.peek("res")
    assert p.state == "completed"


def test_worker_registers_heartbeats_and_marks_stopped() -> None:
    from django_mqlite.models import Worker as WorkerRow

    mq.create_queue("hb")
    registry = Registry()
    registry.register("hb", lambda msg: None)
    worker = burst(registry, "hb", concurrency=3)
    row = WorkerRow.objects.get(pk=worker.worker_id)
    assert row.queues == ["hb"] and row.stopped_at is not None and row.in_flight == 0
    assert row.started_at <= row.last_seen


def test_unknown_queue_or_missing_consumer_fails_fast() -> None:
    from django.core.exceptions import ImproperlyConfigured

    registry = Registry()
    registry.register("nowhere", lambda msg: None)
    with pytest.raises(mq.QueueNotFoundError):
        Worker(["nowhere"], install_signals=False, registry=registry).run()
    with pytest.raises(ImproperlyConfigured, match="no consumer is registered"):
        Worker(["other"], registry=registry)
    with pytest.raises(ImproperlyConfigured, match="no consumers"):
        Worker(registry=Registry())


def test_a_worker_that_cannot_settle_on_stopping_is_not_marked_stopped(
    monkeypatch: Any, caplog: Any
) -> None:
    """A stopped worker's locks are reclaimed at once. If its last completions could not
    be written (the database refused), its leases are still live: it must not mark
    itself stopped, so they come back only when they expire (never two live leases)."""
    from django.db import OperationalError

    from django_mqlite.engine import settle
    from django_mqlite.models import Worker as WorkerRow
    from django_mqlite.worker import settlement
    from django_mqlite.worker.delivery import Delivery

    mq.create_queue("nf", lock_duration=60)
    seq = mq.send("nf", "x")
    registry = Registry()
    registry.register("nf", lambda msg: None)
    worker = Worker(["nf"], install_signals=False, registry=registry, reaper=False)
    worker._start()
    [m] = mq.receive("nf", worker_id=worker.worker_id)
    worker.pool.done.append(Delivery(m, worker.consumers["nf"], 60.0, 1e12))  # finished

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(settlement, "flush_completions", refuse)
    monkeypatch.setattr(settle, "abandon", refuse)  # the shutdown abandon fails too
    worker._finish()
    row = WorkerRow.objects.get(pk=worker.worker_id)
    assert row.stopped_at is None
    assert "unsettled lease" in caplog.text
    [p] = mq.peek("nf")
    assert (p.seq, p.state) == (seq, "locked")
    assert mq.reap()["stale_worker_locks"] == 0  # not before the heartbeat goes stale
    monkeypatch.undo()  # with the completion written, stopping marks the row
    worker2 = burst(registry, "nf")
    assert WorkerRow.objects.get(pk=worker2.worker_id).stopped_at is not None
