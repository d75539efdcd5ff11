"""``mq.wait`` sleeps until the settlement that finished a message of its queue says so
(``engine.finished``), not on a timer: on PostgreSQL the settlement's NOTIFY, heard by
the process's shared listener; on SQLite a commit, seen by the process's shared commit
watcher. The waiters here have their safety poll set to a minute and the in-process
wake-up of the settlement turned off, so only the way another process hears of it can
wake them: a missing wake-up fails the test instead of being covered by a poll.

And the announcement costs one statement per settle call (a worker's flush of many
completions is one NOTIFY, not one per message); a settlement that finished nothing (a
renewal, an abandon that retries) sends none."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import finished, listen, waiting
from tests.support.features import requires

pytestmark = [pytest.mark.django_db(transaction=True), requires("wake_ups")]


@pytest.fixture
def only_remote_wakeups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(finished, "wake_here", lambda key: None)
    monkeypatch.setattr(waiting, "WAIT_SAFETY_POLL_S", 60.0)


def _woken_in(queue: str, settle: Any) -> float:
    """Seconds from ``settle(seq)`` returning to ``mq.wait`` on that message returning."""
    seq = mq.send(queue, "x")
    (msg,) = mq.receive(queue)
    answered: list[tuple[str | None, float]] = []
    waiter = threading.Thread(
        target=lambda: answered.append((mq.wait(queue, seq, 30), time.monotonic()))
    )
    waiter.start()
    time.sleep(0.3)  # asleep in its wait, its wake-up source running
    settle(msg)
    settled = time.monotonic()
    waiter.join(40)
    assert answered and answered[0][0] in ("removed", "dead_lettered"), answered
    return answered[0][1] - settled


def _wake_source_ready() -> None:
    """Start the shared listener or commit watcher and wait until it works, as a
    waiter's first wait would."""
    source = waiting._wake_source("default")
    assert source is not None and source.wait(10)


def test_a_waiter_wakes_at_the_completion_not_at_its_poll(only_remote_wakeups: None) -> None:
    mq.create_queue("waited")
    _wake_source_ready()
    took = [_woken_in("waited", lambda m: m.complete()) for _ in range(3)]
    took.append(_woken_in("waited", lambda m: m.reject("Bad")))
    assert max(took) < 5.0, took  # the safety poll is a minute away
    assert statistics.median(took) < 0.1, took


def test_a_waiter_without_a_wake_up_source_still_polls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(waiting, "_wake_source", lambda alias: None)
    mq.create_queue("polled")
    took = _woken_in("polled", lambda m: m.complete())
    assert took < waiting.WAIT_MAX_S + 1.0


@requires("listen_notify")
def test_one_notification_per_settle_call_and_none_for_a_retry() -> None:
    mq.create_queue("flushed")
    for i in range(5):
        mq.send("flushed", i)
    got = mq.receive("flushed", max_messages=5)
    with CaptureQueriesContext(connection) as ctx:
        mq.renew_batch("flushed", [(m.seq, m.lock_token or "") for m in got[:2]])
        got[4].abandon()
    assert not [q for q in ctx.captured_queries if "pg_notify" in q["sql"]]
    with CaptureQueriesContext(connection) as ctx:
        assert mq.complete_batch("flushed", [(m.seq, m.lock_token or "") for m in got[:4]])
    notes = [q for q in ctx.captured_queries if "pg_notify" in q["sql"]]
    assert len(notes) == 1 and "#done flushed" in str(notes[0]), notes


def test_the_shared_commit_watcher_is_there_only_with_a_commit_counter() -> None:
    watcher = listen.ensure_watcher("default")
    if listen.watched_file("default") is None:
        assert watcher is None
    else:
        assert watcher is not None and watcher is listen.ensure_watcher("default")
