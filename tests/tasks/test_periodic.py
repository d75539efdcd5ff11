"""Periodic schedules: two workers ticking concurrently over a simulated span enqueue
each occurrence exactly once; missed occurrences follow ``catchup``."""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from django_mqlite.tasks.periodic import Ticker, schedules
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

START = dt.datetime(2025, 3, 29, 23, 0, tzinfo=dt.UTC)
PERIODIC = {
    "pings": {"cron": "*/5 * * * *", "queue": "pings", "body": {"ping": True}},
    "sums": {
        "cron": "*/15 * * * *",
        "task": "tests.workerproject.recorder.tasks.add",
        "args": [1, 2],
    },
    # 02:30 local does not exist on 2025-03-30 in Paris (DST): cron semantics say it
    # runs once at the jump.
    "paris": {"cron": "30 2 * * *", "queue": "pings", "body": "paris", "timezone": "Europe/Paris"},
}


def _ids(queue: str) -> list[str]:
    return [m.message_id or "" for m in mq.peek(queue, limit=1000)]


def test_two_workers_enqueue_each_occurrence_once() -> None:
    mq.create_queue("pings", dedup_window=0)
    with override_settings(MQLITE={"PERIODIC": PERIODIC}), mq.clock.frozen(START) as clock:
        plan = schedules()
        tickers = [Ticker(plan=plan), Ticker(plan=plan)]
        step = threading.Barrier(3)
        counts = [0, 0]
        steps = 6 * 60  # six hours, a minute at a time

        def run(i: int) -> None:
            try:
                for _ in range(steps):
                    step.wait()
                    counts[i] += tickers[i].tick()
                    step.wait()
            finally:
                connections.close_all()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for _ in range(steps):
            step.wait()  # both tick at this time
            step.wait()  # both done
            clock.advance(60)
        for t in threads:
            t.join()

    pings = [i for i in _ids("pings") if i.startswith("periodic:pings:")]
    assert len(pings) == len(set(pings)) == 6 * 12 - 1  # the first one is the baseline
    assert pings[0] == "periodic:pings:2025-03-29T23:05:00Z"
    sums = _ids("tasks")
    assert len(sums) == len(set(sums)) == 6 * 4 - 1
    assert _ids("pings").count("periodic:paris:2025-03-30T01:00:00Z") == 1
    assert sum(counts) == len(pings) + len(sums) + 1
    result = tasks.add.get_result(str(mq.peek("tasks")[0].seq))
    assert result.status == TaskResultStatus.READY and result.args == [1, 2]


@pytest.mark.parametrize(("catchup", "expected"), [("latest", 1), ("all", 12)])
def test_downtime_catchup(catchup: str, expected: int) -> None:
    mq.create_queue("pings")
    spec = {"cron": "*/5 * * * *", "queue": "pings", "catchup": catchup}
    with override_settings(MQLITE={"PERIODIC": {"p": spec}}), mq.clock.frozen(START) as clock:
        assert Ticker().tick() == 0  # baseline
        clock.advance(3600)  # an hour of downtime
        assert Ticker().tick() == expected
        assert Ticker().tick() == 0
    ids = _ids("pings")
    assert len(ids) == expected and ids[-1] == "periodic:p:2025-03-30T00:00:00Z"


def test_a_failing_enqueue_is_retried_next_tick(caplog: Any) -> None:
    spec = {"cron": "* * * * *", "queue": "missing"}
    with override_settings(MQLITE={"PERIODIC": {"m": spec}}), mq.clock.frozen(START) as clock:
        ticker = Ticker()
        ticker.tick()
        clock.advance(60)
        assert ticker.tick() == 0  # the queue does not exist: rolled back, logged
        mq.create_queue("missing")
        assert ticker.tick() == 1
    assert "enqueue failed" in caplog.text


def test_a_periodic_task_is_enqueued_signed_and_runs(run_worker: Any) -> None:
    """The ticker enqueues through the Tasks backend, so the worker can verify it."""
    spec = {"cron": "*/5 * * * *", "task": "tests.workerproject.recorder.tasks.remember"}
    tasks.RAN.clear()
    with override_settings(MQLITE={"PERIODIC": {"r": {**spec, "args": ["tick"]}}}):
        with mq.clock.frozen(START) as clock:
            assert Ticker().tick() == 0  # baseline
            clock.advance(300)
            assert Ticker().tick() == 1
    (queued,) = mq.peek("tasks")
    assert json.loads(queued.body)["signature"]
    run_worker(queues=["tasks"])  # without PERIODIC: its own ticker enqueues nothing
    assert tasks.RAN == ["tick"]


def test_a_message_schedule_cannot_target_a_tasks_queue() -> None:
    """Its raw body would be dead-lettered unsigned at every occurrence: refused at
    configuration time (system check E004), with the way out in the message."""
    from django.core.exceptions import ImproperlyConfigured

    from django_mqlite.checks import check_periodic

    spec = {"cron": "* * * * *", "queue": "tasks", "body": {"task": "x"}}
    with override_settings(MQLITE={"PERIODIC": {"raw": spec}}):
        with pytest.raises(ImproperlyConfigured, match="is a Tasks queue"):
            schedules()
        (error,) = check_periodic()
        assert error.id == "django_mqlite.E004"


def test_the_ticker_thread_waits_between_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Ticker.tick`` returns how many occurrences it enqueued (0 mostly); the worker's
    thread must not read that as seconds to wait (it would tick without pause)."""
    import time

    from django_mqlite.tasks import periodic

    calls: list[float] = []

    def tick(self: Any) -> int:
        calls.append(time.monotonic())
        return 0

    monkeypatch.setattr(periodic.Ticker, "tick", tick)
    loop = periodic.ticker_loop()
    loop.start()
    try:
        time.sleep(0.5)
    finally:
        loop.request_stop()
        loop.join(5)
    assert 1 <= len(calls) <= 2, len(calls)  # one tick a second, not thousands
