"""Claiming: order, batches, modes, long-poll, bad input."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

import django_mqlite as mq
from django_mqlite.engine import claim

pytestmark = pytest.mark.django_db


def test_claim_order_is_priority_then_seq(q: str) -> None:
    low = mq.send(q, b"low", priority=-1)
    a = mq.send(q, b"a")
    hi = mq.send(q, b"hi", priority=9)
    b = mq.send(q, b"b")
    assert [m.seq for m in mq.receive(q, max_messages=10)] == [hi, a, b, low]


def test_claim_locks_counts_and_tokens(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    got = mq.receive(q, max_messages=2, lock_duration=45)
    assert len({m.lock_token for m in got}) == 2
    for m in got:
        assert m.lock_token and len(m.lock_token) == 32
        assert m.locked_until == clock.now() + __import__("datetime").timedelta(seconds=45)
        assert m.delivery_count == 1
    assert [p.state for p in mq.peek(q)] == ["locked", "locked"]
    assert mq.receive(q) == []


def test_default_lock_duration_comes_from_the_queue(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("slow", lock_duration=300)
    mq.send("slow", b"x")
    (m,) = mq.receive("slow")
    assert m.locked_until is not None
    assert (m.locked_until - clock.now()).total_seconds() == 300


def test_receive_and_delete_grants_no_lease(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    got = mq.receive(q, max_messages=5, mode="receive_and_delete")
    assert [m.body for m in got] == [b"x", b"y"]
    assert all(m.lock_token is None and m.locked_until is None for m in got)
    assert all(m.delivery_count == 1 for m in got)
    assert mq.peek(q) == []
    with pytest.raises(mq.LockLostError):
        got[0].complete()
    s = mq.stats(q)
    assert s.totals["delivered"] == 2 and s.totals["completed"] == 2


def test_batch_cap_is_256(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(300)])
    assert len(mq.receive(q, max_messages=256)) == 256
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive(q, max_messages=257)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_messages": 0},
        {"max_messages": "3"},
        {"wait": -1},
        {"lock_duration": 0},
        {"mode": "peek"},
        {"attempt_id": ""},
    ],
)
def test_bad_receive_arguments(q: str, kwargs: dict[str, object]) -> None:
    mq.send(q, b"x")
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive(q, **kwargs)  # type: ignore[arg-type]
    assert mq.peek(q)[0].state == "active"  # nothing claimed


def test_receive_unknown_queue(db: object) -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.receive("nope")


@pytest.mark.django_db(transaction=True)
def test_wait_returns_as_soon_as_a_message_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fallback poll slowed past the wait: only the send's wake-up can end it early.
    monkeypatch.setattr(claim, "POLL_FIRST_S", 30.0)
    monkeypatch.setattr(claim, "POLL_MAX_S", 30.0)
    mq.create_queue("poll")

    def producer() -> None:
        time.sleep(0.3)
        try:
            mq.send("poll", b"late")
        finally:
            connections.close_all()

    t = threading.Thread(target=producer)
    start = time.monotonic()
    t.start()
    got = mq.receive("poll", wait=10)
    elapsed = time.monotonic() - start
    t.join()
    assert [m.body for m in got] == [b"late"]
    assert elapsed < 5  # woke on the send, not at the end of the wait


@pytest.mark.django_db(transaction=True)
def test_wait_gives_up_empty_at_the_deadline() -> None:
    mq.create_queue("poll")
    start = time.monotonic()
    assert mq.receive("poll", wait=0.3) == []
    assert 0.25 <= time.monotonic() - start < 3
