"""Topic routes: manage topics and subscriptions, publish; per-queue permissions (publish
needs send on every subscribed queue, subscribe needs manage on the queue), Tasks queues
refused, stable error codes, nothing written on a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

import django_mqlite as mq

from . import queue_perms
from .conftest import error, url

pytestmark = pytest.mark.django_db


def live(*queues: str) -> int:
    return sum(len(mq.peek(q)) for q in queues)


@pytest.fixture
def topic() -> str:
    mq.create_topic("orders")
    for q in ("billing", "audit"):
        mq.create_queue(q)
    mq.subscribe("orders", "billing", {"subject": "paid"})
    mq.subscribe("orders", "audit")
    return "orders"


def test_create_list_get_delete(api: APIClient) -> None:
    r = api.post(url("topics/"), {"name": "t1"}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["name"] == "t1" and r.json()["subscriptions"] == []
    error(api.post(url("topics/"), {"name": "t1"}, format="json"), 409, "already_exists")
    error(api.post(url("topics/"), {"name": "bad name"}, format="json"), 400, "invalid_argument")
    mq.create_queue("q1")
    r = api.put(url("topics/t1/subscriptions/q1/"), {"filter": {"subject": "x"}}, format="json")
    assert r.status_code == 200, r.content
    assert (r.json()["queue"], r.json()["filter"]) == ("q1", {"subject": "x"})
    got = api.get(url("topics/t1/")).json()
    assert [s["queue"] for s in got["subscriptions"]] == ["q1"]
    assert [t["name"] for t in api.get(url("topics/")).json()["topics"]] == ["t1"]
    assert api.delete(url("topics/t1/subscriptions/q1/")).status_code == 204
    error(api.delete(url("topics/t1/subscriptions/q1/")), 404, "not_found")
    assert api.delete(url("topics/t1/")).status_code == 204
    error(api.get(url("topics/t1/")), 404, "not_found")


def test_publish(api: APIClient, topic: str) -> None:
    r = api.post(
        url("topics/orders/publish/"), {"body": {"n": 1}, "subject": "paid"}, format="json"
    )
    assert r.status_code == 201, r.content
    assert r.json() == {"reached": 2}
    r = api.post(url("topics/orders/publish/"), {"body_base64": "AAE="}, format="json")
    assert r.json() == {"reached": 1}
    assert [m.body for m in mq.peek("audit")] == [b'{"n":1}', b"\x00\x01"]
    assert [m.subject for m in mq.peek("billing")] == ["paid"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "topics/nope/publish/", {"body": 1}),
        ("get", "topics/nope/", None),
        ("delete", "topics/nope/", None),
        ("put", "topics/nope/subscriptions/audit/", {}),
        ("delete", "topics/nope/subscriptions/audit/", None),
    ],
)
def test_unknown_topic_is_a_404(
    api: APIClient, topic: str, method: str, path: str, body: Any
) -> None:
    error(getattr(api, method)(url(path), body, format="json"), 404, "not_found")


@pytest.mark.parametrize(
    "bad",
    [{"subject": 1}, {"properties.x": {"near": 1}}, {}, [1], "x", {"any": []}, {"nope": 1}],
)
def test_a_bad_filter_is_a_400_and_writes_nothing(api: APIClient, topic: str, bad: Any) -> None:
    before = mq.get_topic("orders")
    r = api.put(url("topics/orders/subscriptions/billing/"), {"filter": bad}, format="json")
    error(r, 400, "invalid_argument")
    assert mq.get_topic("orders") == before


def test_bad_messages_and_unknown_queues(api: APIClient, topic: str) -> None:
    error(api.put(url("topics/orders/subscriptions/ghost/"), {}, format="json"), 404, "not_found")
    r = api.post(url("topics/orders/publish/"), {"body": 1, "subject": "a\x00"}, format="json")
    error(r, 400, "invalid_argument")
    r = api.post(url("topics/orders/publish/"), {"body": 1, "bogus": 2}, format="json")
    error(r, 400, "invalid_argument")
    assert live("billing", "audit") == 0


def test_publish_needs_send_on_every_subscribed_queue(per_queue: APIClient, topic: str) -> None:
    queue_perms.allow("send", "audit")
    r = per_queue.post(url("topics/orders/publish/"), {"body": 1, "subject": "x"}, format="json")
    error(r, 403, "permission_denied")
    assert "billing" in r.json()["message"]
    assert live("billing", "audit") == 0  # not even the permitted queue got a copy
    queue_perms.allow("send", "billing")
    r = per_queue.post(url("topics/orders/publish/"), {"body": 1}, format="json")
    assert r.status_code == 201 and r.json() == {"reached": 1}


def test_a_subscription_made_during_the_publish_is_checked_too(
    per_queue: APIClient, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue_perms.allow("send", "audit", "billing")
    mq.create_queue("secret")
    publish = mq.publish

    def racing(name: str, body: Any, **options: Any) -> int:
        mq.subscribe(name, "secret")  # as if another request committed it just now
        return publish(name, body, **options)

    monkeypatch.setattr(mq, "publish", racing)
    r = per_queue.post(url("topics/orders/publish/"), {"body": 1}, format="json")
    error(r, 403, "permission_denied")
    assert live("billing", "audit", "secret") == 0


def test_subscribing_needs_manage_on_the_queue(per_queue: APIClient, topic: str) -> None:
    queue_perms.allow("manage", "audit")
    queue_perms.allow("view", "audit")
    mq.create_queue("other")
    ok = per_queue.put(url("topics/orders/subscriptions/audit/"), {"filter": None}, format="json")
    assert ok.status_code == 200, ok.content
    r = per_queue.put(url("topics/orders/subscriptions/other/"), {}, format="json")
    error(r, 403, "permission_denied")
    error(per_queue.delete(url("topics/orders/subscriptions/billing/")), 403, "permission_denied")
    # Topics span queues: creating and deleting one is manage on every queue.
    error(per_queue.post(url("topics/"), {"name": "mine"}, format="json"), 403, "permission_denied")
    error(per_queue.delete(url("topics/orders/")), 403, "permission_denied")
    # Reading shows the subscriptions of queues the caller may read, only.
    got = per_queue.get(url("topics/orders/")).json()
    assert [s["queue"] for s in got["subscriptions"]] == ["audit"]
    assert [s.queue for s in mq.get_topic("orders").subscriptions] == ["billing", "audit"]


def test_a_topic_the_caller_cannot_see(per_queue: APIClient, topic: str) -> None:
    error(per_queue.get(url("topics/orders/")), 403, "permission_denied")
    assert per_queue.get(url("topics/")).json() == {"topics": []}


def test_nobody_and_anonymous(nobody: APIClient, anon: APIClient, topic: str) -> None:
    error(
        nobody.post(url("topics/orders/publish/"), {"body": 1}, format="json"),
        403,
        "permission_denied",
    )
    error(nobody.post(url("topics/"), {"name": "x"}, format="json"), 403, "permission_denied")
    assert nobody.get(url("topics/")).json() == {"topics": []}
    r = anon.post(url("topics/orders/publish/"), {"body": 1}, format="json")
    assert r.status_code in (401, 403)
    assert live("billing", "audit") == 0


def test_a_topic_feeding_a_tasks_queue_is_not_published_over_http(
    api: APIClient, topic: str
) -> None:
    from tests.workerproject.recorder import tasks

    mq.create_queue("tasks")
    mq.subscribe_task("orders", tasks.on_event)
    r = api.post(url("topics/orders/publish/"), {"body": {"task": "os.system"}}, format="json")
    error(r, 403, "permission_denied")
    assert "runs Django tasks" in r.json()["message"]
    assert live("billing", "audit", "tasks") == 0
    # Open to remote sends, the task subscription takes the publish as a signed call.
    with override_settings(MQLITE={"OPEN_TASK_QUEUES": ["tasks"]}):
        r = api.post(url("topics/orders/publish/"), {"body": {"n": 1}}, format="json")
    assert r.status_code == 201 and r.json() == {"reached": 2}, r.content
    (call,) = mq.peek("tasks")
    assert call.json()["args"] == [
        {"topic": "orders", "subject": None, "properties": None, "body": {"n": 1}}
    ]
    assert "signature" in call.json()
