"""Bad input gets a clear error and writes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.backends import MQLiteBackend
from django_mqlite.checks import check_periodic
from django_mqlite.tasks.compat import InvalidTaskError, TaskResultDoesNotExist
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_non_json_arguments_write_nothing() -> None:
    tasks.add.enqueue(0, 0)
    with pytest.raises(TypeError, match="JSON-serializable"):
        tasks.add.enqueue(object(), 1)
    with pytest.raises(TypeError, match="JSON"):
        tasks.add.enqueue(float("nan"), 1)
    with pytest.raises(TypeError, match="JSON-serializable"):
        tasks.add.enqueue(a=dt.datetime.now(dt.UTC), b=1)
    assert mq.stats("tasks").totals["enqueued"] == 1


@pytest.mark.parametrize("bad", ["", "abc", "-1", "0", "1.5", " 1", "9" * 30, "١٢"])
def test_malformed_ids(bad: str) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(bad)


def test_unknown_id_and_plain_messages_are_not_tasks() -> None:
    mq.create_queue("tasks")
    seq = mq.send("tasks", {"not": "a task"})
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(str(seq))
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(str(seq + 1000))


def test_bad_task_policy() -> None:
    with pytest.raises(InvalidTaskError, match="max_attempts"):
        tasks.add.get_backend().task_class(func=tasks.add.func, queue_name="tasks", max_attempts=0)
    with pytest.raises(InvalidTaskError, match="timeout"):
        tasks.add.get_backend().task_class(func=tasks.add.func, queue_name="tasks", timeout=-1)
    with pytest.raises(InvalidTaskError, match="not valid"):
        tasks.add.using(queue_name="elsewhere")


def test_bad_options() -> None:
    with pytest.raises(ImproperlyConfigured, match="unknown option"):
        MQLiteBackend("x", {"OPTIONS": {"retries": 3}})
    with pytest.raises(ImproperlyConfigured, match="max_attempts"):
        MQLiteBackend("x", {"OPTIONS": {"max_attempts": "3"}})


@pytest.mark.parametrize(
    "spec",
    [
        {"cron": "* * * *", "queue": "q"},
        {"cron": "61 * * * *", "queue": "q"},
        {"cron": "* * * * *", "queue": "q", "timezone": "Mars/Olympus"},
        {"cron": "* * * * *"},
        {"cron": "* * * * *", "queue": "q", "task": "x.y"},
        {"cron": "* * * * *", "queue": "q", "catchup": "never"},
        {"cron": "* * * * *", "queue": "q", "every": 5},
    ],
)
def test_bad_schedules_fail_the_check(spec: dict[str, Any]) -> None:
    with override_settings(MQLITE={"PERIODIC": {"s": spec}}):
        [error] = check_periodic()
    assert error.id == "django_mqlite.E004"
