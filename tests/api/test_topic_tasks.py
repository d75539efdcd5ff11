"""Task subscriptions over HTTP: ``PUT topics/{topic}/subscriptions/{queue}/`` with
``{"task": path}`` subscribes a Django task of that queue (``mq.subscribe_task``). Needs
``manage`` on the queue and the queue open to remote sends; the path resolves only to a
task of an installed app (nothing else imported), of this queue and a django-mqlite
backend; the listing shows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

import django_mqlite as mq
from tests.support import task_subscriptions as ts

from . import queue_perms
from .conftest import error, url

pytestmark = pytest.mark.django_db

ROUTE = url("topics/orders/subscriptions/tasks/")


@pytest.fixture
def topic() -> str:
    mq.create_topic("orders")
    for q in ("tasks", "audit"):
        mq.create_queue(q)
    mq.subscribe("orders", "audit")
    return "orders"


@pytest.fixture
def open_tasks(settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "OPEN_TASK_QUEUES": ["tasks"]}


def subscriptions() -> list[tuple[str, str | None]]:
    return [(s.queue, s.task) for s in mq.get_topic("orders").subscriptions]


def test_a_task_subscribes_and_is_listed(api: APIClient, topic: str, open_tasks: None) -> None:
    r = api.put(ROUTE, {"task": ts.ON_EVENT, "filter": {"subject": "paid"}}, format="json")
    assert r.status_code == 200, r.content
    assert (r.json()["queue"], r.json()["task"]) == ("tasks", ts.ON_EVENT)
    assert subscriptions() == [("audit", None), ("tasks", ts.ON_EVENT)]
    listed = api.get(url("topics/orders/")).json()["subscriptions"]
    assert [(s["queue"], s["task"], s["filter"]) for s in listed] == [
        ("audit", None, None),
        ("tasks", ts.ON_EVENT, {"subject": "paid"}),
    ]
    assert api.get(url("topics/")).json()["topics"][0]["subscriptions"] == listed
    assert mq.publish("orders", {"n": 1}, subject="paid") == 2
    (call,) = mq.peek("tasks")
    assert call.json()["task"] == ts.ON_EVENT and "signature" in call.json()


@pytest.mark.parametrize(
    ("task", "why"),
    [
        pytest.param("os.system", "not a task of this project", id="not-a-task"),
        pytest.param(ts.OUTSIDE_TASK, "not a task of this project", id="outside-apps"),
        pytest.param("no.such.module.task", "not a task of this project", id="unknown"),
        pytest.param(ts.OTHER_QUEUES_TASK, "runs on queue 'tasks-other', not 'tasks'", id="queue"),
    ],
)
def test_a_path_that_is_no_task_of_the_queue_is_a_400(
    api: APIClient, topic: str, open_tasks: None, task: str, why: str
) -> None:
    ts.forget_outside_module()
    error(api.put(ROUTE, {"task": task}, format="json"), 400, "invalid_argument")
    assert why in api.put(ROUTE, {"task": task}, format="json").json()["message"]
    assert not ts.outside_imported()  # looked at, never imported
    assert subscriptions() == [("audit", None)]


@pytest.fixture
def other_backend() -> Iterator[None]:
    with ts.tasks_on_another_backend():
        yield


def test_a_task_of_another_backend_is_a_400(
    api: APIClient, topic: str, open_tasks: None, other_backend: None
) -> None:
    r = api.put(ROUTE, {"task": ts.ON_EVENT}, format="json")
    error(r, 400, "invalid_argument")
    assert "no django-mqlite backend" in r.json()["message"]
    assert subscriptions() == [("audit", None)]


def test_a_task_of_another_queue_than_the_path_is_a_400(
    api: APIClient, topic: str, open_tasks: None
) -> None:
    r = api.put(url("topics/orders/subscriptions/audit/"), {"task": ts.ON_EVENT}, format="json")
    error(r, 400, "invalid_argument")
    assert "runs on queue 'tasks', not 'audit'" in r.json()["message"]
    assert subscriptions() == [("audit", None)]


def test_a_closed_tasks_queue_takes_no_task_subscription_over_http(
    api: APIClient, topic: str
) -> None:
    # Not in OPEN_TASK_QUEUES: the refusal comes before the path is looked at.
    for task in (ts.ON_EVENT, "os.system"):
        r = api.put(ROUTE, {"task": task}, format="json")
        error(r, 403, "permission_denied")
        assert "OPEN_TASK_QUEUES" in r.json()["message"]
    assert subscriptions() == [("audit", None)]


def test_a_plain_subscription_of_a_tasks_queue_is_still_refused(
    api: APIClient, topic: str, open_tasks: None
) -> None:
    for body in ({}, {"filter": None}, {"task": None}):
        r = api.put(ROUTE, body, format="json")
        error(r, 400, "invalid_argument")
        assert "subscribe_task" in r.json()["message"]
    assert subscriptions() == [("audit", None)]


def test_subscribing_a_task_needs_manage_on_its_queue(
    per_queue: APIClient, topic: str, open_tasks: None
) -> None:
    queue_perms.allow("send", "tasks")
    queue_perms.allow("view", "tasks")
    error(per_queue.put(ROUTE, {"task": ts.ON_EVENT}, format="json"), 403, "permission_denied")
    assert subscriptions() == [("audit", None)]
    queue_perms.allow("manage", "tasks")
    assert per_queue.put(ROUTE, {"task": ts.ON_EVENT}, format="json").status_code == 200
    assert subscriptions() == [("audit", None), ("tasks", ts.ON_EVENT)]


@pytest.mark.parametrize("bad", [1, ["a"], {"path": ts.ON_EVENT}, "", "x" * 201, "a\x00b"])
def test_a_task_field_that_is_no_string_is_a_400(
    api: APIClient, topic: str, open_tasks: None, bad: Any
) -> None:
    error(api.put(ROUTE, {"task": bad}, format="json"), 400, "invalid_argument")
    assert subscriptions() == [("audit", None)]
