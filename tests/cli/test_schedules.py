"""``manage.py mqlite schedules``: list (stored and declared), pause, resume, run now,
next fire times; unknown names and bad verbs are CommandErrors that change nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management.base import CommandError
from django.test import override_settings

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _queue(db: None) -> None:
    mq.create_queue("pings")


def test_list_pause_resume_run_and_next() -> None:
    assert "no schedules" in mqlite("schedules")
    mq.create_schedule("nightly", cron="0 3 * * *", queue="pings", jitter=5)
    declared = {"beat": {"cron": "*/5 * * * *", "queue": "pings"}}
    with override_settings(MQLITE={"PERIODIC": declared}):
        listed = mqlite_json("schedules", "list")
        assert [(r["name"], r["source"]) for r in listed] == [
            ("beat", "settings"),
            ("nightly", "database"),
        ]
        assert "nightly  [database]  active  0 3 * * * (" in mqlite("schedules")
        with pytest.raises(CommandError, match="declared"):
            mqlite("schedules", "run", "beat")
    assert "paused schedule 'nightly'" in mqlite("schedules", "pause", "nightly")
    assert mq.get_schedule("nightly").paused
    assert mqlite_json("schedules", "resume", "nightly")["paused"] is False
    assert "enqueued a run of schedule 'nightly'" in mqlite("schedules", "run", "nightly")
    assert len(mq.peek("pings")) == 1
    with mq.clock.frozen(dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)):
        times = mqlite_json("schedules", "next", "nightly", "--count", "3")
    assert len(times) == 3 and times[0]["at"].startswith("2025-01-02T")


def test_skip_overlap_run_reports_the_skip() -> None:
    mq.create_schedule("s", cron="0 0 1 1 *", queue="pings", overlap="skip")
    assert mqlite_json("schedules", "run", "s")["enqueued"] is True
    assert "skipped" in mqlite("schedules", "run", "s")
    assert len(mq.peek("pings")) == 1


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["schedules", "pause", "ghost"], "no stored schedule"),
        (["schedules", "resume", "ghost"], "no stored schedule"),
        (["schedules", "run", "ghost"], "no stored schedule"),
        (["schedules", "pause"], "needs the NAME"),
        (["schedules", "next", "ghost"], "no stored schedule"),
        (["schedules", "list", "x"], "no NAME"),
        (["schedules", "next", "x y"], "invalid schedule name"),
    ],
)
def test_bad_arguments_are_command_errors(args: list[str], match: str) -> None:
    with pytest.raises(CommandError, match=match):
        mqlite(*args)
