"""An idle worker notices a send from another process within milliseconds, without
claiming in a loop: through NOTIFY on PostgreSQL, through the commit counter
(``listen.CommitWatcher``, ``PRAGMA data_version``) on SQLite. A database with neither
(MariaDB) has only the bounded poll.

A send in this process also wakes its waiters directly (``send_one.Wake``); the tests
turn that off, so the only way the worker can hear of the send is the way a worker in
another process does. The worker's poll is held at one second, so a worker that only
polled would take half a second on average."""

from __future__ import annotations

import random
import statistics
import sys
import threading
import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import listen, send_one, wakeup
from django_mqlite.worker import Worker, runner
from tests.support.features import requires
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@requires("wake_ups")
def test_an_idle_worker_starts_another_process_s_send_within_milliseconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    monkeypatch.setattr(runner, "IDLE_MIN_S", 1.0)
    mq.create_queue("idle")
    started: dict[int, float] = {}
    registry = Registry()
    registry.register("idle", lambda msg: started.setdefault(int(msg.body), time.monotonic()))
    worker = Worker(["idle"], reaper=False, install_signals=False, registry=registry)
    thread = threading.Thread(target=worker.run)
    thread.start()
    latencies = []
    try:
        rng = random.Random(5)
        for i in range(7):
            time.sleep(rng.uniform(0.2, 0.6))  # any phase of the worker's 1 s poll
            sent = time.monotonic()
            mq.send("idle", i)
            wait_for(lambda i=i: i in started, timeout=10, every=0.005, what=f"message {i}")
            latencies.append(started[i] - sent)
    finally:
        worker.stop()
        thread.join(30)
    # Polling alone: uniform over the 1 s wait, a median near 0.5 s.
    assert statistics.median(latencies) < 0.15, latencies


def test_the_commit_watcher_wakes_on_another_connection_s_commit_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = listen.watched_file("default")
    if path is None:
        pytest.skip("the database has no commit counter to watch (NOTIFY wakes workers)")
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    mq.create_queue("watched")
    watcher = listen.CommitWatcher(path, ["watched"])
    watcher.start()
    try:
        assert watcher.watching.wait(5)
        before = wakeup.generation("watched")
        time.sleep(0.1)
        assert wakeup.generation("watched") == before  # nothing committed: no wake-up
        mq.send("watched", "x")
        assert wakeup.wait("watched", 2.0, since=before)
    finally:
        watcher.stop()
    assert not watcher.is_alive()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_on_linux_the_watcher_sleeps_until_the_log_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """inotify, not a timer, wakes it: with the timed look pushed out to a minute, a
    commit still wakes the queue at once, and a stop ends the thread at once."""
    path = listen.watched_file("default")
    if path is None:
        pytest.skip("the database has no commit counter to watch (NOTIFY wakes workers)")
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    monkeypatch.setattr(listen, "RECHECK_S", 60.0)
    mq.create_queue("watched")
    watcher = listen.CommitWatcher(path, ["watched"], poll_s=60.0)
    watcher.start()
    try:
        assert watcher.watching.wait(5)
        assert watcher.mode == "inotify"
        for _ in range(3):
            before = wakeup.generation("watched")
            mq.send("watched", "x")
            assert wakeup.wait("watched", 0.5, since=before)
    finally:
        started = time.monotonic()
        watcher.stop()
        assert time.monotonic() - started < 1.0
    assert not watcher.is_alive()


def test_a_worker_on_an_in_memory_database_has_nothing_to_watch(settings: Any) -> None:
    from django.db import connections

    name = connections["default"].settings_dict["NAME"]
    try:
        connections["default"].settings_dict["NAME"] = ":memory:"
        assert listen.watched_file("default") is None
    finally:
        connections["default"].settings_dict["NAME"] = name


def test_an_idle_watcher_does_not_spin_at_its_timed_rechecks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recheck that no write to the log woke looks once; only a write that shows no
    commit yet looks again for a moment (``_settle``), so an idle database costs one
    look a recheck, not SETTLE_S of 1 ms looks."""
    path = listen.watched_file("default")
    if path is None:
        pytest.skip("the database has no commit counter to watch (NOTIFY wakes workers)")
    monkeypatch.setattr(listen, "RECHECK_S", 0.05)
    mq.create_queue("watched")
    watcher = listen.CommitWatcher(path, ["watched"], poll_s=60.0)
    settles: list[int] = []
    real = watcher._settle

    def settle(conn: Any, version: int, changes: Any) -> tuple[int, bool]:
        settles.append(version)
        return real(conn, version, changes)

    monkeypatch.setattr(watcher, "_settle", settle)
    watcher.start()
    try:
        assert watcher.watching.wait(5)
        time.sleep(0.6)  # about twelve timed rechecks, nothing written
    finally:
        watcher.stop()
    assert settles == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_the_watcher_looks_at_once_after_quiet_and_at_most_every_watch_s_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first ``WATCH_BURST`` writes after a quiet spell are looked at at once (an
    idle worker's pickup is not held back by the rate limit, even just after a
    heartbeat); writes that follow within ``WATCH_S`` wait for it, so a busy database
    wakes the worker no more often than that."""
    path = listen.watched_file("default")
    if path is None:
        pytest.skip("the database has no commit counter to watch (NOTIFY wakes workers)")
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    monkeypatch.setattr(listen, "WATCH_S", 0.6)
    mq.create_queue("watched")
    watcher = listen.CommitWatcher(path, ["watched"], poll_s=60.0)
    watcher.start()
    try:
        assert watcher.watching.wait(5)
        time.sleep(0.7)  # quiet for longer than WATCH_S
        sent = time.monotonic()
        for body in ("w", "x", "y", "z"):  # WATCH_BURST (4) writes, each looked at once
            before = wakeup.generation("watched")
            mq.send("watched", body)
            assert wakeup.wait("watched", 2.0, since=before), body
            assert time.monotonic() - sent < 0.3, body  # not after WATCH_S
        before = wakeup.generation("watched")
        mq.send("watched", "the fifth")
        assert wakeup.wait("watched", 2.0, since=before)
        assert time.monotonic() - sent >= 0.4  # the fifth look waited for the rate
    finally:
        watcher.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_the_watcher_checkpoints_the_log_when_writes_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once it has seen ``CHECKPOINT_COMMITS`` commits and the writes pause for
    ``CHECKPOINT_QUIET_S``, the watcher checkpoints the log, so the commit that would
    cross SQLite's own line (1,000 frames) does not (3-8 ms in a pickup); with fewer
    commits seen it leaves the log alone."""
    from django.db import connection

    path = listen.watched_file("default")
    if path is None:
        pytest.skip("the database has no commit counter to watch (NOTIFY wakes workers)")
    monkeypatch.setattr(listen, "CHECKPOINT_COMMITS", 3)
    mq.create_queue("paused")
    with connection.cursor() as c:  # the log starts empty: nothing else checkpoints it
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    watcher = listen.CommitWatcher(path, ["paused"], poll_s=60.0)
    watcher.start()
    try:
        assert watcher.watching.wait(5)
        if watcher.mode != "inotify":
            pytest.skip("the log cannot be watched here")
        for i in range(6):
            mq.send("paused", f"{i}" * 1000)
            time.sleep(0.02)  # each commit seen on its own
        wait_for(lambda: watcher.checkpoints > 0, timeout=5, what="the checkpoint")
        log, done = watcher.last_checkpoint
        assert log > 0 and done == log, watcher.last_checkpoint  # all of it, nobody waits
        monkeypatch.setattr(listen, "CHECKPOINT_COMMITS", 10_000)
        seen = watcher.checkpoints
        mq.send("paused", "below the line")
        time.sleep(0.3)
        assert watcher.checkpoints == seen
    finally:
        watcher.stop()
