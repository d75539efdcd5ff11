"""A message on a Tasks queue runs code only when it is a valid envelope of a task that
belongs to that queue; anything else is dead-lettered at once, with a reason, and the
worker lives on. Declared task queues keep results."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.worker import Worker
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "tests.workerproject.recorder.tasks.add"


def envelope(task: str = ADD, **extra: Any) -> dict[str, Any]:
    return {"task": task, "args": [1, 2], "kwargs": {}, "backend": "default", **extra}


BAD = [
    pytest.param(b"not json", None, id="not-json"),
    pytest.param(b'{"task": NaN}', None, id="nan"),
    pytest.param(json.dumps([ADD]).encode(), None, id="not-an-object"),
    pytest.param(envelope(args={"a": 1}), None, id="args-not-a-list"),
    pytest.param(envelope(kwargs=[1]), None, id="kwargs-not-an-object"),
    pytest.param(envelope(task="os.system"), None, id="not-a-task"),
    pytest.param(envelope(task="antigravity.fly"), None, id="module-outside-apps"),
    pytest.param(envelope(task="tests.workerproject.recorder.tasks.nope"), None, id="unknown"),
    pytest.param(envelope(backend="elsewhere"), None, id="unknown-backend"),
    pytest.param(envelope(extra=1), None, id="unknown-field"),
    pytest.param(envelope(), {"timeout": 10**400}, id="huge-timeout"),
    pytest.param(envelope(), {"timeout": -1}, id="negative-timeout"),
    pytest.param(envelope(), {"timeout": "5"}, id="string-timeout"),
]


@pytest.mark.parametrize(("body", "properties"), BAD)
def test_invalid_envelopes_are_dead_lettered_at_once(
    run_worker: Callable[..., Worker], body: Any, properties: Any
) -> None:
    mq.create_queue("tasks", max_delivery_count=5)
    seq = mq.send("tasks", body, properties=properties)
    run_worker(queues=["tasks"])
    (peeked,) = mq.peek("tasks")
    assert peeked.seq == seq
    assert peeked.state == "dead_lettered"
    assert peeked.dead_letter_reason == "InvalidTaskMessage"
    assert peeked.dead_letter_description
    assert peeked.delivery_count == 1  # no retries


def test_a_huge_timeout_does_not_kill_runworker() -> None:
    mq.create_queue("tasks")
    mq.send("tasks", envelope(), properties={"timeout": 10**400})
    call_command("runworker", "--queue", "tasks", "--burst")
    assert mq.stats("tasks").counts["dead_lettered"] == 1


def test_a_task_of_another_queue_does_not_run_on_an_open_queue(
    run_worker: Callable[..., Worker],
) -> None:
    """``tasks-other`` accepts remote sends: only its own tasks run there."""
    mq.create_queue("tasks-other")
    seq = mq.send("tasks-other", envelope())
    with override_settings(MQLITE={"OPEN_TASK_QUEUES": ["tasks-other"]}):
        run_worker(queues=["tasks-other"])
    (peeked,) = mq.peek("tasks-other")
    assert (peeked.seq, peeked.state) == (seq, "dead_lettered")
    assert "belongs to queue 'tasks'" in (peeked.dead_letter_description or "")


def test_own_tasks_and_project_code_still_run(run_worker: Callable[..., Worker]) -> None:
    result = tasks.add.enqueue(2, 3)
    moved = tasks.add.using(queue_name="tasks-other").enqueue(4, 5)
    run_worker()
    assert tasks.add.get_result(result.id).return_value == 5
    assert tasks.add.get_result(moved.id).return_value == 9


def test_declared_task_queues_keep_results_by_default(run_worker: Callable[..., Worker]) -> None:
    with override_settings(MQLITE={"QUEUES": {"tasks": {"max_delivery_count": 3}}}):
        call_command("migrate", "django_mqlite", verbosity=0)
        assert mq.get_queue("tasks").keep_results == 7 * 86400
        result = tasks.add.enqueue(1, 1)
        run_worker(queues=["tasks"])
    assert tasks.add.get_result(result.id).return_value == 2


def test_a_declaration_may_still_say_otherwise() -> None:
    with override_settings(MQLITE={"QUEUES": {"tasks": {"keep_results": None}}}):
        call_command("migrate", "django_mqlite", verbosity=0)
    assert mq.get_queue("tasks").keep_results is None
