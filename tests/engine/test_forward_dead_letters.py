"""``forward_dead_letters_to``: a queue's dead letters move into another queue as active
messages, in the transaction that dead-lettered them, whichever path buried them."""

from __future__ import annotations

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair() -> tuple[str, str]:
    mq.create_queue("dlq")
    mq.create_queue("src", max_delivery_count=2, forward_dead_letters_to="dlq")
    return "src", "dlq"


def test_exhausted_by_abandon_arrives_active_in_the_target(pair: tuple[str, str]) -> None:
    src, dlq = pair
    seq = mq.send(src, "x", properties={"k": "v"})
    mq.receive(src)[0].abandon()
    assert mq.stats(dlq).counts["active"] == 0
    mq.receive(src)[0].abandon()
    assert mq.peek(src) == []
    (m,) = mq.receive(dlq)
    assert (m.seq, m.text(), m.properties, m.delivery_count) == (seq, "x", {"k": "v"}, 1)
    assert mq.stats(src).totals["dead_lettered"] == 1
    assert mq.stats(dlq).totals["enqueued"] == 1


def test_rejected_is_forwarded(pair: tuple[str, str]) -> None:
    src, dlq = pair
    mq.send(src, "x")
    mq.receive(src)[0].reject("Bad")
    assert [p.state for p in mq.peek(dlq)] == ["active"]
    assert mq.stats(src).counts["dead_lettered"] == 0


def test_lock_expiry_on_the_last_delivery_is_forwarded(
    pair: tuple[str, str], clock: mq.clock.FrozenClock
) -> None:
    src, dlq = pair
    mq.send(src, "x")
    mq.receive(src, lock_duration=1)
    clock.advance(2)
    mq.reap()
    mq.receive(src, lock_duration=1)
    clock.advance(2)
    assert mq.reap()["expired_locks"] == 1
    assert [p.state for p in mq.peek(dlq)] == ["active"]
    assert mq.peek(src) == []


def test_ttl_dead_letters_are_forwarded(pair: tuple[str, str], clock: mq.clock.FrozenClock) -> None:
    src, dlq = pair
    mq.send(src, "x", ttl=5)
    clock.advance(6)
    mq.reap()
    assert [p.state for p in mq.peek(dlq)] == ["active"]


def test_without_the_option_dead_letters_stay(q: str) -> None:
    mq.send(q, "x")
    mq.receive(q)[0].reject("Bad")
    assert [p.state for p in mq.peek(q)] == ["dead_lettered"]


def test_a_missing_target_leaves_them_dead_lettered(pair: tuple[str, str]) -> None:
    src, dlq = pair
    mq.delete_queue(dlq, force=True)
    mq.send(src, "x")
    mq.receive(src)[0].reject("Bad")
    assert [p.state for p in mq.peek(src)] == ["dead_lettered"]


def test_ordered_target_keeps_group_lines(make_queue: object) -> None:
    mq.create_queue("dlq.fifo", ordering="group_fifo")
    mq.create_queue("src.fifo", ordering="group_fifo", forward_dead_letters_to="dlq.fifo")
    mq.send("src.fifo", "a", group_id="g")
    mq.send("src.fifo", "b", group_id="g")
    mq.receive("src.fifo")[0].reject("Bad")
    mq.receive("src.fifo")[0].reject("Bad")
    got = mq.receive("dlq.fifo", max_messages=10)
    assert [m.text() for m in got] == ["a"]  # the group's line holds in the target too


def test_option_is_checked(q: str) -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.create_queue("other", forward_dead_letters_to="nope")
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue(q, forward_dead_letters_to=q)
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue("other", forward_dead_letters_to="bad name")
    assert mq.create_queue("other", forward_dead_letters_to=q).forward_dead_letters_to == q


# Every path that dead-letters goes through ``dead_letters.buried``: one test per path.


def test_exhausted_by_a_batch_abandon_is_forwarded(pair: tuple[str, str]) -> None:
    from django_mqlite.engine import settle
    from django_mqlite.engine.types import Outcome

    src, dlq = pair
    mq.send_batch(src, [mq.OutMessage("a"), mq.OutMessage("b")])
    for outcome in (Outcome.RETRIED, Outcome.FORWARDED):
        got = mq.receive(src, max_messages=2)
        items = [settle.AbandonItem(m.seq, m.lock_token or "", error="e") for m in got]
        assert {r.outcome for r in settle.abandon_many(src, items)} == {outcome}
    assert sorted(p.text() for p in mq.peek(dlq)) == ["a", "b"]
    assert {p.state for p in mq.peek(dlq)} == {"active"} and mq.peek(src) == []
    t = mq.stats(src).totals
    assert (t["exhausted"], t["dead_lettered"], t["redriven"]) == (2, 2, 2)


def test_a_single_abandon_says_where_it_forwarded(pair: tuple[str, str]) -> None:
    src, dlq = pair
    mq.send(src, "x")
    mq.receive(src)[0].abandon()
    (m,) = mq.receive(src)
    m.abandon()
    assert m.outcome is not None
    assert (m.outcome.outcome, m.outcome.forwarded_to) == ("forwarded", dlq)


def test_a_dead_workers_lock_on_the_last_delivery_is_forwarded(
    pair: tuple[str, str], clock: mq.clock.FrozenClock
) -> None:
    from django_mqlite.models import Worker

    src, dlq = pair
    now = clock.now_ms()
    dead = Worker.objects.create(host="h", pid=1, queues=[src], started_at=now, last_seen=now).pk
    mq.send(src, "x")
    for _ in range(2):
        mq.receive(src, worker_id=dead, lock_duration=600)
        clock.advance(60)  # silent far longer than WORKER_STALE_AFTER, the lease still live
        reaped = mq.reap()
        assert reaped["stale_worker_locks"] == 1 and reaped["expired_locks"] == 0
    assert [(p.state, p.text()) for p in mq.peek(dlq)] == [("active", "x")]
    assert mq.peek(src) == []
    assert mq.stats(src).totals["exhausted"] == 1


def test_a_buried_waiting_message_is_forwarded(pair: tuple[str, str]) -> None:
    """``bury`` (how the Tasks backend cancels a task) dead-letters a waiting message."""
    from django_mqlite.engine.redrive import bury

    src, dlq = pair
    seq = mq.send(src, "x")
    assert bury(src, seq, "Cancelled")
    assert [(p.seq, p.state) for p in mq.peek(dlq)] == [(seq, "active")]
    assert mq.stats(src).totals["rejected"] == 1


def test_a_forward_records_its_source_and_deliveries_a_redrive_clears_them(
    pair: tuple[str, str],
) -> None:
    """What SQS shows as ``DeadLetterQueueSourceArn`` and a receive count that keeps
    counting; the delivery count itself restarts (the target counts from zero)."""
    from django_mqlite.models import Message

    src, dlq = pair
    mq.create_queue("dlq2")
    mq.update_queue(dlq, max_delivery_count=1, forward_dead_letters_to="dlq2")
    seq = mq.send(src, "x")
    for _ in range(2):
        mq.receive(src)[0].abandon()
    row = Message.objects.get(seq=seq)
    assert (row.forwarded_from, row.forwarded_deliveries, row.delivery_count) == (src, 2, 0)
    mq.receive(dlq)[0].abandon()  # forwarded on again: the deliveries add up
    row = Message.objects.get(seq=seq)
    assert (row.forwarded_from, row.forwarded_deliveries) == (dlq, 3)
    mq.receive("dlq2")[0].reject("Bad")
    assert mq.redrive("dlq2", to_queue=src) == 1
    row = Message.objects.get(seq=seq)
    assert (row.forwarded_from, row.forwarded_deliveries, row.delivery_count) == (None, None, 0)
