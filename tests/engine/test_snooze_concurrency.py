"""Snooze against lease loss, on real threads (each with its own connection): a stale
owner whose lease ran out and whose message was claimed again snoozes at the same moment
as the new owner settles. The oracle: the stale snooze always raises ``LockLostError``
and changes nothing; the new owner's settlement always goes through, and the row shows
exactly its effect (one delivery undone for a snooze, none for an abandon)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.concurrency import Oracle, retrying, start_threads

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 25


def _row(seq: int) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, delivery_count, snooze_count, lock_token FROM mqlite_message "
            "WHERE seq = %s",
            [seq],
        )
        row = cursor.fetchone()
    return tuple(row)


def _race(stale: mq.Received, fresh: mq.Received, verb: str) -> dict[str, object]:
    """Run the stale snooze and the fresh owner's ``verb`` together; what each raised
    (or the outcome it got)."""
    got: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def run(i: int) -> None:
        barrier.wait()
        try:
            if i == 0:
                got["stale"] = retrying(lambda: stale.snooze(0))
            elif verb == "snooze":
                got["fresh"] = retrying(lambda: fresh.snooze(0))
            elif verb == "abandon":
                got["fresh"] = retrying(lambda: fresh.abandon())
            else:
                got["fresh"] = retrying(lambda: fresh.complete())
        except mq.LockLostError as exc:
            got["stale" if i == 0 else "fresh"] = exc

    errors: list[BaseException] = []
    for t in start_threads(2, run, errors):
        t.join(60)
    assert not errors, errors
    return got


def _race_reclaim(stale: mq.Received) -> dict[str, object]:
    """Run the stale snooze and another consumer's receive together."""
    got: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def run(i: int) -> None:
        barrier.wait()
        if i == 1:
            got["fresh"] = retrying(lambda: mq.receive("nap"))
            return
        try:
            retrying(lambda: stale.snooze(0))
            got["stale"] = "snoozed"
        except mq.LockLostError as exc:
            got["stale"] = exc

    errors: list[BaseException] = []
    for t in start_threads(2, run, errors):
        t.join(60)
    assert not errors, errors
    return got


def test_a_stale_snooze_never_touches_a_reclaimed_message(
    clock: mq.clock.FrozenClock,
) -> None:
    mq.create_queue("nap", lock_duration=5, max_delivery_count=100)
    rng = random.Random(7)
    oracle = Oracle()
    for n in range(ROUNDS):
        seq = mq.send("nap", n)
        (stale,) = mq.receive("nap")
        oracle.claimed(stale)
        clock.advance(5)  # the stale owner's lease is over (equality is expired)
        oracle.released(seq)
        (fresh,) = mq.receive("nap")  # the receive's lease-expiry rule returns it first
        oracle.claimed(fresh)
        assert fresh.seq == seq and fresh.delivery_count == 2
        verb = rng.choice(["snooze", "abandon", "complete"])
        got = _race(stale, fresh, verb)
        assert isinstance(got["stale"], mq.LockLostError), got
        assert not isinstance(got.get("fresh"), BaseException), got
        oracle.released(seq)
        if verb == "complete":
            assert mq.peek("nap") == []
            continue
        state, deliveries, snoozes, token = _row(seq)
        assert (state, token) == ("active", None)
        # The fresh snooze undid its own claim's count; the stale one undid nothing.
        assert (deliveries, snoozes) == ((1, 1) if verb == "snooze" else (2, 0)), verb
        (last,) = mq.receive("nap")
        oracle.claimed(last)
        last.complete()
        oracle.done(seq)
    assert oracle.violations == []


def test_a_stale_snooze_racing_the_reclaim_itself_is_lock_lost(
    clock: mq.clock.FrozenClock,
) -> None:
    """The stale owner snoozes while another consumer's receive reclaims the message:
    whichever commits first, the snooze is ``LockLostError`` (its lease is over) and the
    message is delivered exactly once more."""
    mq.create_queue("nap", lock_duration=5, max_delivery_count=100)
    for n in range(ROUNDS):
        seq = mq.send("nap", n)
        (stale,) = mq.receive("nap")
        clock.advance(5)
        got = _race_reclaim(stale)
        assert isinstance(got["stale"], mq.LockLostError), got
        fresh = got["fresh"]
        assert isinstance(fresh, list)
        if not fresh:  # the reclaim's rate limit let this receive skip the sweep
            mq.reap()
            fresh = mq.receive("nap")
        [m] = fresh
        assert (m.seq, m.delivery_count) == (seq, 2)
        assert _row(seq)[2] == 0  # no snooze was counted
        m.complete()
