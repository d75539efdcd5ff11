"""Schedules stored in the database, run by the periodic ticker: tickers racing in
threads enqueue each occurrence exactly once; pause stops occurrences (even for a
ticker holding a copy read before the pause); resume starts from the next fire time;
jitter delays each enqueue by its stable offset; ``skip`` overlap skips while the last
run is live."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

import django_mqlite as mq
from django_mqlite.engine.clock import FrozenClock, to_ms
from django_mqlite.tasks.periodic import Ticker

pytestmark = pytest.mark.django_db(transaction=True)

START = dt.datetime(2025, 3, 29, 23, 0, tzinfo=dt.UTC)
ADD = "tests.workerproject.recorder.tasks.add"


def _ids(queue: str, prefix: str) -> list[str]:
    return [
        m.message_id or ""
        for m in mq.peek(queue, limit=1000)
        if (m.message_id or "").startswith(prefix)
    ]


def race(
    clock: FrozenClock,
    tickers: list[Ticker],
    steps: int,
    step_s: float = 60,
    between: Callable[[int], None] | None = None,
) -> list[int]:
    """Every ticker ticks in its own thread (own connection) at each step, all at the
    same clock time; ``between(step)`` runs while they wait. Returns their counts."""
    barrier = threading.Barrier(len(tickers) + 1)
    counts = [0] * len(tickers)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            for _ in range(steps):
                barrier.wait()
                counts[i] += tickers[i].tick()
                barrier.wait()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tickers))]
    for t in threads:
        t.start()
    for step in range(steps):
        barrier.wait()
        barrier.wait()
        if between is not None:
            between(step)
        clock.advance(step_s)
    for t in threads:
        t.join()
    assert not errors, errors
    return counts


def test_racing_tickers_enqueue_each_stored_occurrence_once() -> None:
    mq.create_queue("pings", dedup_window=0)  # no producer dedup to hide a duplicate
    mq.create_queue("tasks", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        mq.create_schedule("pings", cron="*/5 * * * *", queue="pings", body={"ping": 1})
        mq.create_schedule("sums", cron="*/15 * * * *", task=ADD, args=[1, 2])
        counts = race(clock, [Ticker(plan=[]) for _ in range(3)], steps=3 * 60)
    pings = _ids("pings", "periodic:pings:")
    assert len(pings) == len(set(pings)) == 3 * 12 - 1  # 23:05 ... 01:55; 23:00 is the baseline
    assert pings[0] == "periodic:pings:2025-03-29T23:05:00Z"
    sums = _ids("tasks", "periodic:sums:")
    assert len(sums) == len(set(sums)) == 3 * 4 - 1
    assert sum(counts) == len(pings) + len(sums)


def test_pause_stops_occurrences_and_resume_starts_from_the_next_fire_time() -> None:
    mq.create_queue("pings", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        mq.create_schedule("p", cron="*/5 * * * *", queue="pings")

        def operate(step: int) -> None:
            if step == 7:  # 23:07
                mq.pause_schedule("p")
            elif step == 32:  # 23:32: 23:10 ... 23:30 were missed
                mq.resume_schedule("p")

        race(clock, [Ticker(plan=[]) for _ in range(2)], steps=46, between=operate)
    times = [i[-9:-4] for i in _ids("pings", "periodic:p:")]
    assert times == ["23:05", "23:35", "23:40", "23:45"], times


def test_a_ticker_holding_a_copy_read_before_the_pause_enqueues_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mq.create_queue("pings", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        mq.create_schedule("p", cron="* * * * *", queue="pings")
        stale = mq.get_schedule("p")
        mq.pause_schedule("p")
        monkeypatch.setattr(Ticker, "_stored", lambda self: [stale])
        ticker = Ticker(plan=[])
        for _ in range(3):
            clock.advance(60)
            assert ticker.tick() == 0
    assert mq.peek("pings") == []


def test_a_change_runs_from_the_next_fire_time_of_the_new_definition() -> None:
    mq.create_queue("pings", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        mq.create_schedule("p", cron="0 * * * *", queue="pings")
        ticker = Ticker(plan=[])
        clock.advance(20 * 60)  # 23:20
        mq.update_schedule("p", cron="*/15 * * * *")  # 23:15 is past: not run
        assert ticker.tick() == 0
        clock.advance(10 * 60)  # 23:30
        assert ticker.tick() == 1
    assert _ids("pings", "periodic:p:") == ["periodic:p:2025-03-29T23:30:00Z"]


def test_jitter_delays_each_enqueue_by_its_stable_offset() -> None:
    mq.create_queue("pings", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        schedule = mq.create_schedule("j", cron="*/5 * * * *", queue="pings", jitter=240)
        ticker = Ticker(plan=[])
        race(clock, [ticker], steps=6 * 35 + 1, step_s=10)  # 35 minutes, 10 s apart
    got = mq.peek("pings", limit=100)
    assert len(got) >= 6  # 23:05 ... 23:30 at least
    offsets = []
    for m in got:
        when = dt.datetime.strptime((m.message_id or "")[-20:], "%Y-%m-%dT%H:%M:%SZ")
        fire = to_ms(when.replace(tzinfo=dt.UTC))
        offset = schedule.offset_ms(fire)
        assert 0 <= offset <= 240_000
        assert offset <= to_ms(m.enqueued_at) - fire < offset + 10_000
        offsets.append(offset)
    assert max(offsets) > 10_000 and len(set(offsets)) > 1  # spread, not all at once
    assert mq.get_schedule("j").offset_ms(fire) == offset  # the same offset on any host


def test_skip_overlap_skips_while_the_last_run_is_live() -> None:
    mq.create_queue("jobs", dedup_window=0)
    with mq.clock.frozen(START) as clock:
        mq.create_schedule("s", cron="* * * * *", queue="jobs", overlap="skip")
        ticker = Ticker(plan=[])
        clock.advance(60)
        assert ticker.tick() == 1
        (running,) = mq.receive("jobs", lock_duration=3600)  # the run is live (running)
        clock.advance(60)
        ticker.tick()
        assert mq.run_schedule("s") is False  # run now obeys the policy too
        assert [m.seq for m in mq.peek("jobs")] == [running.seq]
        running.complete()
        clock.advance(60)
        assert ticker.tick() == 1
        assert mq.run_schedule("s") is False  # the new run is waiting
    assert len(mq.peek("jobs")) == 1


def test_allow_overlap_and_run_now() -> None:
    mq.create_queue("jobs", dedup_window=0)
    mq.create_schedule("a", cron="0 0 1 1 *", queue="jobs", body="x")
    assert mq.run_schedule("a") is True
    assert mq.run_schedule("a") is True
    mq.pause_schedule("a")
    assert mq.run_schedule("a") is True  # run now works on a paused schedule
    assert [m.body for m in mq.peek("jobs")] == [b"x"] * 3


def test_a_stored_task_schedule_runs_signed(run_worker: Any) -> None:
    from tests.workerproject.recorder import tasks

    tasks.RAN.clear()
    remember = "tests.workerproject.recorder.tasks.remember"
    mq.create_schedule("r", cron="0 0 1 1 *", task=remember, args=["now"])
    assert mq.run_schedule("r") is True
    run_worker(queues=["tasks"])
    assert tasks.RAN == ["now"]


def test_a_failing_read_of_stored_schedules_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from django_mqlite.engine import schedules

    def broken(**kwargs: Any) -> list[Any]:
        raise RuntimeError("no such table: mqlite_schedule")

    monkeypatch.setattr(schedules, "stored_to_run", broken)
    ticker = Ticker(plan=[])
    for _ in range(3):
        assert ticker.tick() == 0
    assert caplog.text.count("reading the stored schedules failed") == 1


def _schedule_reads(ticker: Ticker) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        ticker.tick()
    return sum("FROM mqlite_schedule WHERE paused" in q["sql"] for q in queries)


def test_a_ticker_rereads_the_stored_schedules_when_they_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where changes are announced (NOTIFY on PostgreSQL) a ticker keeps what it read
    until it hears one, or ``STORED_REREAD_S`` passes; on SQLite it reads every tick."""
    from django.db import connection

    from django_mqlite.engine.dialects import dialect_for
    from django_mqlite.tasks import periodic

    announced = dialect_for(connection.alias).has_listen_notify
    ticker = Ticker()
    assert _schedule_reads(ticker) == 1
    assert _schedule_reads(ticker) == (0 if announced else 1)
    mq.create_schedule("nightly", cron="0 3 * * *", task=ADD, args=[1, 2])
    assert _schedule_reads(ticker) == 1  # the change was heard
    assert _schedule_reads(ticker) == (0 if announced else 1)
    mq.pause_schedule("nightly")
    assert _schedule_reads(ticker) == 1
    monkeypatch.setattr(periodic, "STORED_REREAD_S", 0.0)
    fresh = Ticker()
    assert _schedule_reads(fresh) == _schedule_reads(fresh) == 1  # the safety re-read
