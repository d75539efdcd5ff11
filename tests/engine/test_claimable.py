"""``engine.claimable``: a read that says which queues a claim could take something from
now, so a worker woken by a commit that put nothing in its queues claims nothing (on
SQLite an empty claim is a write transaction). It may say yes where the claim then
takes nothing (a paused queue); it must never say no where the claim would take a
message, which the last test checks against the claim itself, step by step."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine.claimable import claimable

pytestmark = pytest.mark.django_db


def test_an_empty_or_unknown_queue_is_not_claimable(q: str) -> None:
    assert claimable("default", [q, "no-such-queue"]) == set()
    assert claimable("default", []) == set()


def test_an_active_message_makes_its_queue_claimable_and_no_other(make_queue: Any) -> None:
    make_queue("a")
    make_queue("b")
    mq.send("a", b"x")
    assert claimable("default", ["a", "b"]) == {"a"}


def test_a_scheduled_message_counts_once_it_is_due(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"later", delay=10)
    assert claimable("default", [q]) == set()
    clock.advance(10.0)
    assert claimable("default", [q]) == {q}  # the claim promotes it first
    assert [m.body for m in mq.receive(q)] == [b"later"]


def test_a_lease_counts_once_it_has_lapsed(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    (first,) = mq.receive(q, lock_duration=10)
    assert claimable("default", [q]) == set()
    clock.advance(10.0)
    assert claimable("default", [q]) == {q}  # the claim returns the lease first
    (again,) = mq.receive(q)
    assert again.seq == first.seq


def test_an_expired_message_and_one_behind_its_groups_head_do_not_count(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("lines", ordering="group_fifo")
    mq.send(q, b"short-lived", ttl=5)
    clock.advance(5.0)
    assert claimable("default", [q]) == set()
    mq.send("lines", b"head", group_id="g")
    mq.send("lines", b"next", group_id="g")
    mq.receive("lines")
    assert claimable("default", ["lines"]) == set()  # the follower waits for its head


def test_a_paused_queue_may_be_answered_yes(q: str) -> None:
    """Erring towards yes: the claim then takes nothing, as it did before the read."""
    mq.send(q, b"x")
    mq.pause_queue(q)
    assert claimable("default", [q]) == {q}
    assert mq.receive(q) == []


def test_it_commits_nothing(q: str) -> None:
    """A read, outside any transaction: on SQLite no write lock and no commit."""
    from tests.support.transactions import counting

    mq.send(q, b"x")
    with counting() as counted:
        assert claimable("default", [q]) == {q}
    expected = 1 if connection.vendor != "sqlite" else 0  # PostgreSQL counts a read too
    assert counted.total() <= expected, dict(counted.by_thread)


STEPS = 120


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_never_says_no_where_the_claim_would_take_a_message(
    make_queue: Any, clock: mq.clock.FrozenClock, seed: int
) -> None:
    """Random sends (now, later, short-lived, in groups), claims, settlements and time;
    before each claim, the read's answer: a claim that took a message was answered yes."""
    rnd = random.Random(seed)
    mq.create_queue("plain")
    mq.create_queue("lines", ordering="group_fifo")
    held: list[tuple[str, Any]] = []
    took = said_no = 0
    for _ in range(STEPS):
        queue = rnd.choice(["plain", "lines"])
        step = rnd.random()
        if step < 0.35:
            mq.send(
                queue,
                b"m",
                delay=rnd.choice([0, 0, 2, 5]),
                ttl=rnd.choice([None, None, 3]),
                group_id=rnd.choice(["g1", "g2"]) if queue == "lines" else None,
            )
        elif step < 0.5 and held:
            name, msg = held.pop(rnd.randrange(len(held)))
            settle = rnd.choice([mq.complete, mq.abandon])
            try:
                settle(name, msg.seq, msg.lock_token)
            except mq.LockLostError:
                pass  # its lease lapsed and the message went back
        elif step < 0.65:
            clock.advance(rnd.choice([0.5, 1.0, 3.0]))
        else:
            yes = queue in claimable("default", [queue])
            got = mq.receive(queue, max_messages=rnd.choice([1, 3]), lock_duration=4)
            took += len(got)
            said_no += not yes
            assert yes or not got, (queue, [m.seq for m in got])
            held += [(queue, m) for m in got]
    assert took > 10 and said_no > 5  # both answers were tried
