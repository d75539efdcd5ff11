"""A worker keeps the tasks it resolved and restored (the same few kinds arrive again
and again), and what it keeps never changes what a message runs: each message still
gets its own priority, queue and backend, a refused path is looked at afresh, and a
change of settings forgets everything."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.tasks import envelope
from tests.tasks.envelopes import signed
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "tests.workerproject.recorder.tasks.add"


def claim() -> Any:
    (msg,) = mq.receive("tasks", max_messages=1)
    return msg


@pytest.fixture(autouse=True)
def fresh() -> None:
    envelope.clear_caches()


def test_each_message_gets_its_own_priority_and_queue() -> None:
    tasks.add.using(priority=5).enqueue(1, 2)
    first, _, _, _ = envelope.load(claim())
    tasks.add.using(priority=7).enqueue(1, 2)
    second, _, _, _ = envelope.load(claim())
    tasks.add.using(priority=5).enqueue(3, 4)
    third, _, args, _ = envelope.load(claim())
    assert (first.priority, second.priority, third.priority) == (5, 7, 5)
    assert third is first  # the same kind is restored once
    assert args == [3, 4]  # while the arguments are each message's own
    assert first.queue_name == "tasks"


def test_a_refused_path_is_not_remembered() -> None:
    mq.create_queue("tasks")
    mq.send("tasks", signed("tests.workerproject.recorder.tasks.nope", []))
    with pytest.raises(envelope.InvalidTaskMessage):
        envelope.load(claim())
    assert "tests.workerproject.recorder.tasks.nope" not in envelope._resolved
    tasks.add.enqueue(1, 2)
    envelope.load(claim())
    assert ADD in envelope._resolved


def test_a_settings_change_forgets_the_tasks(settings: Any) -> None:
    tasks.add.enqueue(1, 2)
    envelope.load(claim())
    assert envelope._resolved and envelope._restored
    with override_settings(INSTALLED_APPS=settings.INSTALLED_APPS):
        assert not envelope._resolved and not envelope._restored


def test_a_task_with_run_after_is_restored_each_time() -> None:
    import datetime as dt

    when = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    tasks.add.using(run_after=when).enqueue(1, 2)
    task, _, _, _ = envelope.load(claim())
    assert task.run_after == when
    assert not envelope._restored
