"""Stored schedules' engine functions: create, change, pause, resume, delete, list, the
next fire times, and bad input (a typed error and nothing written)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.models import PeriodicSchedule
from django_mqlite.models import Schedule as StoredSchedule

pytestmark = pytest.mark.django_db

START = dt.datetime(2025, 1, 6, 7, 30, tzinfo=dt.UTC)  # a Monday, winter time in Paris
ADD = "tests.workerproject.recorder.tasks.add"


@pytest.fixture(autouse=True)
def _queue(db: None) -> None:
    mq.create_queue("pings")


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ({"cron": "61 * * * *", "queue": "pings"}, mq.InvalidArgumentError, "bad cron"),
        ({"cron": "* * *", "queue": "pings"}, mq.InvalidArgumentError, "5-field"),
        ({"cron": 5, "queue": "pings"}, mq.InvalidArgumentError, "5-field"),
        (
            {"cron": "* * * * *", "queue": "pings", "timezone": "Mars/Base"},
            mq.InvalidArgumentError,
            "unknown time zone",
        ),
        ({"cron": "* * * * *", "queue": "pings", "jitter": -1}, mq.InvalidArgumentError, "jitter"),
        ({"cron": "* * * * *", "queue": "pings", "jitter": 1.5}, mq.InvalidArgumentError, "jitter"),
        (
            {"cron": "* * * * *", "queue": "pings", "overlap": "queue"},
            mq.InvalidArgumentError,
            "overlap",
        ),
        ({"cron": "* * * * *", "task": "no.such.task"}, mq.InvalidArgumentError, "unknown task"),
        ({"cron": "* * * * *", "task": "django_mqlite.send"}, mq.InvalidArgumentError, "not a"),
        ({"cron": "* * * * *"}, mq.InvalidArgumentError, "either"),
        ({"cron": "* * * * *", "task": ADD, "queue": "pings"}, mq.InvalidArgumentError, "either"),
        ({"cron": "* * * * *", "queue": "nowhere"}, mq.QueueNotFoundError, "nowhere"),
        ({"cron": "* * * * *", "queue": "tasks"}, mq.InvalidArgumentError, "Tasks queue"),
        ({"cron": "* * * * *", "queue": "pings", "body": {1j}}, mq.InvalidArgumentError, "JSON"),
        ({"cron": "* * * * *", "task": ADD, "args": {"a": 1}}, mq.InvalidArgumentError, "args"),
        ({"cron": "* * * * *", "queue": "pings", "colour": 1}, mq.InvalidArgumentError, "colour"),
    ],
)
def test_bad_input_is_a_typed_error_and_writes_nothing(
    spec: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        mq.create_schedule("s", **spec)
    assert not StoredSchedule.objects.exists() and not PeriodicSchedule.objects.exists()


def test_bad_names_and_taken_names() -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_schedule("a b", cron="* * * * *", queue="pings")
    mq.create_schedule("s", cron="* * * * *", queue="pings")
    with pytest.raises(mq.ScheduleExistsError):
        mq.create_schedule("s", cron="0 * * * *", queue="pings")
    declared = {"d": {"cron": "* * * * *", "queue": "pings"}}
    with override_settings(MQLITE={"PERIODIC": declared}):
        with pytest.raises(mq.ScheduleExistsError, match="declared"):
            mq.create_schedule("d", cron="* * * * *", queue="pings")
        with pytest.raises(mq.InvalidArgumentError, match="declared"):
            mq.run_schedule("d")
        assert [(s.name, s.stored) for s in mq.list_schedules()] == [("d", False), ("s", True)]
    assert mq.get_schedule("s").cron == "* * * * *"  # the refused create changed nothing


def test_a_bad_change_changes_nothing() -> None:
    mq.create_schedule("s", cron="* * * * *", queue="pings", jitter=5)
    before = StoredSchedule.objects.get(name="s")
    cursor = PeriodicSchedule.objects.get(name="s").last_at
    for change in ({"cron": "nope"}, {"jitter": -3}, {"timezone": "X/Y"}, {"overlap": "no"}):
        with pytest.raises(mq.InvalidArgumentError):
            mq.update_schedule("s", **change)
    after = StoredSchedule.objects.get(name="s")
    assert (after.cron, after.jitter_s, after.version) == (before.cron, 5, before.version)
    assert PeriodicSchedule.objects.get(name="s").last_at == cursor


def test_unknown_names() -> None:
    for verb in (mq.pause_schedule, mq.resume_schedule, mq.delete_schedule, mq.run_schedule):
        with pytest.raises(mq.ScheduleNotFoundError):
            verb("ghost")
    with pytest.raises(mq.ScheduleNotFoundError):
        mq.next_fire_times("ghost")


def test_next_fire_times_in_the_schedules_time_zone() -> None:
    with mq.clock.frozen(START):
        mq.create_schedule("s", cron="0 9 * * 1-5", queue="pings", timezone="Europe/Paris")
        times = mq.next_fire_times("s")
    assert len(times) == 10
    assert times[0].at == dt.datetime(2025, 1, 6, 8, 0, tzinfo=dt.UTC)  # 09:00 in Paris
    assert times[5].at == dt.datetime(2025, 1, 13, 8, 0, tzinfo=dt.UTC)  # the weekend skipped
    assert all(t.enqueue_at == t.at for t in times)  # no jitter
    with pytest.raises(mq.InvalidArgumentError):
        mq.next_fire_times("s", 0)


def test_next_fire_times_show_the_jittered_enqueue() -> None:
    with mq.clock.frozen(START):
        mq.create_schedule("s", cron="*/5 * * * *", queue="pings", jitter=60)
        times = mq.next_fire_times("s", 20)
    gaps = [(t.enqueue_at - t.at).total_seconds() for t in times]
    assert all(0 <= g <= 60 for g in gaps) and len(set(gaps)) > 1


def test_pause_and_resume_move_the_cursor() -> None:
    with mq.clock.frozen(START) as clock:
        made = mq.create_schedule("s", cron="*/5 * * * *", queue="pings")
        assert PeriodicSchedule.objects.get(name="s").last_at == mq.clock.to_ms(START)
        paused = mq.pause_schedule("s")
        assert paused.paused and paused.version > made.version
        assert not PeriodicSchedule.objects.filter(name="s").exists()
        assert mq.pause_schedule("s").paused  # idempotent
        clock.advance(17 * 60)
        resumed = mq.resume_schedule("s")
        assert not resumed.paused
        # From the next fire time: 07:45 (missed while paused) is the baseline, not a run.
        last = PeriodicSchedule.objects.get(name="s").last_at
        assert last == mq.clock.to_ms(START + dt.timedelta(minutes=15))
    mq.delete_schedule("s")
    assert not PeriodicSchedule.objects.filter(name="s").exists()
    assert mq.list_schedules() == []
