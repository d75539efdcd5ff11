"""A receive returns its own queue's expired leases before it claims (item 1 of #32): a
visibility timeout ends on time with no reaper and no worker running, by the reaper's own
statement (``maintenance.expire_locks`` for one queue), so delivery counts,
dead-lettering and a group's line are exactly the reaper's."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import maintenance
from django_mqlite.engine.dialects import dialect_for
from tests.support.plans import statement_text
from tests.support.transactions import counting

pytestmark = pytest.mark.django_db

RECLAIM = "UPDATE mqlite_message SET state = CASE"


#: (MariaDB's cursor runs the return's pick of expired leases first, and its UPDATE
#: only when the pick found some.)
EXPIRED = "state = 'locked' AND locked_until <= "


def test_an_expired_lease_is_received_again_without_a_reaper(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    seq = mq.send(q, b"x")
    (first,) = mq.receive(q, lock_duration=10)
    clock.advance(9.0)
    assert mq.receive(q) == []  # not yet
    clock.advance(1.0)
    (again,) = mq.receive(q)
    assert (again.seq, again.delivery_count) == (seq, 2)
    assert again.lock_token != first.lock_token
    t = mq.stats(q).totals
    assert (t["reclaimed"], t["retried"]) == (1, 1)  # counted as the reaper counts it


def test_the_last_allowed_delivery_is_dead_lettered_as_the_reaper_does(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("m", max_delivery_count=1)
    mq.send("m", b"x")
    mq.receive("m", lock_duration=1)
    clock.advance(1)
    assert mq.receive("m") == []
    (dead,) = mq.peek("m", state="dead_lettered")
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_a_group_keeps_its_line_when_its_head_returns(q: str, clock: mq.clock.FrozenClock) -> None:
    head = mq.send(q, b"a", group_id="g")
    mq.send(q, b"b", group_id="g")
    mq.receive(q, lock_duration=5)
    clock.advance(5)
    (m,) = mq.receive(q, max_messages=10)
    assert (m.seq, m.delivery_count) == (head, 2)  # the head again, never the next one


#: A plain receive, and one with a byte budget: on PostgreSQL the first is the
#: one-statement claim, which asks for lapsed leases itself, the second the general claim,
#: which runs ``expire_queue_locks`` first (as every claim on SQLite and MariaDB).
PATHS = [{}, {"max_bytes": 10**6}]


def two_lapsed(clock: mq.clock.FrozenClock) -> int:
    """Queues "one" and "two" with a message each whose lease has just lapsed (both
    receives looked at the same instant); the seq of two's."""
    mq.create_queue("one")
    mq.create_queue("two")
    mq.send("one", b"x")
    two = mq.send("two", b"y")
    mq.receive("one", lock_duration=1)
    mq.receive("two", lock_duration=1)
    clock.advance(1)
    return two


@pytest.mark.parametrize("how", PATHS)
def test_only_the_received_queue_is_touched(
    make_queue: object, clock: mq.clock.FrozenClock, how: dict[str, int]
) -> None:
    two_lapsed(clock)
    assert len(mq.receive("one", **how)) == 1
    assert [m.state for m in mq.peek("two")] == ["locked"]  # left for its own receive
    assert maintenance.expire_locks("default") == 1  # or the reaper


@pytest.mark.parametrize("how", PATHS)
def test_each_queue_has_its_own_interval(
    make_queue: object, clock: mq.clock.FrozenClock, how: dict[str, int]
) -> None:
    """A receive on one queue does not put off the next queue's return."""
    two = two_lapsed(clock)
    assert len(mq.receive("one", **how)) == 1
    (again,) = mq.receive("two", **how)
    assert (again.seq, again.delivery_count) == (two, 2)


def test_one_return_per_interval_even_in_the_same_millisecond(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    """The general claim (a byte budget; every claim on SQLite and MariaDB) runs the
    return once in an interval, counted as statements: the second receive of the same
    instant runs none, and the first after the interval one again."""

    def returns() -> int:
        with CaptureQueriesContext(connection) as ctx:
            mq.receive(q, max_bytes=10**6)
        sql = [statement_text(s["sql"]) for s in ctx.captured_queries]
        return sum(s.startswith(RECLAIM) or EXPIRED in s for s in sql)

    mq.send(q, b"x")
    assert returns() == 1
    assert returns() == 0  # the same millisecond of the frozen clock
    clock.advance(maintenance.QUEUE_LEASES_EVERY_MS / 1000 - 0.001)
    assert returns() == 0
    clock.advance(0.001)
    assert returns() == 1


def test_at_most_one_return_per_interval_per_queue(q: str, clock: mq.clock.FrozenClock) -> None:
    """A busy queue pays for the return once per interval, not on every receive: a
    lease that lapses within ``QUEUE_LEASES_EVERY_MS`` of the last look waits for the
    next one (the reaper's pass, or the receive after the interval)."""
    seq = mq.send(q, b"x")
    mq.receive(q, lock_duration=1)  # looked at 0 s
    clock.advance(0.9)
    assert mq.receive(q) == []  # looked at 0.9 s: nothing lapsed
    clock.advance(0.1)
    assert mq.receive(q) == []  # lapsed at 1.0 s, but the next look is at 1.15 s
    clock.advance(maintenance.QUEUE_LEASES_EVERY_MS / 1000 - 0.1)
    (again,) = mq.receive(q)
    assert (again.seq, again.delivery_count) == (seq, 2)


def test_the_return_is_its_own_statement_before_the_claim(q: str) -> None:
    """Never inside the claim: the claim is the one statement it always was, and the
    return runs before it (its own transaction; on SQLite, first in the claim's, below).
    PostgreSQL's plain claim asks instead (below); a claim with a byte budget takes the
    general path there too."""
    mq.send(q, b"x")
    with CaptureQueriesContext(connection) as ctx:
        mq.receive(q, max_bytes=10**6)
    # (PostgreSQL's claim is one prepared statement: its text is what was prepared.)
    sql = [statement_text(s["sql"]) for s in ctx.captured_queries]
    returned = next(i for i, s in enumerate(sql) if s.startswith(RECLAIM) or EXPIRED in s)
    claimed = next(
        i for i, s in enumerate(sql) if "UPDATE mqlite_message SET state = 'locked'" in s
    )
    assert returned < claimed
    assert "CASE WHEN" not in sql[claimed]  # (a fresh token per row may be a CASE on seq)
    assert EXPIRED not in sql[claimed]


@pytest.mark.django_db(transaction=True)
def test_the_return_commits_with_the_claim_where_writes_are_serialized(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    """SQLite serializes writes: a receive whose return is due commits it with its claim,
    one transaction. Where writers run concurrently (PostgreSQL, MariaDB) the return
    commits first, alone, so the claim's transaction never holds the rows it locked. (The
    general claim, a byte budget: PostgreSQL's plain claim asks its statement instead.)"""
    seq = mq.send(q, b"x")
    mq.receive(q, lock_duration=1, max_bytes=10**6)
    clock.advance(maintenance.QUEUE_LEASES_EVERY_MS / 1000 + 1)  # the return is due
    with counting() as txns:
        (again,) = mq.receive(q, max_bytes=10**6)
    assert (again.seq, again.delivery_count) == (seq, 2)
    assert txns.total() == (2 if dialect_for("default").concurrent_writers else 1)


def test_postgresqls_plain_claim_returns_leases_only_when_one_lapsed(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    """PostgreSQL's one-statement claim asks, when the return is due, whether a lease of
    the queue lapsed: no return statement when none did; when one did, it claims nothing,
    the reaper's statement returns the lease and a second statement claims in the claim
    order (the returned message first)."""
    if connection.vendor != "postgresql":
        pytest.skip("one statement needs data-modifying CTEs (PostgreSQL)")
    mq.receive(q)  # prepares the statement on this session
    clock.advance(maintenance.QUEUE_LEASES_EVERY_MS / 1000)
    first, second = mq.send(q, b"x"), mq.send(q, b"y")
    with CaptureQueriesContext(connection) as ctx:
        (m,) = mq.receive(q, lock_duration=1)  # due, nothing lapsed
    assert [statement_text(s["sql"])[:11] for s in ctx.captured_queries] == ["WITH q AS ("]
    assert m.seq == first
    clock.advance(1)
    with CaptureQueriesContext(connection) as ctx:
        (again,) = mq.receive(q)
    sql = [statement_text(s["sql"]) for s in ctx.captured_queries]
    claims = [i for i, s in enumerate(sql) if s.startswith("WITH q AS (")]
    returns = [i for i, s in enumerate(sql) if s.startswith(RECLAIM)]
    assert len(claims) == 2 and len(returns) == 1 and claims[0] < returns[0] < claims[1], sql
    assert (again.seq, again.delivery_count) == (first, 2)
    assert [p.seq for p in mq.peek(q) if p.state == "active"] == [second]


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_receives_an_expired_lease_on_time(q: str) -> None:
    """Real time, no reaper: the message is received again within a fraction of a second
    of its lease's end (the figure is printed for the record, not asserted tightly)."""
    mq.send(q, b"x")
    (m,) = mq.receive(q, lock_duration=1)
    assert m.locked_until is not None
    expiry = m.locked_until.timestamp()
    got = mq.receive(q, wait=10)
    late = time.time() - expiry
    assert [g.seq for g in got] == [m.seq]
    print(f"\nexpired lease received again {late * 1000:.0f} ms after expiry ({connection.vendor})")
    assert late < 2.0


def test_purge_everything_takes_in_flight_messages_and_fences_their_holder(q: str) -> None:
    """``mq.purge`` never takes a locked message; ``purge_everything`` (SQS's PurgeQueue)
    takes every state, and the holder's settlement then finds its lease lost."""
    mq.send_batch(q, [mq.OutMessage(b"a", group_id="g"), mq.OutMessage(b"b", group_id="g")])
    (held,) = mq.receive(q)
    assert mq.purge_everything(q) == 2
    assert mq.peek(q) == []
    with pytest.raises(mq.LockLostError):
        held.complete()
    assert mq.stats(q).totals["purged"] == 2
