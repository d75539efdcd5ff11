"""Task control of running work at the engine (``engine.running``): a cancel request is
one guarded statement that the holder's lease renewal answers; what a handler reports
(progress, a checkpoint) is written by that renewal, fenced; bad reports and cancels of
finished or unknown messages are typed errors that change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import running
from django_mqlite.engine.dialects import dialect_for

pytestmark = pytest.mark.django_db(transaction=True)


def _row(seq: int) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, cancel_requested_at, progress, checkpoint, dead_letter_reason "
            "FROM mqlite_message WHERE seq = %s",
            [seq],
        )
        row = cursor.fetchone()
    assert row is not None
    state, cancel_at, progress, checkpoint, reason = row
    return {
        "state": state,
        "cancel_requested_at": cancel_at,
        "progress": dialect_for(connection.alias).load_json(progress),
        "checkpoint": dialect_for(connection.alias).load_json(checkpoint),
        "reason": reason,
    }


def test_a_running_message_sees_the_request_at_its_next_renewal() -> None:
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    assert msg.cancel_requested is False
    assert mq.request_cancel("work", seq) is True
    assert msg.cancel_requested is False  # nothing reaches it before a renewal
    msg.renew()
    assert msg.cancel_requested is True
    assert mq.request_cancel("work", seq) is False  # asked already
    assert _row(seq)["state"] == "locked"  # the handler decides when to stop


def test_a_message_that_has_not_started_is_cancelled_at_once() -> None:
    mq.create_queue("work")
    seq = mq.send("work", "x")
    later = mq.send("work", "y", delay=60)
    assert mq.request_cancel("work", seq) is True
    assert running.cancel("work", later) == running.CANCELLED
    for s in (seq, later):
        row = _row(s)
        assert (row["state"], row["reason"]) == ("dead_lettered", "Cancelled")
    assert mq.stats("work").totals["rejected"] == 2


def test_a_finished_or_unknown_message_is_a_typed_error_and_nothing_changes() -> None:
    mq.create_queue("work", keep_results=3600)
    done = mq.send("work", "x")
    (msg,) = mq.receive("work")
    msg.complete()
    dead = mq.send("work", "y")
    (msg,) = mq.receive("work")
    msg.reject("Bad")
    with pytest.raises(mq.MessageFinishedError) as finished:
        mq.request_cancel("work", done)
    assert finished.value.code == "finished"
    with pytest.raises(mq.MessageFinishedError):
        mq.request_cancel("work", dead)
    with pytest.raises(mq.MessageNotFoundError) as unknown:
        mq.request_cancel("work", 10**12)
    assert unknown.value.code == "not_found"
    assert (_row(done)["state"], _row(dead)["reason"]) == ("completed", "Bad")
    with pytest.raises(mq.InvalidArgumentError):
        mq.request_cancel("work", 0)
    with pytest.raises(mq.QueueNotFoundError):
        mq.request_cancel("nowhere", done)


def writes(captured: list[dict[str, str]]) -> list[str]:
    """The statements that wrote the message table (where the database has no ``UPDATE
    ... RETURNING``, the MariaDB engine cursor locks the rows and reads them back around
    the one write: ``dialects.mariadb_sql``)."""
    return [
        q["sql"]
        for q in captured
        if "mqlite_message" in q["sql"] and not q["sql"].lstrip().upper().startswith("SELECT")
    ]


def test_reports_ride_on_the_renewal_and_a_plain_renewal_is_unchanged() -> None:
    """A renewal with nothing reported is the one plain statement it always was (it only
    returns one column more); one with reports writes them in that same statement."""
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    with CaptureQueriesContext(connection) as plain:
        msg.renew()
    updates = writes(plain.captured_queries)
    assert len(updates) == 1 and "VALUES" not in updates[0] and "progress" not in updates[0]
    msg.set_progress({"done": 3, "of": 10})
    msg.checkpoint({"page": 3})
    assert _row(seq)["progress"] is None  # buffered: no statement of its own
    with CaptureQueriesContext(connection) as noted:
        msg.renew()
    updates = writes(noted.captured_queries)
    assert len(updates) == 1 and "progress" in updates[0]
    row = _row(seq)
    assert (row["progress"], row["checkpoint"]) == ({"done": 3, "of": 10}, {"page": 3})
    msg.set_progress(5)  # only progress this time: the checkpoint stays
    msg.renew()
    assert (_row(seq)["progress"], _row(seq)["checkpoint"]) == (5, {"page": 3})
    assert msg.last_checkpoint == {"page": 3}


def test_a_later_delivery_reads_the_stored_checkpoint(clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("work", lock_duration=5)
    mq.send("work", "x")
    (first,) = mq.receive("work")
    assert first.last_checkpoint is None
    first.checkpoint([1, 2])
    first.renew()
    clock.advance(5)
    (second,) = mq.receive("work")
    assert second.delivery_count == 2 and second.last_checkpoint == [1, 2]


@pytest.mark.parametrize(
    "value",
    [float("nan"), {1, 2}, b"bytes", {"k": object()}, "\x00", "\ud800"],
    ids=["nan", "set", "bytes", "object", "nul", "surrogate"],
)
def test_a_report_that_is_not_json_is_refused_and_nothing_is_buffered(value: Any) -> None:
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    with pytest.raises(mq.InvalidArgumentError):
        msg.set_progress(value)
    with pytest.raises(mq.InvalidArgumentError):
        msg.checkpoint(value)
    msg.renew()
    assert (_row(seq)["progress"], _row(seq)["checkpoint"]) == (None, None)


def test_a_report_over_the_cap_is_refused() -> None:
    mq.create_queue("work")
    mq.send("work", "x")
    (msg,) = mq.receive("work")
    with pytest.raises(mq.ProgressTooLargeError) as exc:
        msg.set_progress("x" * running.MAX_NOTE_BYTES)
    assert exc.value.code == "invalid_argument"
    msg.set_progress("x" * (running.MAX_NOTE_BYTES - 2))  # the quotes make the cap


def test_a_lost_lease_writes_no_report_over_the_new_holder(clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("work", lock_duration=5)
    seq = mq.send("work", "x")
    (stale,) = mq.receive("work")
    clock.advance(5)
    (fresh,) = mq.receive("work")
    fresh.set_progress("fresh")
    fresh.renew()
    stale.set_progress("stale")
    stale.checkpoint("stale")
    with pytest.raises(mq.LockLostError):
        stale.renew()
    assert (_row(seq)["progress"], _row(seq)["checkpoint"]) == ("fresh", None)


def test_a_redrive_clears_the_request() -> None:
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    mq.request_cancel("work", seq)
    msg.renew()
    msg.reject("Cancelled", "cancelled while running")
    assert mq.redrive("work") == 1
    (again,) = mq.receive("work")
    again.renew()
    assert again.cancel_requested is False and _row(seq)["cancel_requested_at"] is None


def test_a_request_reaching_a_finished_handler_is_no_error() -> None:
    """The hook that stops an ``async def`` handler may meet its closed event loop (the
    handler just finished): the renewal that brought the request must not fail."""
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    calls: list[int] = []

    def closed_loop() -> None:
        calls.append(1)
        raise RuntimeError("Event loop is closed")

    msg.on_cancel(closed_loop)
    mq.request_cancel("work", seq)
    msg.renew()  # the renewal answers the request and calls the hook
    assert msg.cancel_requested and calls == [1]
    msg.on_cancel(closed_loop)  # set after the request arrived: called at once
    assert calls == [1, 1]
