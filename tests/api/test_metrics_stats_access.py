"""``metrics/`` and ``stats/`` answer only what the caller may view: no permission is a
403 (not an empty scrape with every worker's host and pid), worker gauges need the view
permission across queues, and ``stats/`` counts only the visible queues' messages."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

import django_mqlite as mq
from django_mqlite.models import Worker

from . import queue_perms
from .conftest import error, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker_row() -> None:
    now = mq.clock.now_ms()
    Worker.objects.create(host="secret-host", pid=4242, started_at=now, last_seen=now)


def test_metrics_refuse_a_user_without_permission(nobody: Any, q: str, worker_row: None) -> None:
    r = nobody.get(url("metrics/"))
    error(r, 403, "permission_denied")
    assert b"secret-host" not in r.content


def test_metrics_for_a_per_queue_viewer_show_no_workers(
    per_queue: APIClient, worker_row: None
) -> None:
    mq.create_queue("mine")
    mq.create_queue("theirs")
    queue_perms.GRANTS[("pq", "django_mqlite.view_queue")] = {"mine"}
    body = per_queue.get(url("metrics/"), HTTP_ACCEPT="text/plain").content
    assert b'queue="mine"' in body and b"theirs" not in body
    assert b"secret-host" not in body and b"mqlite_worker_alive" not in body


def test_metrics_for_a_viewer_of_every_queue_show_workers(
    api: Any, q: str, worker_row: None
) -> None:
    body = api.get(url("metrics/"), HTTP_ACCEPT="text/plain").content
    assert b"secret-host" in body


def test_stats_count_only_the_visible_queues(per_queue: APIClient) -> None:
    mq.create_queue("mine")
    mq.create_queue("theirs")
    mq.send("theirs", b"x")
    queue_perms.GRANTS[("pq", "django_mqlite.view_queue")] = {"mine"}
    theirs_id = mq_queue_id("theirs")
    with CaptureQueriesContext(connection) as ctx:
        r = per_queue.get(url("stats/"))
    assert list(r.json()["queues"]) == ["mine"]
    counts = [c["sql"] for c in ctx.captured_queries if "count(" in c["sql"].lower()]
    assert counts and not any(
        f"= {theirs_id} " in s or s.endswith(f"= {theirs_id}") for s in counts
    )


def mq_queue_id(name: str) -> int:
    from django_mqlite.models import Queue

    return int(Queue.objects.get(name=name).pk)


def test_topic_metrics(api: Any, per_queue: APIClient) -> None:
    mq.create_topic("ev")
    mq.create_topic("hidden")
    for name in ("mine", "theirs"):
        mq.create_queue(name)
        mq.subscribe("ev", name, {"subject": "x"} if name == "theirs" else None)
    mq.subscribe("hidden", "theirs")
    mq.publish("ev", 1, subject="x")
    mq.publish("ev", 2)
    mq.publish("hidden", 3)
    body = api.get(url("metrics/"), HTTP_ACCEPT="text/plain").content.decode()
    assert 'mqlite_topic_published_total{topic="ev"} 2.0' in body
    assert 'mqlite_topic_published_total{topic="hidden"} 1.0' in body
    assert 'mqlite_topic_delivered_total{queue="mine",topic="ev"} 2.0' in body
    assert 'mqlite_topic_delivered_total{queue="theirs",topic="ev"} 1.0' in body
    # A per-queue viewer sees the subscriptions of its queues, and their topics only.
    queue_perms.GRANTS[("pq", "django_mqlite.view_queue")] = {"mine"}
    body = per_queue.get(url("metrics/"), HTTP_ACCEPT="text/plain").content.decode()
    assert 'mqlite_topic_published_total{topic="ev"} 2.0' in body
    assert 'mqlite_topic_delivered_total{queue="mine",topic="ev"} 2.0' in body
    assert "theirs" not in body and "hidden" not in body
