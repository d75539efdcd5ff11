"""``manage.py mqlite topics|create-topic|delete-topic|subscribe|unsubscribe|publish``."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support import task_subscriptions as ts
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_topics_from_the_command_line() -> None:
    mq.create_queue("a")
    mq.create_queue("b")
    assert "no topics" in mqlite("topics")
    assert "created topic 'events'" in mqlite("create-topic", "events")
    mqlite("subscribe", "events", "a")
    mqlite("subscribe", "events", "b", "--filter", '{"subject": "paid"}')
    listed = mqlite("topics")
    assert "-> a: every message" in listed and '-> b: {"subject": "paid"}' in listed
    assert mqlite_json("publish", "events", "x", "--subject", "paid") == {"reached": 2}
    assert mqlite_json("publish", "events", "x", "--properties", '{"k": 1}') == {"reached": 1}
    assert [m.text() for m in mq.peek("b")] == ["x"]
    assert mqlite_json("unsubscribe", "events", "a") == {"unsubscribed": True}
    assert [s["queue"] for s in mqlite_json("topics")[0]["subscriptions"]] == ["b"]
    mqlite("delete-topic", "events")
    assert mq.list_topics() == []


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["publish", "nope", "x"], "does not exist"),
        (["subscribe", "events", "a", "--filter", "{bad"], "not JSON"),
        (["subscribe", "events", "a", "--filter", '{"x": 1}'], "filter"),
        (["create-topic", "events"], "exists"),
        (["publish", "events", "x", "--properties", "[1]"], "properties"),
    ],
)
def test_bad_input_is_a_command_error(args: list[str], match: str) -> None:
    mq.create_queue("a")
    mq.create_topic("events")
    with pytest.raises(CommandError, match=match):
        mqlite(*args)
    assert mq.get_topic("events").subscriptions == []


@pytest.fixture
def task_topic() -> str:
    mq.create_queue("tasks")
    mq.create_queue("a")
    mq.create_topic("events")
    return "events"


def test_a_task_subscribes_from_the_command_line(task_topic: str) -> None:
    sub = mqlite_json(
        "subscribe", "events", "tasks", "--task", ts.ON_EVENT, "--filter", '{"subject": "paid"}'
    )
    assert (sub["queue"], sub["task"], sub["filter"]) == ("tasks", ts.ON_EVENT, {"subject": "paid"})
    assert f'-> tasks: {{"subject": "paid"}}, as task {ts.ON_EVENT}' in mqlite("topics")
    assert mq.publish("events", {"n": 1}, subject="paid") == 1
    (call,) = mq.peek("tasks")
    assert call.json()["task"] == ts.ON_EVENT and "signature" in call.json()


SUBSCRIBE = ("subscribe", "events", "tasks", "--task")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["subscribe", "events", "tasks"], "subscribe_task"),
        ([*SUBSCRIBE, "os.system"], "not a task"),
        ([*SUBSCRIBE, ts.OUTSIDE_TASK], "not a task"),
        ([*SUBSCRIBE, "no.such.module.task"], "not a task"),
        ([*SUBSCRIBE, ts.OTHER_QUEUES_TASK], "runs on queue 'tasks-other', not 'tasks'"),
        (["subscribe", "events", "a", "--task", ts.ON_EVENT], "runs on queue 'tasks', not 'a'"),
        (["subscribe", "nope", "tasks", "--task", ts.ON_EVENT], "does not exist"),
        ([*SUBSCRIBE, ts.ON_EVENT, "--filter", "{}"], "filter"),
    ],
)
def test_bad_task_subscriptions_are_command_errors(
    task_topic: str, args: list[str], match: str
) -> None:
    ts.forget_outside_module()
    with pytest.raises(CommandError, match=match):
        mqlite(*args)
    assert not ts.outside_imported()
    assert mq.get_topic("events").subscriptions == []


def test_a_task_of_another_backend_is_a_command_error(task_topic: str) -> None:
    with (
        ts.tasks_on_another_backend(),
        pytest.raises(CommandError, match="no django-mqlite backend"),
    ):
        mqlite(*SUBSCRIBE, ts.ON_EVENT)
    assert mq.get_topic("events").subscriptions == []
