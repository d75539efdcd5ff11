"""The ``Worker`` class driven in-process: retry backoff on the injectable clock (no
sleeps), handlers that settle their own message. Lease renewal on the engine clock is in
``test_worker_prefetch``."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker, backoff_delay

pytestmark = pytest.mark.django_db(transaction=True)


def run_burst(registry: Registry, queue: str, **kwargs: Any) -> Worker:
    options = {"reaper": False, **kwargs}
    worker = Worker([queue], burst=True, install_signals=False, registry=registry, **options)
    assert worker.run() == 0
    return worker


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
        run_burst(registry, "bk")
        [p] = mq.peek("bk")
        assert (p.state, p.delivery_count) == ("scheduled", attempt)
        assert p.visible_at is not None
        delay = (p.visible_at - clock.now()).total_seconds()
        assert nominal / 2 - 0.001 <= delay <= nominal
        assert f"RuntimeError: attempt {attempt}" in (p.last_error or "")
        run_burst(registry, "bk")  # not due yet: nothing to claim
        assert mq.peek("bk")[0].delivery_count == attempt
        clock.advance(delay)
    run_burst(registry, "bk")
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
    run_burst(registry, "own")
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
    run_burst(registry, "res")
    [p] = mq.peek("res")
    assert p.state == "completed"


def test_worker_registers_heartbeats_and_marks_stopped() -> None:
    from django_mqlite.models import Worker as WorkerRow

    mq.create_queue("hb")
    registry = Registry()
    registry.register("hb", lambda msg: None)
    worker = run_burst(registry, "hb", concurrency=3)
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
