"""Task control against lease loss and against completion, on real threads (each with its
own connection).

- A stale holder (its lease ran out on the injectable clock, the message claimed again)
  reports progress and a checkpoint, renews and acknowledges a cancel (the reject a worker
  makes for a cancelled handler) at the same moment as the new holder reports and renews:
  the stale writes always raise ``LockLostError`` and the row holds the new holder's
  reports only.
- A cancel request races the holder's renew-then-settle: either the holder sees it (its
  renewal answers it, and it dead-letters the message as cancelled) or the message
  completes; never both, never neither, and a request made after completion is
  ``MessageFinishedError``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine.dialects import dialect_for
from tests.support.concurrency import Oracle, retrying, start_threads

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 25


def _row(seq: int) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, progress, checkpoint, dead_letter_reason FROM mqlite_message "
            "WHERE seq = %s",
            [seq],
        )
        state, progress, checkpoint, reason = cursor.fetchone()
    load = dialect_for(connection.alias).load_json
    return state, load(progress), load(checkpoint), reason


def _together(*steps: Any) -> list[object]:
    """Run each step on its own thread, released together; what each returned or
    raised (an ``MQLiteError``)."""
    got: list[object] = [None] * len(steps)
    barrier = threading.Barrier(len(steps))

    def run(i: int) -> None:
        barrier.wait()
        try:
            got[i] = retrying(steps[i])
        except mq.MQLiteError as exc:
            got[i] = exc

    errors: list[BaseException] = []
    for t in start_threads(len(steps), run, errors):
        t.join(60)
    assert not errors, errors
    return got


def test_a_stale_holder_never_lands_its_reports_or_its_cancel(
    clock: mq.clock.FrozenClock,
) -> None:
    mq.create_queue("work", lock_duration=5, max_delivery_count=100)
    oracle = Oracle()
    for n in range(ROUNDS):
        seq = mq.send("work", n)
        (stale,) = mq.receive("work")
        oracle.claimed(stale)
        clock.advance(5)  # the stale holder's lease is over (equality is expired)
        oracle.released(seq)
        (fresh,) = mq.receive("work")
        oracle.claimed(fresh)
        assert mq.request_cancel("work", seq) is True

        def stale_writes(m: mq.Received = stale, n: int = n) -> None:
            m.set_progress({"stale": n})
            m.checkpoint({"stale": n})
            m.renew()

        def stale_ack(m: mq.Received = stale) -> None:
            m.reject("Cancelled", "cancelled while running")

        def fresh_writes(m: mq.Received = fresh, n: int = n) -> None:
            m.set_progress({"fresh": n})
            m.renew()

        got = _together(stale_writes, stale_ack, fresh_writes)
        assert isinstance(got[0], mq.LockLostError) and isinstance(got[1], mq.LockLostError), got
        assert got[2] is None, got
        assert fresh.cancel_requested is True  # the renewal answered the request
        assert _row(seq) == ("locked", {"fresh": n}, None, None)
        fresh.complete()
        oracle.done(seq)
    assert oracle.violations == []


def test_a_cancel_racing_completion_is_seen_or_loses_never_both(
    clock: mq.clock.FrozenClock,
) -> None:
    mq.create_queue("work", keep_results=3600)
    outcomes: dict[str, int] = {}
    for n in range(ROUNDS * 2):
        seq = mq.send("work", n)
        (held,) = mq.receive("work")

        def holder(m: mq.Received = held) -> str:
            m.renew()
            if m.cancel_requested:
                m.reject("Cancelled", "cancelled while running")
                return "saw"
            m.complete()
            return "completed"

        def cancel(seq: int = seq) -> object:
            return mq.request_cancel("work", seq)

        got_holder, got_cancel = _together(holder, cancel)
        state, _, _, reason = _row(seq)
        if got_holder == "saw":
            # Seen: the request was recorded, and the message ended cancelled.
            assert got_cancel is True and (state, reason) == ("dead_lettered", "Cancelled")
        else:
            # Completed: the request came after the renewal (recorded, then left behind by
            # the completion) or after the completion (finished).
            assert got_holder == "completed" and (state, reason) == ("completed", None)
            assert got_cancel is True or isinstance(got_cancel, mq.MessageFinishedError), got_cancel
        key = f"{got_holder}/{type(got_cancel).__name__}"
        outcomes[key] = outcomes.get(key, 0) + 1
    totals = mq.stats("work").totals
    assert totals["completed"] + totals["rejected"] == ROUNDS * 2  # each ended exactly once
    assert outcomes  # every round landed in one of the allowed outcomes above
