"""Stats: counts for every state, oldest active age, lifetime totals and their invariant."""

from __future__ import annotations

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def test_counts_include_every_state(q: str, clock: mq.clock.FrozenClock) -> None:
    s = mq.stats(q)
    assert s.counts == {
        "active": 0,
        "locked": 0,
        "deferred": 0,
        "scheduled": 0,
        "completed": 0,
        "dead_lettered": 0,
        "waiting": 0,
    }
    assert s.oldest_active_age is None
    assert set(s.totals) == {
        "enqueued",
        "delivered",
        "completed",
        "abandoned",
        "reclaimed",
        "retried",
        "exhausted",
        "rejected",
        "expired",
        "dead_lettered",
        "redriven",
        "purged",
    }


def test_oldest_active_age_follows_the_clock(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    clock.advance(12.5)
    assert mq.stats(q).oldest_active_age == 12.5


def test_stats_of_all_queues(make_queue: object) -> None:
    mq.create_queue("a")
    mq.create_queue("b")
    mq.send("b", b"x")
    all_stats = mq.stats()
    assert set(all_stats) == {"a", "b"}
    assert all_stats["b"].counts["active"] == 1


def test_invariants_hold_after_a_mixed_workload(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("w", max_delivery_count=2)
    mq.send_batch("w", [mq.OutMessage(str(i), ttl=500 if i % 7 == 0 else None) for i in range(40)])
    for round_ in range(6):
        for i, m in enumerate(mq.receive("w", max_messages=10, lock_duration=5)):
            match (i + round_) % 5:
                case 0:
                    m.complete()
                case 1:
                    m.abandon()
                case 2:
                    m.reject("Bad")
                case 3:
                    pass  # let the lease run out
                case _:
                    m.abandon(delay=1)
        clock.advance(100)
        mq.reap()
    t = mq.stats("w").totals
    assert t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"]
    assert t["dead_lettered"] == t["exhausted"] + t["rejected"] + t["expired"]
    counts = mq.stats("w").counts
    assert sum(counts.values()) == t["enqueued"] - t["completed"]
