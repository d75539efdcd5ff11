"""The reaper: lock expiry, scheduled promotion, TTL, record expiry, retention."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

import django_mqlite as mq
from tests.settings import SECOND

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


def test_history_past_its_retention_is_trimmed_and_none_costs_no_write(
    clock: mq.clock.FrozenClock,
) -> None:
    from django.test.utils import CaptureQueriesContext

    mq.create_queue("h")
    with CaptureQueriesContext(connection) as ctx:
        assert mq.reap()["history_trimmed"] == 0
    trims = [c for c in ctx.captured_queries if "mqlite_history" in c["sql"]]
    assert trims and not [c for c in trims if c["sql"].startswith("DELETE")]
    for _ in range(3):
        clock.advance(60)
        mq.reap()
    assert table_count("mqlite_history") == 3
    clock.advance(600)
    with override_settings(MQLITE={"HISTORY_RETENTION": 120}):
        assert mq.reap()["history_trimmed"] == 3
    assert table_count("mqlite_history") == 1


def test_a_ttl_burial_releases_its_line_counts_in_its_batch_and_is_forwarded(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("dlq")
    mq.create_queue("t", forward_dead_letters_to="dlq")
    mq.send("t", "a", group_id="g", ttl=5)
    second = mq.send("t", "b", group_id="g")
    with mq.batch() as b:
        b.send("t", "c", ttl=5)
    clock.advance(5)
    assert mq.reap()["ttl_expired"] == 2
    assert sorted(p.body for p in mq.peek("dlq")) == [b"a", b"c"]  # forwarded
    assert mq.get_batch(b.id).failed == 1
    assert [m.seq for m in mq.receive("t", max_messages=5)] == [second]  # the line is free


@pytest.mark.parametrize("dead_letter_on_expire", [True, False], ids=["buried", "removed"])
def test_each_expiry_signals_once_after_commit(
    make_queue: object,
    clock: mq.clock.FrozenClock,
    django_capture_on_commit_callbacks: object,
    dead_letter_on_expire: bool,
) -> None:
    from django_mqlite import signals

    seen: list[dict[str, object]] = []

    def receiver(sender: object, **kwargs: object) -> None:
        kwargs.pop("signal")
        seen.append(kwargs)

    mq.create_queue("x", dead_letter_on_expire=dead_letter_on_expire)
    seqs = [mq.send("x", f"m{i}", ttl=5) for i in range(2)]
    clock.advance(5)
    signals.message_expired.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
            assert mq.reap()["ttl_expired"] == 2
    finally:
        signals.message_expired.disconnect(receiver)
    alias = mq.database_of("x")
    assert sorted(seen, key=lambda e: e["seq"]) == [  # type: ignore[arg-type,return-value]
        {"queue": "x", "seq": s, "dead_lettered": dead_letter_on_expire, "using": alias}
        for s in seqs
    ]


def test_a_ttl_removal_releases_its_line_counts_in_its_batch_and_its_total(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("t", dead_letter_on_expire=False)
    mq.send("t", "a", group_id="g", ttl=5)
    second = mq.send("t", "b", group_id="g")
    with mq.batch() as b:
        b.send("t", "c", ttl=5)
    clock.advance(5)
    assert mq.reap()["ttl_expired"] == 2
    assert mq.stats("t").totals["expired"] == 2
    assert mq.get_batch(b.id).cancelled == 1
    assert [m.seq for m in mq.receive("t", max_messages=5)] == [second]  # the line is free


def test_a_pass_answers_a_count_for_each_of_its_steps(q: str) -> None:
    assert set(mq.reap()) == {
        "history_sampled",
        "expired_locks",
        "stale_worker_locks",
        "promoted",
        "ttl_expired",
        "expired_receipts",
        "expired_attempts",
        "expired_dedup",
        "dlq_trimmed",
        "results_pruned",
        "workers_pruned",
        "batches_pruned",
        "history_trimmed",
    }


def test_each_reclaimed_lock_is_counted(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(3)])
    mq.receive(q, max_messages=3, lock_duration=5)
    clock.advance(5)
    assert mq.reap()["expired_locks"] == 3
    t = mq.stats(q).totals
    assert (t["reclaimed"], t["retried"]) == (3, 3)


def test_a_lock_expiry_burial_releases_its_line_counts_in_its_batch_and_is_forwarded(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("dlq")
    mq.create_queue("t", forward_dead_letters_to="dlq", max_delivery_count=1)
    mq.send("t", "a", group_id="g")
    second = mq.send("t", "b", group_id="g")
    with mq.batch() as b:
        b.send("t", "c")
    assert len(mq.receive("t", max_messages=5, lock_duration=5)) == 2  # a and c
    clock.advance(5)
    assert mq.reap()["expired_locks"] == 2
    assert sorted(p.body for p in mq.peek("dlq")) == [b"a", b"c"]  # forwarded
    assert mq.get_batch(b.id).failed == 1
    assert mq.stats("t").totals["reclaimed"] == 2
    assert [m.seq for m in mq.receive("t", max_messages=5)] == [second]  # the line is free


def test_an_expiry_nobody_listens_to_registers_no_callback(
    q: str, clock: mq.clock.FrozenClock, django_capture_on_commit_callbacks: object
) -> None:
    mq.send(q, b"x", ttl=5)
    clock.advance(5)
    with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[operator]
        assert mq.reap()["ttl_expired"] == 1
    assert callbacks == []


@pytest.mark.django_db(databases=["default", SECOND])
def test_a_pass_sums_its_databases_counts_and_using_reaps_one(
    settings: object, clock: mq.clock.FrozenClock
) -> None:
    settings.MQLITE = {  # type: ignore[attr-defined]
        **getattr(settings, "MQLITE", {}),
        "QUEUES": {"near": {}, "far": {"database": SECOND}},
    }
    for name in ("near", "far"):
        mq.create_queue(name)
        mq.send(name, b"x")
        mq.receive(name, lock_duration=5)
    assert mq.database_of("far") == SECOND
    clock.advance(5)
    assert mq.reap(using="default")["expired_locks"] == 1
    assert mq.peek("far")[0].state == "locked"
    mq.receive("near", lock_duration=5)
    clock.advance(5)
    assert mq.reap()["expired_locks"] == 2  # one on each database


@pytest.mark.django_db(databases=["default", SECOND])
def test_an_expiry_signals_after_the_commit_of_its_own_database(
    clock: mq.clock.FrozenClock, django_capture_on_commit_callbacks: object
) -> None:
    from django_mqlite import signals

    seen: list[object] = []

    def receiver(sender: object, **kwargs: object) -> None:
        seen.append(kwargs["seq"])

    seq = mq.send(mq.create_queue("far", using=SECOND).name, b"x", ttl=5, using=SECOND)
    clock.advance(5)
    signals.message_expired.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(using=SECOND, execute=True):  # type: ignore[operator]
            assert mq.reap(using=SECOND)["ttl_expired"] == 1
    finally:
        signals.message_expired.disconnect(receiver)
    assert seen == [seq]
