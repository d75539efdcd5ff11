"""A consumer that raises ``mq.Snooze`` is given the message back without using up a
delivery: the worker settles it with the engine's one snooze verb."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def run(queue: str, handle: object) -> Worker:
    """Burst workers until nothing is active: a burst worker may stop while a handler
    thread is still settling, before its snooze(0) made the message claimable again."""
    registry = Registry()
    registry.register(queue, handle)
    failures = 0
    for _ in range(20):
        worker = burst(registry, queue)
        failures += worker.pool.failures
        if not mq.peek(queue, state="active"):
            break
    worker.pool.failures = failures
    return worker


def test_a_handler_snoozes_without_using_up_deliveries() -> None:
    """One delivery allowed, four snoozes: every delivery is the first, then it runs."""
    mq.create_queue("nap", max_delivery_count=1)
    mq.send("nap", b"x")
    seen: list[int] = []

    def handle(msg: mq.Received) -> None:
        seen.append(msg.delivery_count)
        if len(seen) <= 4:
            raise mq.Snooze(0)

    worker = run("nap", handle)
    assert seen == [1] * 5
    assert mq.peek("nap") == []
    assert worker.pool.failures == 0
    assert mq.stats("nap").totals["completed"] == 1
    assert mq.stats("nap").totals["abandoned"] == 0


def test_a_handler_snooze_parks_the_message() -> None:
    mq.create_queue("nap")
    seq = mq.send("nap", b"x")

    def handle(msg: mq.Received) -> None:
        raise mq.Snooze(3600)

    run("nap", handle)
    [parked] = mq.peek("nap")
    assert (parked.seq, parked.state, parked.delivery_count) == (seq, "scheduled", 0)
    assert parked.last_error is None


def test_a_snooze_past_max_snoozes_is_a_counted_failure() -> None:
    mq.create_queue("nap", max_delivery_count=1, max_snoozes=1)
    seq = mq.send("nap", b"x")
    calls: list[int] = []

    def handle(msg: mq.Received) -> None:
        calls.append(msg.delivery_count)
        raise mq.Snooze(0)

    run("nap", handle)
    assert calls == [1, 1]
    [dead] = mq.peek("nap", state="dead_lettered")
    assert dead.seq == seq and dead.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_a_bad_snooze_fails_the_attempt() -> None:
    mq.create_queue("nap", max_delivery_count=1)
    mq.send("nap", b"x", ttl=60)

    def handle(msg: mq.Received) -> None:
        raise mq.Snooze(120)  # past the message's expiry

    run("nap", handle)
    [dead] = mq.peek("nap", state="dead_lettered")
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert "Snooze" in (dead.last_error or "")
