"""The Schedules page: create and change through the engine (its refusals are form
errors, nothing written), pause, resume and run now under ``operate_schedule``, the next
10 fire times on a schedule's page, settings-declared schedules listed read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings

import django_mqlite as mq
from django_mqlite.models import PeriodicSchedule, Schedule

from .conftest import action_post

pytestmark = pytest.mark.django_db

PAGE = "/admin/django_mqlite/schedule/"
FORM = {
    "name": "nightly",
    "cron": "0 3 * * *",
    "timezone": "Europe/Paris",
    "task": "",
    "args": "[]",
    "kwargs": "{}",
    "queue": "pings",
    "body": '{"ping": true}',
    "overlap": "skip",
    "jitter_s": "30",
}
EDIT = ("add_schedule", "change_schedule", "view_schedule", "delete_schedule")


@pytest.fixture(autouse=True)
def _queue(db: None) -> None:
    mq.create_queue("pings")


def _pk(name: str) -> int:
    return int(Schedule.objects.get(name=name).pk)


def test_create_through_the_engine_and_see_the_next_fire_times(staff_client: Any) -> None:
    client = staff_client(*EDIT)
    r = client.post(f"{PAGE}add/", FORM)
    assert r.status_code == 302, r.content.decode()[:2000]
    made = mq.get_schedule("nightly")
    assert (made.tz.key, made.overlap, made.jitter_s, made.body) == (
        "Europe/Paris",
        "skip",
        30,
        {"ping": True},
    )
    assert PeriodicSchedule.objects.filter(name="nightly").exists()  # the engine's cursor
    page = client.get(f"{PAGE}{_pk('nightly')}/change/").content.decode()
    assert "Next 10 fire times" in page
    for t in mq.next_fire_times("nightly"):
        assert t.at.strftime("%Y-%m-%d %H:%M:%S") in page


def test_a_change_goes_through_the_engine(staff_client: Any) -> None:
    mq.create_schedule("nightly", cron="0 3 * * *", queue="pings")
    version = Schedule.objects.get(name="nightly").version
    client = staff_client(*EDIT)
    r = client.post(f"{PAGE}{_pk('nightly')}/change/", {**FORM, "cron": "0 4 * * *"})
    assert r.status_code == 302
    row = Schedule.objects.get(name="nightly")
    assert (row.cron, row.version) == ("0 4 * * *", version + 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cron": "99 * * * *"}, "bad cron"),
        ({"timezone": "Mars/Base"}, "unknown time zone"),
        ({"jitter_s": "-5"}, "jitter"),
        ({"overlap": "sometimes"}, "sometimes"),
        ({"queue": "", "task": "no.such.task"}, "unknown task path"),
        ({"queue": "nowhere"}, "nowhere"),
    ],
)
def test_bad_input_is_a_form_error_and_writes_nothing(
    staff_client: Any, change: dict[str, str], message: str
) -> None:
    r = staff_client(*EDIT).post(f"{PAGE}add/", {**FORM, **change})
    assert r.status_code == 200 and message in r.content.decode()
    assert not Schedule.objects.exists() and not PeriodicSchedule.objects.exists()


def test_pause_resume_and_run_now_need_operate_schedule(staff_client: Any) -> None:
    mq.create_schedule("a", cron="0 0 1 1 *", queue="pings")
    mq.create_schedule("b", cron="0 0 1 1 *", queue="pings", overlap="skip")
    both = [_pk("a"), _pk("b")]
    viewer = staff_client("view_schedule")
    html = viewer.get(PAGE).content.decode()
    assert 'value="pause_schedules"' not in html
    viewer.post(PAGE, action_post("pause_schedules", both))
    viewer.post(PAGE, action_post("run_schedules", both))
    assert not mq.get_schedule("a").paused and mq.peek("pings") == []

    operator = staff_client("view_schedule", "operate_schedule")
    html = operator.get(PAGE).content.decode()
    assert all(f'value="{a}"' in html for a in ("pause_schedules", "resume_schedules"))
    r = operator.post(PAGE, action_post("pause_schedules", both), follow=True)
    assert "2 schedules paused." in r.content.decode()
    assert mq.get_schedule("a").paused and mq.get_schedule("b").paused
    r = operator.post(PAGE, action_post("resume_schedules", [_pk("a")]), follow=True)
    assert "1 schedule resumed." in r.content.decode() and not mq.get_schedule("a").paused
    r = operator.post(PAGE, action_post("run_schedules", both), follow=True)
    assert "2 schedules run." in r.content.decode()
    r = operator.post(PAGE, action_post("run_schedules", both), follow=True)
    text = r.content.decode()
    assert "1 schedule run." in text and "still live (overlap: skip): b" in text
    assert len(mq.peek("pings")) == 3


def test_without_change_permission_the_form_is_read_only(staff_client: Any) -> None:
    mq.create_schedule("a", cron="0 0 1 1 *", queue="pings")
    viewer = staff_client("view_schedule")
    r = viewer.post(f"{PAGE}{_pk('a')}/change/", {**FORM, "name": "a", "cron": "0 5 * * *"})
    assert r.status_code == 403
    assert viewer.post(f"{PAGE}add/", FORM).status_code == 403
    assert mq.get_schedule("a").cron == "0 0 1 1 *"


def test_delete_goes_through_the_engine(staff_client: Any) -> None:
    mq.create_schedule("a", cron="0 0 1 1 *", queue="pings")
    r = staff_client(*EDIT).post(f"{PAGE}{_pk('a')}/delete/", {"post": "yes"})
    assert r.status_code == 302
    assert not Schedule.objects.exists() and not PeriodicSchedule.objects.exists()


def test_declared_schedules_are_listed_read_only(admin_client: Client) -> None:
    declared = {"from-settings": {"cron": "*/5 * * * *", "queue": "pings"}}
    with override_settings(MQLITE={"PERIODIC": declared}):
        html = admin_client.get(PAGE).content.decode()
    assert "Declared in settings" in html and "from-settings" in html
    assert not Schedule.objects.exists()
