"""A consumer that raises ``mq.Snooze`` is given the message back without using up a
delivery: the worker settles it with the engine's one snooze verb."""

from __future__ import annotations

import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker, handling
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def run(queue: str, handle: object) -> Worker:
    """One burst worker over ``queue``: it ends once nothing is claimable and nothing
    it holds is still being settled."""
    registry = Registry()
    registry.register(queue, handle)
    return burst(registry, queue)


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


def test_a_burst_waits_for_a_snooze_being_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler has returned and its snooze is still being written: the worker still
    holds the message, so a burst that looks then does not end with it unfinished."""
    real = handling.settle_failure

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # meanwhile the main loop claims (nothing) and asks if it is done
        return real(*args, **kwargs)

    monkeypatch.setattr(handling, "settle_failure", slow)
    mq.create_queue("nap")
    mq.send("nap", b"x")
    seen: list[int] = []

    def handle(msg: mq.Received) -> None:
        seen.append(msg.delivery_count)
        if len(seen) <= 2:
            raise mq.Snooze(0)

    run("nap", handle)
    assert len(seen) == 3
    assert mq.stats("nap").totals["completed"] == 1
