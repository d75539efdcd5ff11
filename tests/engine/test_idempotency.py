"""SPEC §2.1: settlement receipts, receive attempts, producer dedup."""

from __future__ import annotations

import pytest
from django.test import override_settings

import django_mqlite as mq

pytestmark = pytest.mark.django_db


# -- settlement receipts -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("verb", "args"),
    [("complete", ()), ("abandon", ()), ("reject", ("Bad", "why")), ("defer", ())],
)
def test_exact_replay_succeeds(q: str, verb: str, args: tuple[str, ...]) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    getattr(mq, verb)(q, m.seq, m.lock_token, *args)
    getattr(mq, verb)(q, m.seq, m.lock_token, *args)  # the reply was lost; retry


def test_replay_with_other_arguments_is_lock_lost(q: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    token = m.lock_token or ""
    mq.abandon(q, m.seq, token, delay=5)
    mq.abandon(q, m.seq, token, delay=5)
    with pytest.raises(mq.LockLostError):
        mq.abandon(q, m.seq, token, delay=6)
    with pytest.raises(mq.LockLostError):
        mq.abandon(q, m.seq, token)
    with pytest.raises(mq.LockLostError):
        mq.complete(q, m.seq, token)  # an abandon never vouches for a complete


def test_reject_receipt_is_keyed_on_reason_and_description(q: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    token = m.lock_token or ""
    mq.reject(q, m.seq, token, "Bad", "a")
    with pytest.raises(mq.LockLostError):
        mq.reject(q, m.seq, token, "Bad", "b")
    with pytest.raises(mq.LockLostError):
        mq.reject(q, m.seq, token, "Other", "a")


def test_receipt_does_not_vouch_for_another_message(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    a, b = mq.receive(q, max_messages=2)
    a.complete()
    with pytest.raises(mq.LockLostError):
        mq.complete(q, b.seq, a.lock_token or "")


def test_receipt_expires_at_statement_time(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    m.complete()
    clock.advance(1799.999)
    m.complete()
    clock.advance(0.001)  # expired, though no reaper has deleted it yet
    with pytest.raises(mq.LockLostError):
        m.complete()


def test_replay_after_lease_expiry_succeeds_but_grants_nothing_new(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q, lock_duration=5)
    m.defer()
    clock.advance(10)
    m.defer()  # replays the committed effect
    with pytest.raises(mq.LockLostError):
        m.renew()


def test_complete_batch_replays_exact_items(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    a, b = mq.receive(q, max_messages=2)
    items = [(a.seq, a.lock_token), (b.seq, b.lock_token)]
    assert mq.complete_batch(q, items) == [True, True]
    assert mq.complete_batch(q, items) == [True, True]
    m_seq = mq.send(q, b"z")
    assert mq.complete_batch(q, [(m_seq, a.lock_token)]) == [False]


# -- receive attempts ---------------------------------------------------------------------


def test_attempt_replays_same_messages_and_tokens(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y"), mq.OutMessage(b"z")])
    first = mq.receive(q, max_messages=2, attempt_id="r-1")
    again = mq.receive(q, max_messages=2, attempt_id="r-1")
    assert [(m.seq, m.lock_token, m.delivery_count) for m in again] == [
        (m.seq, m.lock_token, 1) for m in first
    ]
    assert mq.stats(q).totals["delivered"] == 2  # no delivery count burned
    other = mq.receive(q, max_messages=2, attempt_id="r-2")
    assert [m.body for m in other] == [b"z"]


def test_empty_round_is_not_recorded(q: str) -> None:
    assert mq.receive(q, attempt_id="r-1") == []
    mq.send(q, b"x")
    assert [m.body for m in mq.receive(q, attempt_id="r-1")] == [b"x"]


def test_attempt_expires(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    (first,) = mq.receive(q, attempt_id="r", lock_duration=3600)
    clock.advance(1800)
    (later,) = mq.receive(q, attempt_id="r")
    assert later.seq != first.seq


def test_attempt_replay_omits_messages_settled_since(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
    a, b = mq.receive(q, max_messages=2, attempt_id="r")
    a.complete()
    assert [m.seq for m in mq.receive(q, max_messages=2, attempt_id="r")] == [b.seq]


# -- producer dedup -------------------------------------------------------------------------


def test_repeat_message_id_collapses_into_original(q: str) -> None:
    seq = mq.send(q, b"x", message_id="order-1")
    assert mq.send(q, b"x", message_id="order-1") == seq
    assert len(mq.peek(q)) == 1
    assert mq.stats(q).totals["enqueued"] == 1


def test_dedup_outlives_completion_within_the_window(q: str, clock: mq.clock.FrozenClock) -> None:
    seq = mq.send(q, b"x", message_id="order-1")
    mq.receive(q)[0].complete()
    clock.advance(599)
    assert mq.send(q, b"x", message_id="order-1") == seq
    assert mq.peek(q) == []
    clock.advance(1)
    fresh = mq.send(q, b"x", message_id="order-1")
    assert fresh != seq and len(mq.peek(q)) == 1


def test_same_id_other_body_conflicts(q: str) -> None:
    mq.send(q, b"x", message_id="order-1")
    with pytest.raises(mq.DedupConflictError) as exc:
        mq.send(q, b"y", message_id="order-1")
    assert exc.value.code == "already_exists"
    assert len(mq.peek(q)) == 1


def test_batch_conflict_slot_is_zero_and_rest_commits(q: str) -> None:
    orig = mq.send(q, b"x", message_id="m1")
    seqs = mq.send_batch(
        q,
        [
            mq.OutMessage(b"new", message_id="m2"),
            mq.OutMessage(b"other", message_id="m1"),
            mq.OutMessage(b"x", message_id="m1"),
            mq.OutMessage(b"new", message_id="m2"),
        ],
    )
    assert seqs[1] == 0 and seqs[2] == orig and seqs[3] == seqs[0] > orig
    assert [p.body for p in mq.peek(q)] == [b"x", b"new"]


def test_content_dedup_uses_body_hash(make_queue: object) -> None:
    mq.create_queue("c", content_dedup=True)
    a = mq.send("c", {"k": 1})
    assert mq.send("c", {"k": 1}) == a
    assert mq.send("c", {"k": 2}) != a


def test_no_dedup_without_id_or_when_window_is_zero(make_queue: object) -> None:
    mq.create_queue("plain")
    assert mq.send("plain", b"x") != mq.send("plain", b"x")
    mq.create_queue("off", dedup_window=0)
    assert mq.send("off", b"x", message_id="m") != mq.send("off", b"x", message_id="m")


def test_dedup_is_per_queue(make_queue: object) -> None:
    mq.create_queue("a")
    mq.create_queue("b")
    assert mq.send("a", b"x", message_id="m") != mq.send("b", b"x", message_id="m")


def test_receipt_ttl_setting(q: str, clock: mq.clock.FrozenClock) -> None:
    with override_settings(MQLITE={"RECEIPT_TTL": 10}):
        mq.send(q, b"x")
        (m,) = mq.receive(q)
        m.complete()
        clock.advance(10)
        with pytest.raises(mq.LockLostError):
            m.complete()


def test_a_repeat_inside_one_batch_with_another_body_is_a_conflict(q: str) -> None:
    first, clash, copy = mq.send_batch(
        q,
        [
            mq.OutMessage(b"a", message_id="m"),
            mq.OutMessage(b"b", message_id="m"),
            mq.OutMessage(b"a", message_id="m"),
        ],
    )
    assert first > 0 and clash == 0 and copy == first
    assert [p.body for p in mq.peek(q)] == [b"a"]
