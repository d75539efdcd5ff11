"""Ordered lines: per-group FIFO on standard/group_fifo queues, global FIFO on strict_fifo.

SPEC §2 "Ordering modes": only a group's oldest live message is claimable; head-of-line
holds across lock expiry, abandon-with-delay and deferral; group order beats priority.
"""

from __future__ import annotations

import pytest

import django_mqlite as mq
from django_mqlite.engine import maintenance

pytestmark = pytest.mark.django_db


def seqs(got: list[mq.Received]) -> list[int]:
    return [m.seq for m in got]


def test_groups_are_fifo_and_run_in_parallel(q: str) -> None:
    a1, b1, a2, free, b2 = mq.send_batch(
        q,
        [
            mq.OutMessage(b"a1", group_id="a"),
            mq.OutMessage(b"b1", group_id="b"),
            mq.OutMessage(b"a2", group_id="a"),
            mq.OutMessage(b"free"),
            mq.OutMessage(b"b2", group_id="b"),
        ],
    )
    first = mq.receive(q, max_messages=10)
    assert seqs(first) == [a1, b1, free]
    assert mq.receive(q, max_messages=10) == []
    for m in first:
        m.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [a2, b2]


def test_ungrouped_messages_are_not_ordered_against_each_other(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(3)])
    assert len(mq.receive(q, max_messages=3)) == 3


def test_group_order_beats_priority(q: str) -> None:
    low = mq.send(q, b"low", group_id="g", priority=0)
    high = mq.send(q, b"high", group_id="g", priority=9)
    (m,) = mq.receive(q, max_messages=5)
    assert m.seq == low
    m.complete()
    assert seqs(mq.receive(q)) == [high]


def test_head_of_line_holds_across_unreaped_lock_expiry(
    q: str, clock: mq.clock.FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Receives return their queue's expired leases (``expire_queue_locks``); here none
    # is due yet, as between two of its runs.
    monkeypatch.setattr(maintenance, "QUEUE_LEASES_EVERY_MS", 10**9)
    head, nxt = mq.send_batch(
        q, [mq.OutMessage(b"1", group_id="g"), mq.OutMessage(b"2", group_id="g")]
    )
    mq.receive(q, lock_duration=5)
    clock.advance(60)  # expired, not returned yet: the head still holds the line
    assert mq.receive(q, max_messages=5) == []
    mq.reap()
    (again,) = mq.receive(q, max_messages=5)
    assert (again.seq, again.delivery_count) == (head, 2)
    again.complete()
    assert seqs(mq.receive(q)) == [nxt]


def test_head_of_line_holds_across_abandon_with_delay(q: str, clock: mq.clock.FrozenClock) -> None:
    head, nxt = mq.send_batch(
        q, [mq.OutMessage(b"1", group_id="g"), mq.OutMessage(b"2", group_id="g")]
    )
    (m,) = mq.receive(q)
    m.abandon(delay=30)
    assert mq.receive(q, max_messages=5) == []
    clock.advance(30)
    (again,) = mq.receive(q, max_messages=5)
    assert again.seq == head  # the parked head is redelivered first
    again.complete()
    assert seqs(mq.receive(q)) == [nxt]


def test_head_of_line_holds_while_deferred(q: str) -> None:
    head, nxt = mq.send_batch(
        q, [mq.OutMessage(b"1", group_id="g"), mq.OutMessage(b"2", group_id="g")]
    )
    mq.receive(q)[0].defer()
    assert mq.receive(q, max_messages=5) == []
    (m,) = mq.receive_deferred(q, [head])
    m.complete()
    assert seqs(mq.receive(q)) == [nxt]


@pytest.mark.parametrize("how", ["reject", "exhaust", "ttl", "cancel"])
def test_line_moves_on_when_the_head_leaves(
    make_queue: object, clock: mq.clock.FrozenClock, how: str
) -> None:
    mq.create_queue("g", max_delivery_count=1)
    head = mq.send("g", b"1", group_id="g", ttl=50, delay=10 if how == "cancel" else None)
    nxt = mq.send("g", b"2", group_id="g")
    if how == "cancel":
        assert mq.cancel_scheduled("g", head)
    else:
        if how == "ttl":
            clock.advance(50)
            mq.reap()
        else:
            (m,) = mq.receive("g")
            m.reject("bad") if how == "reject" else m.abandon()
    assert seqs(mq.receive("g")) == [nxt]


def test_redriven_head_rejoins_its_line(q: str) -> None:
    head, nxt, _last = mq.send_batch(q, [mq.OutMessage(str(i), group_id="g") for i in range(3)])
    mq.receive(q)[0].reject("bad")
    (m,) = mq.receive(q)
    assert m.seq == nxt
    assert mq.redrive(q) == 1
    assert mq.receive(q, max_messages=5) == []  # nxt still in flight holds the line
    m.complete()
    assert seqs(mq.receive(q, max_messages=5)) == [head]  # earliest live seq first


def test_strict_fifo_allows_one_in_flight(make_queue: object) -> None:
    mq.create_queue("s", ordering="strict_fifo")
    a = mq.send("s", b"a", priority=0)
    b = mq.send("s", b"b", group_id="x", priority=9)
    c = mq.send("s", b"c", group_id="y")
    (m,) = mq.receive("s", max_messages=10)
    assert m.seq == a
    assert mq.receive("s", max_messages=10) == []
    m.complete()
    (m,) = mq.receive("s", max_messages=10)
    assert m.seq == b
    m.complete()
    assert seqs(mq.receive("s", max_messages=10)) == [c]


def test_strict_fifo_batch_send_lines_up(make_queue: object) -> None:
    mq.create_queue("s", ordering="strict_fifo")
    sent = mq.send_batch("s", [mq.OutMessage(str(i)) for i in range(5)])
    for expected in sent:
        (m,) = mq.receive("s", max_messages=5)
        assert m.seq == expected
        m.complete()


def test_group_fifo_orders_by_group(make_queue: object) -> None:
    mq.create_queue("gf", ordering="group_fifo")
    a1, _a2, b1 = mq.send_batch(
        "gf",
        [
            mq.OutMessage(b"", group_id="a"),
            mq.OutMessage(b"", group_id="a"),
            mq.OutMessage(b"", group_id="b"),
        ],
    )
    assert seqs(mq.receive("gf", max_messages=5)) == [a1, b1]


@pytest.mark.parametrize("batch", [False, True], ids=["send", "send_batch"])
@pytest.mark.parametrize("held", ["locked", "deferred", "parked"])
def test_a_later_send_waits_behind_its_groups_held_head(
    q: str, batch: bool, held: str, clock: mq.clock.FrozenClock
) -> None:
    """The line is checked when the new member is written, not only among the members of
    one send: an earlier member that is locked, deferred or parked still holds it."""
    head = mq.send(q, b"head", group_id="g")
    (m,) = mq.receive(q)
    if held == "deferred":
        m.defer()
    elif held == "parked":
        m.abandon(delay=30)
    if batch:
        (nxt,) = mq.send_batch(q, [mq.OutMessage(b"next", group_id="g")])
    else:
        nxt = mq.send(q, b"next", group_id="g")
    assert mq.receive(q, max_messages=5) == []
    if held == "locked":
        m.complete()
    elif held == "deferred":
        (again,) = mq.receive_deferred(q, [head])
        again.complete()
    else:
        clock.advance(31)
        mq.reap()
        (again,) = mq.receive(q)
        assert again.seq == head
        again.complete()
    assert seqs(mq.receive(q, max_messages=5)) == [nxt]
