"""The reaper: lock expiry, scheduled promotion, TTL, record expiry, retention."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def table_count(table: str) -> int:
    with connection.cursor() as c:
        c.execute(f"SELECT count(*) FROM {table}")
        return int(c.fetchone()[0])


def test_expired_lock_returns_to_active(q: str, clock: mq.clock.FrozenClock) -> None:
    seq = mq.send(q, b"x")
    mq.receive(q, lock_duration=10)
    clock.advance(9.999)
    assert mq.reap()["expired_locks"] == 0
    clock.advance(0.001)
    assert mq.reap()["expired_locks"] == 1
    (m,) = mq.receive(q)
    assert (m.seq, m.delivery_count) == (seq, 2)
    t = mq.stats(q).totals
    assert (t["reclaimed"], t["retried"]) == (1, 1)


def test_expired_lock_on_last_delivery_is_dead_lettered(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("m", max_delivery_count=1)
    mq.send("m", b"x")
    mq.receive("m", lock_duration=1)
    clock.advance(1)
    mq.reap()
    (p,) = mq.peek("m")
    assert (p.state, p.dead_letter_reason) == ("dead_lettered", "MaxDeliveryCountExceeded")
    t = mq.stats("m").totals
    assert (t["reclaimed"], t["exhausted"], t["dead_lettered"]) == (1, 1, 1)


def test_claim_path_never_reclaims(
    q: str, clock: mq.clock.FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim itself never reclaims: a lease returns by the reaper's statement, run by
    the reaper or by a receive before its claim (``expire_queue_locks``, here not due)."""
    from django_mqlite.engine import maintenance

    monkeypatch.setattr(maintenance, "QUEUE_LEASES_EVERY_MS", 10**9)
    mq.send(q, b"x")
    mq.receive(q, lock_duration=1)
    clock.advance(60)
    assert mq.receive(q) == []


def test_scheduled_promotion(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x", delay=30)
    clock.advance(30)
    assert mq.reap()["promoted"] == 1
    assert mq.peek(q)[0].state == "active"


@pytest.mark.parametrize("state", ["active", "locked", "deferred", "scheduled"])
def test_ttl_dead_letters_every_live_state(q: str, clock: mq.clock.FrozenClock, state: str) -> None:
    if state == "scheduled":
        mq.send(q, b"x", delay=100, ttl=10)  # anchored at visible time: expires at 110
        (p,) = mq.peek(q)
        assert p.expires_at is not None and p.visible_at is not None
        assert (p.expires_at - p.visible_at).total_seconds() == 10
        clock.advance(110)
    else:
        mq.send(q, b"x", ttl=10)
        if state in ("locked", "deferred"):
            (m,) = mq.receive(q, lock_duration=60)
            if state == "deferred":
                m.defer()
        clock.advance(10)
    assert mq.peek(q)[0].state == state
    assert mq.reap()["ttl_expired"] == 1
    (p,) = mq.peek(q)
    assert (p.state, p.dead_letter_reason) == ("dead_lettered", "TTLExpired")
    t = mq.stats(q).totals
    assert (t["expired"], t["dead_lettered"]) == (1, 1)


def test_ttl_removes_when_queue_does_not_dead_letter(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("e", dead_letter_on_expire=False, default_ttl=5)
    mq.send("e", b"x")
    mq.send("e", b"y", ttl=60)  # explicit ttl beats the queue default
    clock.advance(5)
    assert mq.reap()["ttl_expired"] == 1
    assert [p.body for p in mq.peek("e")] == [b"y"]


def test_expired_but_unreaped_ttl_is_not_claimed(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x", ttl=1)
    clock.advance(1)
    assert mq.receive(q) == []


def test_receipts_attempts_and_dedup_expire(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x", message_id="m1")
    (m,) = mq.receive(q, attempt_id="a1")
    m.complete()
    assert table_count("mqlite_receipt") == 1
    assert table_count("mqlite_attempt") == 1
    assert table_count("mqlite_dedup") == 1
    clock.advance(600)  # the queue's dedup window
    out = mq.reap()
    assert (out["expired_dedup"], out["expired_receipts"], out["expired_attempts"]) == (1, 0, 0)
    clock.advance(1200)  # RECEIPT_TTL: 30 minutes
    out = mq.reap()
    assert (out["expired_receipts"], out["expired_attempts"]) == (1, 1)
    assert table_count("mqlite_receipt") + table_count("mqlite_attempt") == 0


def test_reap_is_chunked(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(25)])
    mq.receive(q, max_messages=25, lock_duration=1)
    clock.advance(1)
    with override_settings(MQLITE={"REAP_CHUNK": 10}):
        assert mq.reap()["expired_locks"] == 25
    assert mq.stats(q).counts["active"] == 25
