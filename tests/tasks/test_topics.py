"""Tasks subscribe to topics: a publish enqueues a signed call of the task with the
event (``mq.subscribe_task``); a plain subscription of a Tasks queue is refused, and a
copy that reaches a Tasks queue anyway is dead-lettered, never run."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

import django_mqlite as mq
from tests.support.task_subscriptions import tasks_on_another_backend
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def topic() -> str:
    mq.create_topic("orders")
    mq.create_queue("tasks")
    mq.create_queue("audit")
    mq.subscribe("orders", "audit")
    return "orders"


def test_a_task_subscription_runs_the_task_with_the_event(topic: str, run_worker: Any) -> None:
    tasks.RAN.clear()
    sub = mq.subscribe_task(topic, tasks.on_event, {"subject": "paid"})
    assert (sub.queue, sub.task) == ("tasks", "tests.workerproject.recorder.tasks.on_event")
    assert [s.task for s in mq.get_topic(topic).subscriptions] == [None, sub.task]
    assert mq.publish(topic, {"order": 7}, subject="paid", properties={"n": 1}) == 2
    assert mq.publish(topic, b'{"order": 8}', subject="paid", content_type="application/json") == 2
    assert mq.publish(topic, "text", subject="paid") == 2
    assert mq.publish(topic, {"order": 9}, subject="other") == 1  # the filter holds
    (m, *_) = mq.peek("tasks")
    assert m.subject is not None and m.subject.endswith("recorder.tasks.on_event")
    run_worker(queues=["tasks"])
    assert tasks.RAN == [
        {"topic": "orders", "subject": "paid", "properties": {"n": 1}, "body": {"order": 7}},
        {"topic": "orders", "subject": "paid", "properties": None, "body": {"order": 8}},
        {"topic": "orders", "subject": "paid", "properties": None, "body": "text"},
    ]
    assert all(p.state == "completed" for p in mq.peek("tasks", limit=10))
    assert mq.topic_totals()["orders"] == {"published": 4, "delivered": {"audit": 4, "tasks": 3}}


def test_a_plain_subscription_of_a_tasks_queue_is_refused(topic: str) -> None:
    with pytest.raises(mq.InvalidArgumentError, match="subscribe_task"):
        mq.subscribe(topic, "tasks")
    assert [s.queue for s in mq.get_topic(topic).subscriptions] == ["audit"]


def test_bad_task_subscriptions(topic: str) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.subscribe_task(topic, "os.system")
    with pytest.raises(mq.InvalidArgumentError):
        mq.subscribe_task(topic, tasks.on_event, {"subject": 1})
    with pytest.raises(mq.TopicNotFoundError):
        mq.subscribe_task("nope", tasks.on_event)
    with pytest.raises(mq.InvalidArgumentError, match="runs on queue 'tasks', not 'audit'"):
        mq.subscribe_task(topic, tasks.on_event, queue="audit")
    with tasks_on_another_backend(), pytest.raises(mq.InvalidArgumentError, match="backend"):
        mq.subscribe_task(topic, tasks.on_event)
    assert [s.queue for s in mq.get_topic(topic).subscriptions] == ["audit"]


def test_a_binary_body_fails_the_whole_publish(topic: str) -> None:
    mq.subscribe_task(topic, tasks.on_event)
    with pytest.raises(mq.InvalidArgumentError, match="binary"):
        mq.publish(topic, b"\x00\xff")
    assert mq.peek("audit") == [] and mq.peek("tasks") == []
    with transaction.atomic():
        mq.publish(topic, {"x": 1})
        transaction.set_rollback(True)
    assert mq.peek("audit") == [] and mq.peek("tasks") == []  # the outbox holds for tasks


def test_a_copy_that_reaches_a_tasks_queue_anyway_is_never_run(topic: str, run_worker: Any) -> None:
    # A subscription stored behind the engine's back (a raw SQL insert, an old row).
    with connection.cursor() as c:
        c.execute(
            "INSERT INTO mqlite_subscription (topic_id, queue_id, filter, created_at, task) "
            "SELECT t.id, q.id, NULL, 0, NULL FROM mqlite_topic t, mqlite_queue q "
            "WHERE t.name = 'orders' AND q.name = 'tasks'"
        )
        c.execute("UPDATE mqlite_topic SET version = version + 1")
    tasks.RAN.clear()
    assert mq.publish(topic, {"task": "tests.workerproject.recorder.tasks.on_event"}) == 2
    run_worker(queues=["tasks"])
    assert tasks.RAN == []
    (p,) = mq.peek("tasks")
    assert p.state == "dead_lettered"
