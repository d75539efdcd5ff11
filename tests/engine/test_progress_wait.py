"""Progress, checkpoints and waiting at the engine: ``Peeked`` shows what a handler
reported; a completion where results are kept writes the last progress report in its own
statement (and a completion without one is today's statement); ``mq.wait`` answers the
final state, or None at its timeout, by a bounded poll."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def test_peek_shows_the_reports_and_the_request() -> None:
    mq.create_queue("work")
    seq = mq.send("work", "x")
    (msg,) = mq.receive("work")
    [before] = mq.peek("work")
    assert (before.progress, before.checkpoint, before.cancel_requested_at) == (None, None, None)
    msg.set_progress({"done": 1})
    msg.checkpoint([1])
    msg.renew()
    mq.request_cancel("work", seq)
    [after] = mq.peek("work")
    assert (after.progress, after.checkpoint) == ({"done": 1}, [1])
    assert after.cancel_requested_at is not None


def test_a_kept_completion_writes_the_last_report_in_its_statement() -> None:
    mq.create_queue("work", keep_results=60)
    plain = mq.send("work", "a")
    noted = mq.send("work", "b")
    first, second = mq.receive("work", max_messages=2)
    with CaptureQueriesContext(connection) as ctx:
        mq.complete_batch("work", [(first.seq, first.lock_token or "")])
    assert not any("progress" in q["sql"] for q in ctx.captured_queries)  # today's statement
    second.set_progress(100)
    with CaptureQueriesContext(connection) as ctx:
        from django_mqlite.worker import handling

        handling.complete(second, "default")
    completions = [q["sql"] for q in ctx.captured_queries if "'completed'" in q["sql"]]
    assert len(completions) == 1 and "progress" in completions[0]
    by_seq = {p.seq: p for p in mq.peek("work")}
    assert (by_seq[plain].progress, by_seq[noted].progress) == (None, 100)
    assert by_seq[noted].state == "completed"


def test_wait_answers_the_final_state() -> None:
    mq.create_queue("kept", keep_results=60)
    mq.create_queue("gone")
    kept, dead, gone = mq.send("kept", 1), mq.send("kept", 2), mq.send("gone", 3)
    first, second = mq.receive("kept", max_messages=2)
    (third,) = mq.receive("gone")

    def settle() -> None:
        time.sleep(0.2)
        first.complete()
        second.reject("Bad")
        third.complete()

    t = threading.Thread(target=settle)
    t.start()
    try:
        assert mq.wait("kept", kept, 10) == "completed"
        assert mq.wait("kept", dead, 10) == "dead_lettered"
        assert mq.wait("gone", gone, 10) == "removed"
    finally:
        t.join(10)
    assert mq.wait("gone", 10**12, 1) == "removed"  # never there


def test_wait_times_out_with_none_without_spinning() -> None:
    mq.create_queue("work")
    seq = mq.send("work", 1)
    with CaptureQueriesContext(connection) as ctx:
        t0 = time.monotonic()
        assert mq.wait("work", seq, 0.3) is None
        took = time.monotonic() - t0
    assert 0.3 <= took < 2
    reads = [q for q in ctx.captured_queries if "SELECT state" in q["sql"]]
    assert 2 <= len(reads) <= 10  # 10 ms doubling: a handful of reads, not a busy loop


def test_bad_waits_are_typed_errors() -> None:
    mq.create_queue("work")
    seq = mq.send("work", 1)
    for timeout in (-1, float("nan"), "5", None):
        with pytest.raises(mq.InvalidArgumentError):
            mq.wait("work", seq, timeout)  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgumentError), transaction.atomic():
        mq.wait("work", seq, 1)
    with pytest.raises(mq.QueueNotFoundError):
        mq.wait("nowhere", seq, 1)
