"""Task subscriptions declared in ``MQLITE["TOPICS"]`` (``{queue: {"task": path, "filter":
...}}``): made by ``migrate`` through ``mq.subscribe_task``'s checks, beside the plain
form; refused by the system checks (E009 for a declaration that does not read, E011 for
a subscription of a Tasks queue ``migrate`` would refuse) before ``migrate`` runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

import django_mqlite as mq
from django_mqlite import checks
from django_mqlite.engine import topics
from django_mqlite.engine.declared_topics import sync_declared
from tests.support import task_subscriptions as ts

pytestmark = pytest.mark.django_db

QUEUES = {"tasks": {}, "audit": {}}


def declare(settings: Any, subscriptions: Any) -> None:
    settings.MQLITE = {
        **settings.MQLITE,
        "QUEUES": QUEUES,
        "TOPICS": {"orders": {"subscriptions": subscriptions}},
    }


def test_migrate_subscribes_a_declared_task(settings: Any) -> None:
    declare(
        settings,
        {
            "audit": {"filter": {"subject": "paid"}},  # the options form, without a task
            "tasks": {"task": ts.ON_EVENT, "filter": {"subject": "paid"}},
        },
    )
    assert checks.check_declared_topics() == []
    call_command("migrate", verbosity=0)
    topic = mq.get_topic("orders")
    assert [(s.queue, s.filter, s.task) for s in topic.subscriptions] == [
        ("audit", {"subject": "paid"}, None),
        ("tasks", {"subject": "paid"}, ts.ON_EVENT),
    ]
    call_command("migrate", verbosity=0)  # again: nothing changes
    assert mq.get_topic("orders") == topic
    assert mq.publish("orders", {"n": 1}, subject="paid") == 2
    (call,) = mq.peek("tasks")
    assert call.json()["task"] == ts.ON_EVENT and "signature" in call.json()


def test_the_plain_form_still_reads(settings: Any) -> None:
    declare(settings, {"audit": {"subject": "paid"}})
    assert checks.check_declared_topics() == []
    call_command("migrate", verbosity=0)
    assert [(s.queue, s.filter) for s in mq.get_topic("orders").subscriptions] == [
        ("audit", {"subject": "paid"})
    ]


@pytest.mark.parametrize(
    ("subscription", "why"),
    [
        pytest.param(None, "subscribe_task", id="plain-subscription-of-a-tasks-queue"),
        pytest.param({"filter": None}, "subscribe_task", id="options-without-task"),
        pytest.param({"task": "os.system"}, "not a task of this project", id="not-a-task"),
        pytest.param({"task": "no.such.task"}, "not a task of this project", id="unknown"),
        pytest.param({"task": ts.OUTSIDE_TASK}, "not a task of this project", id="outside-apps"),
        pytest.param(
            {"task": ts.OTHER_QUEUES_TASK}, "runs on queue 'tasks-other', not 'tasks'", id="queue"
        ),
    ],
)
def test_a_declared_subscription_of_a_tasks_queue_that_migrate_would_refuse(
    settings: Any, subscription: Any, why: str
) -> None:
    ts.forget_outside_module()
    declare(settings, {"tasks": subscription})
    (error,) = checks.check_declared_topics()
    assert error.id == "django_mqlite.E011"
    assert why in error.msg and "'tasks'" in error.msg
    assert error.hint and '"task"' in error.hint
    with pytest.raises(mq.InvalidArgumentError, match=why):
        sync_declared(settings.MQLITE["TOPICS"])
    assert not ts.outside_imported()
    assert mq.get_topic("orders").subscriptions == []  # the topic, without it


def test_a_declared_task_of_another_backend(settings: Any) -> None:
    declare(settings, {"tasks": {"task": ts.ON_EVENT}})
    with ts.tasks_on_another_backend():
        (error,) = checks.check_declared_topics()
        with pytest.raises(mq.InvalidArgumentError, match="no django-mqlite backend"):
            sync_declared(settings.MQLITE["TOPICS"])
    assert error.id == "django_mqlite.E011" and "no django-mqlite backend" in error.msg


def test_a_task_of_another_queue_than_declared(settings: Any) -> None:
    declare(settings, {"audit": {"task": ts.ON_EVENT}})
    (error,) = checks.check_declared_topics()
    assert error.id == "django_mqlite.E011"
    assert "runs on queue 'tasks', not 'audit'" in error.msg


@pytest.mark.parametrize(
    "declared",
    [
        pytest.param([], id="not-a-dict"),
        pytest.param({"orders": {"subscribers": {}}}, id="unknown-option"),
        pytest.param({"orders": {"subscriptions": ["tasks"]}}, id="subscriptions-not-a-dict"),
        pytest.param({"orders": {"subscriptions": {"audit": {"bad": 1}}}}, id="bad-filter"),
        pytest.param(
            {"orders": {"subscriptions": {"audit": {"filter": {"bad": 1}}}}}, id="bad-filter-2"
        ),
        pytest.param({"orders": {"subscriptions": {"tasks": {"task": 1}}}}, id="task-not-text"),
        pytest.param(
            {"orders": {"subscriptions": {"tasks": {"task": ts.ON_EVENT, "queue": "x"}}}},
            id="unknown-key",  # not options (a "queue" key), so read as a filter
        ),
    ],
)
def test_a_declaration_that_does_not_read(settings: Any, declared: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, "QUEUES": QUEUES, "TOPICS": declared}
    (error,) = checks.check_declared_topics()
    assert error.id == "django_mqlite.E009" and error.hint
    with pytest.raises(mq.InvalidArgumentError):
        sync_declared(declared)
    assert mq.list_topics() == []  # read whole before anything is made


def test_without_the_tasks_integration_a_declared_task_is_refused(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    declare(settings, {"tasks": {"task": ts.ON_EVENT}})
    call_command("migrate", verbosity=0)
    monkeypatch.setattr(topics, "task_delivery", None)
    with pytest.raises(mq.InvalidArgumentError, match="no Tasks integration"):
        sync_declared(settings.MQLITE["TOPICS"])
