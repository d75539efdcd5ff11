"""What wakes an idle worker whose wake-ups work (NOTIFY on PostgreSQL, the commit watcher
on SQLite): it claims when something can have become claimable, not on a short timer
(``Worker._tick_woken``). Each test holds the worker's poll at a minute, so a message
that only a poll would find fails the test instead of arriving a few seconds late:

- a group's next message, freed by another process's completion of its head
  (``lines.release_lines`` wakes the queue);
- the worker's own retry, when its backoff ends (the worker polls at that time);
- a rate-limited queue's backlog, as its budget returns (the old back-off poll).

The in-process wake-up of a send is off: sends reach the worker as another process's do;
the heartbeat, whose commits the SQLite commit watcher sees, is a minute apart too.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import send_one
from django_mqlite.worker import Worker, runner
from tests.support.features import requires
from tests.support.procs import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    requires("wake_ups"),
    pytest.mark.skipif(
        os.environ.get("MQLITE_TEST_DB") == "pgbouncer",
        reason="behind a transaction-pooling PgBouncer LISTEN hears nothing: the wake-up "
        "tests run on PostgreSQL directly",
    ),
]


@pytest.fixture(autouse=True)
def long_poll(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    monkeypatch.setattr(runner, "IDLE_MAX_LISTENING_S", 60.0)
    yield


def _running(registry: Registry, queue: str) -> tuple[Worker, threading.Thread]:
    worker = Worker([queue], install_signals=False, registry=registry, reaper=False)
    thread = threading.Thread(target=worker.run, name="mqlite-worker-main")
    thread.start()
    wait_for(worker._woken, timeout=15, what="the worker's wake-up source")
    return worker, thread


def _stop(worker: Worker, thread: threading.Thread) -> None:
    worker.stop()
    thread.join(30)
    assert not thread.is_alive()


@override_settings(MQLITE={"HEARTBEAT_INTERVAL": 60})
def test_a_group_s_next_message_runs_when_another_process_completes_its_head() -> None:
    mq.create_queue("lines", ordering="group_fifo")
    mq.send("lines", "head", group_id="g")
    mq.send("lines", "next", group_id="g")
    (head,) = mq.receive("lines")  # held by "another process": this test
    started: dict[str, float] = {}
    registry = Registry()
    registry.register("lines", lambda msg: started.setdefault(msg.text(), time.monotonic()))
    worker, thread = _running(registry, "lines")
    try:
        time.sleep(0.5)  # idle: its line blocked, nothing to claim
        assert started == {}
        head.complete()
        completed = time.monotonic()
        wait_for(lambda: "next" in started, timeout=20, every=0.01, what="the next message")
    finally:
        _stop(worker, thread)
    assert started["next"] - completed < 2.0


@override_settings(MQLITE={"HEARTBEAT_INTERVAL": 60})
def test_a_group_s_next_message_runs_when_the_worker_itself_completes_its_head() -> None:
    """The worker's own completion frees the line: its flush announced the queue in its
    own thread (``wakeup.noted``), so it claims at once. On SQLite the commit watcher
    sees that commit too, but leaves it alone (this connection's commit counter did not
    move), so without the flush's own announcement the next message would wait for the
    poll (a minute here)."""
    mq.create_queue("own-lines", ordering="group_fifo")
    started: dict[str, float] = {}
    registry = Registry()
    registry.register("own-lines", lambda msg: started.setdefault(msg.text(), time.monotonic()))
    worker, thread = _running(registry, "own-lines")
    try:
        # A first message, so the worker's claims ask for more than one (a claim that
        # takes all it asked for is claimed again at once, which would hide the rule).
        mq.send("own-lines", "warm", group_id="w")
        wait_for(lambda: "warm" in started, timeout=20, every=0.01, what="the first message")
        time.sleep(0.3)
        # One commit: the worker's claim takes the head, and its line holds the next.
        mq.send_batch(
            "own-lines",
            [mq.OutMessage("head", group_id="g"), mq.OutMessage("next", group_id="g")],
        )
        wait_for(lambda: "next" in started, timeout=20, every=0.01, what="the next message")
    finally:
        _stop(worker, thread)
    assert started["next"] - started["head"] < 2.0


@override_settings(
    MQLITE={"RETRY_BACKOFF_BASE": 0.4, "RETRY_BACKOFF_CAP": 0.4, "HEARTBEAT_INTERVAL": 60}
)
def test_the_worker_polls_when_its_own_retry_is_due() -> None:
    mq.create_queue("retried")
    attempts: list[float] = []

    def handle(msg: Any) -> None:
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            raise RuntimeError("once")

    registry = Registry()
    registry.register("retried", handle)
    worker, thread = _running(registry, "retried")
    try:
        mq.send("retried", "x")
        wait_for(lambda: len(attempts) == 2, timeout=20, every=0.01, what="the retry")
    finally:
        _stop(worker, thread)
    assert attempts[1] - attempts[0] < 3.0


@override_settings(MQLITE={"HEARTBEAT_INTERVAL": 60})
def test_a_rate_limited_backlog_drains_as_its_budget_returns() -> None:
    mq.create_queue("limited", rate_limit=20)
    done: list[int] = []
    registry = Registry()
    registry.register("limited", lambda msg: done.append(1))
    worker, thread = _running(registry, "limited")
    try:
        mq.send_batch("limited", [mq.OutMessage(i) for i in range(30)])
        wait_for(lambda: len(done) == 30, timeout=20, every=0.02, what="the backlog")
    finally:
        _stop(worker, thread)
