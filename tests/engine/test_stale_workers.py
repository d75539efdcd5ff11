"""The reaper's stale-worker pass: locks of a worker whose heartbeat stopped come back
under the lease-expiry rule, long before the lease ends; old worker rows are pruned."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.models import Worker


def make_worker(now_ms: int) -> int:
    return Worker.objects.create(
        host="h", pid=1, queues=["q"], started_at=now_ms, last_seen=now_ms
    ).pk


@pytest.fixture
def lease_q(make_queue: Any) -> str:
    return make_queue(lock_duration=600, max_delivery_count=2).name


def test_silent_worker_locks_are_reclaimed_before_the_lease_ends(lease_q: str, clock: Any) -> None:
    dead = make_worker(clock.now_ms())
    alive = make_worker(clock.now_ms())
    s1, s2 = mq.send(lease_q, "a"), mq.send(lease_q, "b")
    mq.receive(lease_q, worker_id=dead)
    mq.receive(lease_q, worker_id=alive)
    clock.advance(14)
    Worker.objects.filter(pk=alive).update(last_seen=clock.now_ms())
    assert mq.reap()["stale_worker_locks"] == 0
    clock.advance(2)  # the dead one is 16 s silent; the other heartbeated 2 s ago
    assert mq.reap()["stale_worker_locks"] == 1
    states = {p.seq: (p.state, p.delivery_count) for p in mq.peek(lease_q)}
    assert states == {s1: ("active", 1), s2: ("locked", 1)}
    totals = mq.stats(lease_q).totals
    assert totals["reclaimed"] == 1 and totals["retried"] == 1


def test_a_crash_never_buys_an_extra_delivery(lease_q: str, clock: Any) -> None:
    dead = make_worker(clock.now_ms())
    seq = mq.send(lease_q, "a")
    for _ in range(2):  # max_delivery_count is 2: the second claim is the last one
        mq.receive(lease_q, worker_id=dead)
        clock.advance(16)
        mq.reap()
    [p] = mq.peek(lease_q)
    assert (p.seq, p.state, p.dead_letter_reason) == (
        seq,
        "dead_lettered",
        "MaxDeliveryCountExceeded",
    )
    assert mq.stats(lease_q).totals["exhausted"] == 1


def test_a_stopped_worker_holds_nothing(lease_q: str, clock: Any) -> None:
    gone = make_worker(clock.now_ms())
    mq.send(lease_q, "a")
    mq.receive(lease_q, worker_id=gone)
    Worker.objects.filter(pk=gone).update(stopped_at=clock.now_ms())
    assert mq.reap()["stale_worker_locks"] == 1


@override_settings(MQLITE={"WORKER_STALE_AFTER": 1.0, "WORKER_RETENTION": 60})
def test_settings_and_pruning(lease_q: str, clock: Any) -> None:
    w = make_worker(clock.now_ms())
    mq.send(lease_q, "a")
    mq.receive(lease_q, worker_id=w)
    clock.advance(1)
    counts = mq.reap()
    assert counts["stale_worker_locks"] == 1 and counts["workers_pruned"] == 0
    clock.advance(59)
    assert mq.reap()["workers_pruned"] == 1
    assert not Worker.objects.exists()


def test_a_claim_is_proof_of_life(lease_q: str, clock: Any) -> None:
    """A worker that was frozen past WORKER_STALE_AFTER (SIGSTOP, a VM pause) and claims
    as soon as it resumes, before its heartbeat thread runs: the fresh lock must not be
    reclaimed as a dead worker's, or a second worker would get the message while the
    first runs it under a live lease (found by tests/reliability/test_integrity_sweep.py).
    """
    paused = make_worker(clock.now_ms())
    seq = mq.send(lease_q, "a")
    clock.advance(20)  # silent for longer than WORKER_STALE_AFTER (15 s)
    [m] = mq.receive(lease_q, worker_id=paused)
    assert mq.reap()["stale_worker_locks"] == 0
    assert [(p.seq, p.state) for p in mq.peek(lease_q)] == [(seq, "locked")]
    m.complete()
    mq.send(lease_q, "b")
    mq.receive(lease_q, worker_id=paused)
    clock.advance(16)  # when it does fall silent, its locks come back as before
    assert mq.reap()["stale_worker_locks"] == 1


def test_a_renewal_is_proof_of_life(lease_q: str, clock: Any) -> None:
    """A worker that resumes after a long pause and renews before its heartbeat thread
    writes keeps its leases: the renewal stamps its heartbeat in the same transaction."""
    paused = make_worker(clock.now_ms())
    mq.send(lease_q, "a")
    [m] = mq.receive(lease_q, worker_id=paused)
    assert m.lock_token is not None
    clock.advance(20)  # silent for longer than WORKER_STALE_AFTER (15 s)
    assert mq.renew_batch(lease_q, [(m.seq, m.lock_token)], worker_id=paused) == [True]
    assert Worker.objects.get(pk=paused).last_seen == clock.now_ms()
    assert mq.reap()["stale_worker_locks"] == 0
    [p] = mq.peek(lease_q)
    assert (p.state, p.delivery_count) == ("locked", 1)


def test_a_late_heartbeat_never_moves_last_seen_back(db: Any, clock: Any) -> None:
    """A heartbeat that waited (for SQLite's write lock, say) must not overwrite a later
    proof of life with an older time."""
    from django_mqlite.worker.background import heartbeat

    wid = make_worker(clock.now_ms())
    later = clock.now_ms() + 5000  # a claim stamped this meanwhile
    Worker.objects.filter(pk=wid).update(last_seen=later)
    heartbeat(wid, 3, "default")
    row = Worker.objects.get(pk=wid)
    assert (row.last_seen, row.in_flight) == (later, 3)
    clock.advance(10)
    heartbeat(wid, 0, "default")
    assert Worker.objects.get(pk=wid).last_seen == clock.now_ms()
