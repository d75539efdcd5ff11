"""Snooze: a received message given back for a delay without using up a delivery, capped
by the queue's ``max_snoozes``; fenced and receipted like every settlement."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import settle
from django_mqlite.engine.types import Outcome

pytestmark = pytest.mark.django_db


def one(q: str) -> mq.Received:
    (m,) = mq.receive(q)
    return m


def counts(seq: int) -> tuple[int, int]:
    """The row's (delivery_count, snooze_count)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT delivery_count, snooze_count FROM mqlite_message WHERE seq = %s", [seq]
        )
        row = cursor.fetchone()
    return row[0], row[1]


def test_snooze_gives_the_delivery_back(make_queue: object) -> None:
    """Ten snoozes on a queue that allows two deliveries: never dead-lettered, and each
    redelivery is still the first."""
    mq.create_queue("s", max_delivery_count=2)
    seq = mq.send("s", b"x")
    for n in range(10):
        m = one("s")
        assert m.delivery_count == 1
        assert m.snooze(0).outcome is Outcome.SNOOZED
        assert counts(seq) == (0, n + 1)
    assert one("s").delivery_count == 1


def test_snooze_parks_until_its_delay_ends(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("s")
    mq.send("s", b"x")
    one("s").snooze(dt.timedelta(seconds=30))
    (p,) = mq.peek("s")
    assert p.state == "scheduled" and p.delivery_count == 0
    clock.advance(29)
    mq.reap()
    assert mq.receive("s") == []
    clock.advance(1)
    mq.reap()
    assert one("s").delivery_count == 1


def test_a_snooze_past_max_snoozes_is_an_abandon(make_queue: object) -> None:
    """The third snooze with max_snoozes=2 counts its delivery, as an abandon with the
    same delay would; on the last allowed delivery it dead-letters."""
    mq.create_queue("s", max_snoozes=2, max_delivery_count=2)
    seq = mq.send("s", b"x")
    assert one("s").snooze(0).outcome is Outcome.SNOOZED
    assert one("s").snooze(0).outcome is Outcome.SNOOZED
    assert one("s").snooze(0).outcome is Outcome.RETRIED
    assert counts(seq) == (1, 3)
    m = one("s")
    assert m.delivery_count == 2
    assert m.snooze(0).outcome is Outcome.DEAD_LETTERED
    (p,) = mq.peek("s")
    assert p.state == "dead_lettered" and p.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_max_snoozes_zero_makes_every_snooze_an_abandon(make_queue: object) -> None:
    mq.create_queue("s", max_snoozes=0)
    seq = mq.send("s", b"x")
    assert one("s").snooze(5).outcome is Outcome.SCHEDULED
    assert counts(seq) == (1, 1)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 10**12, None, "5", True])
def test_bad_delays_are_typed_errors_and_change_nothing(q: str, bad: object) -> None:
    mq.send(q, b"x")
    m = one(q)
    with pytest.raises(mq.InvalidArgumentError):
        m.snooze(bad)  # type: ignore[arg-type]
    (p,) = mq.peek(q)
    assert p.state == "locked" and p.delivery_count == 1
    m.complete()


def test_a_snooze_past_the_ttl_is_refused_and_changes_nothing(make_queue: object) -> None:
    mq.create_queue("s")
    seq = mq.send("s", b"x", ttl=60)
    other = mq.send("s", b"y")
    m, n = mq.receive("s", max_messages=2)
    items = [settle.SnoozeItem(n.seq, n.lock_token or "", 5), (m.seq, m.lock_token, 60)]
    with pytest.raises(mq.SnoozePastExpiryError) as caught:
        settle.snooze_many("s", items)
    assert caught.value.code == "invalid_argument"
    assert {p.seq: p.state for p in mq.peek("s")} == {seq: "locked", other: "locked"}
    assert counts(seq) == (1, 0) and counts(other) == (1, 0)
    m.snooze(59)  # ends before the expiry: fine
    n.complete()


def test_max_snoozes_is_a_queue_option(make_queue: object) -> None:
    assert mq.create_queue("s").max_snoozes == 100
    assert mq.update_queue("s", max_snoozes=3).max_snoozes == 3
    assert mq.get_queue("s").max_snoozes == 3
    with pytest.raises(mq.QueueExistsError):
        mq.create_queue("s", max_snoozes=4)
    for bad in (-1, 100_001, 1.5, None):
        with pytest.raises(mq.InvalidArgumentError):
            mq.update_queue("s", max_snoozes=bad)


def test_snooze_is_fenced(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    m = one(q)
    with pytest.raises(mq.LockLostError):
        mq.snooze(q, m.seq, "0" * 32, 0)
    clock.advance(30)  # at the deadline: expired
    with pytest.raises(mq.LockLostError):
        m.snooze(0)
    (p,) = mq.peek(q)
    assert p.state == "locked" and p.delivery_count == 1


def test_receipts_answer_only_the_same_verb_and_delay(q: str) -> None:
    mq.send(q, b"x")
    m = one(q)
    token = m.lock_token or ""
    m.snooze(10)
    assert settle.snooze_many(q, [(m.seq, token, 10)])[0].outcome is Outcome.REPLAYED
    with pytest.raises(mq.LockLostError):
        mq.snooze(q, m.seq, token, 11)
    with pytest.raises(mq.LockLostError):
        mq.abandon(q, m.seq, token, delay=10)
    # And an abandon's receipt never answers a snooze.
    mq.send(q, b"y")
    mq.reap()
    n = next(r for r in mq.receive(q, max_messages=2) if r.body == b"y")
    n.abandon(10)
    with pytest.raises(mq.LockLostError):
        mq.snooze(q, n.seq, n.lock_token or "", 10)


def test_a_snoozed_head_keeps_its_line(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("g")
    first = mq.send("g", b"1", group_id="a")
    second = mq.send("g", b"2", group_id="a")
    other = mq.send("g", b"3", group_id="b")
    one("g").snooze(10)
    # The group's second waits behind its parked head; other groups run.
    assert [m.seq for m in mq.receive("g", max_messages=10)] == [other]
    clock.advance(10)
    mq.reap()
    again = one("g")
    assert again.seq == first and again.delivery_count == 1
    again.complete()
    assert one("g").seq == second


def test_strict_fifo_head_keeps_the_queue(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("f", ordering="strict_fifo")
    first = mq.send("f", b"1")
    mq.send("f", b"2")
    one("f").snooze(5)
    assert mq.receive("f") == []
    clock.advance(5)
    mq.reap()
    assert one("f").seq == first


def test_a_batch_of_snoozes_is_one_call(q: str) -> None:
    for body in (b"a", b"b", b"c"):
        mq.send(q, body)
    got = mq.receive(q, max_messages=3)
    results = settle.snooze_many(q, [(m.seq, m.lock_token, 0) for m in got])
    assert [r.outcome for r in results] == [Outcome.SNOOZED] * 3
    assert all(m.delivery_count == 1 for m in mq.receive(q, max_messages=3))


def test_asnooze_is_the_same_verb(q: str) -> None:
    mq.send(q, b"x")
    m = one(q)
    assert async_to_sync(m.asnooze)(0).outcome is Outcome.SNOOZED
    assert m.settled == "snooze"
