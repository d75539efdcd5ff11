"""A receive bounded by bytes (``max_bytes``): the claim takes only the leading candidates
whose stored size fits, always the first; the rest are never touched (still active, no
delivery counted), so no surface claims, loads or renders what it would then trim."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from django_mqlite.engine.claim import FIELDS_BYTES

pytestmark = pytest.mark.django_db

KB100 = 100_000
ONE = KB100 + FIELDS_BYTES  # what a 100 kB body without properties counts for


def _untouched(q: str, seqs: list[int]) -> None:
    by_seq = {p.seq: p for p in mq.peek(q, limit=1000)}
    for seq in seqs:
        assert by_seq[seq].state == "active" and by_seq[seq].delivery_count == 0


def test_a_claim_takes_only_the_prefix_that_fits(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(b"x" * KB100) for _ in range(10)])
    got = mq.receive(q, max_messages=10, max_bytes=3 * ONE + 10)
    assert [m.seq for m in got] == seqs[:3]
    _untouched(q, seqs[3:])
    assert mq.stats(q).totals["delivered"] == 3


def test_the_budget_is_exact_at_the_edge(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(b"x" * KB100) for _ in range(4)])
    assert len(mq.receive(q, max_messages=10, max_bytes=2 * ONE)) == 2
    assert len(mq.receive(q, max_messages=10, max_bytes=2 * ONE - 1)) == 1
    _untouched(q, seqs[3:])


def test_properties_count_towards_the_budget(q: str) -> None:
    heavy = {"blob": "p" * 60_000}
    seqs = mq.send_batch(q, [mq.OutMessage(b"", properties=heavy) for _ in range(3)])
    got = mq.receive(q, max_messages=3, max_bytes=60_000 + FIELDS_BYTES + 100)
    assert [m.seq for m in got] == seqs[:1]


def test_the_first_message_is_claimed_even_when_it_alone_is_over(q: str) -> None:
    big = mq.send(q, b"x" * KB100)
    mq.send(q, b"y")
    assert [m.seq for m in mq.receive(q, max_messages=5, max_bytes=1)] == [big]


def test_the_prefix_follows_claim_order(q: str) -> None:
    low = mq.send(q, b"x" * KB100)
    high = mq.send(q, b"x" * KB100, priority=5)
    got = mq.receive(q, max_messages=2, max_bytes=ONE + 10)
    assert [m.seq for m in got] == [high]
    _untouched(q, [low])


def test_small_messages_are_not_held_back(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"s") for _ in range(256)])
    assert len(mq.receive(q, max_messages=256, max_bytes=8 * 1024 * 1024)) == 256


def test_receive_and_delete_takes_only_what_fits(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(b"x" * KB100) for _ in range(5)])
    got = mq.receive(q, max_messages=5, max_bytes=2 * ONE, mode="receive_and_delete")
    assert [m.seq for m in got] == seqs[:2]
    _untouched(q, seqs[2:])
    totals = mq.stats(q).totals
    assert (totals["delivered"], totals["completed"]) == (2, 2)


def test_a_limited_queue_keeps_both_bounds(make_queue: object) -> None:
    mq.create_queue("capped", max_in_flight=3)
    mq.send_batch("capped", [mq.OutMessage(b"x" * KB100) for _ in range(6)])
    assert len(mq.receive("capped", max_messages=6, max_bytes=2 * ONE)) == 2
    assert len(mq.receive("capped", max_messages=6, max_bytes=10 * ONE)) == 1


def test_receive_deferred_takes_only_what_fits(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x" * KB100) for _ in range(4)])
    for m in mq.receive(q, max_messages=4):
        m.defer()
    seqs = [p.seq for p in mq.peek(q, state="deferred")]
    got = mq.receive_deferred(q, seqs, max_bytes=2 * ONE)
    assert [m.seq for m in got] == seqs[:2]
    assert [p.seq for p in mq.peek(q, state="deferred")] == seqs[2:]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_a_bad_budget_is_refused_before_any_claim(q: str, bad: object) -> None:
    mq.send(q, b"x")
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive(q, max_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive_deferred(q, [1], max_bytes=bad)  # type: ignore[arg-type]
    assert mq.peek(q)[0].state == "active" and mq.stats(q).totals["delivered"] == 0
