"""Reading workflow batches over HTTP: progress, the list, and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

import django_mqlite as mq

from .conftest import grant, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def batches(make_queue: Any) -> tuple[int, int]:
    """Two batches on ``kids``: one finished (one child completed, one rejected), one
    running (a child waits)."""
    make_queue("kids")
    make_queue("done")
    with mq.batch(on_complete=mq.Callback("done", {"cb": 1})) as first:
        first.send("kids", 1)
        first.send("kids", 2)
    a, b = mq.receive("kids", max_messages=2)
    a.complete()
    b.reject("Bad")
    with mq.batch() as second:
        second.send("kids", 3)
    return first.id, second.id


def test_a_batch_reads_its_progress_and_callbacks(api: APIClient, batches: Any) -> None:
    finished, running = batches
    body = api.get(url(f"batches/{finished}/")).json()
    cb = mq.get_batch(finished).callbacks["on_complete"]
    assert {k: body[k] for k in ("id", "state", "total", "pending", "completed", "failed")} == {
        "id": finished,
        "state": "finished",
        "total": 2,
        "pending": 0,
        "completed": 1,
        "failed": 1,
    }
    assert body["callbacks"] == {"on_complete": cb} and body["finished_at"] is not None
    body = api.get(url(f"batches/{running}/")).json()
    assert (body["state"], body["pending"], body["finished_at"]) == ("running", 1, None)


def test_the_list_is_newest_first_and_filters_by_state(api: APIClient, batches: Any) -> None:
    finished, running = batches
    assert [b["id"] for b in api.get(url("batches/")).json()["batches"]] == [running, finished]
    only = api.get(url("batches/"), {"state": "finished"}).json()["batches"]
    assert [b["id"] for b in only] == [finished]
    assert [b["id"] for b in api.get(url("batches/"), {"limit": 1}).json()["batches"]] == [running]


@pytest.mark.parametrize("query", [{"state": "open"}, {"limit": 0}, {"limit": "x"}])
def test_bad_list_queries_are_400(api: APIClient, batches: Any, query: dict[str, Any]) -> None:
    r = api.get(url("batches/"), query)
    assert r.status_code == 400 and r.json()["code"] == "invalid_argument", r.content


def test_an_unknown_batch_is_404(api: APIClient, batches: Any) -> None:
    r = api.get(url("batches/987654/"))
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_reading_needs_view_across_queues(batches: Any, per_queue: APIClient) -> None:
    """``view_queue`` on the batch's queues only (an object-permission backend) is not
    enough: a batch's counts describe every queue it touches, and the route asks the
    permission before it looks the batch up."""
    from . import queue_perms

    finished, _ = batches
    queue_perms.allow("view", "kids", "done", user="pq")
    assert per_queue.get(url("queues/kids/")).status_code == 200  # the grant works
    for path in (f"batches/{finished}/", "batches/", "batches/987654/"):
        r = per_queue.get(url(path))
        assert r.status_code == 403 and r.json()["code"] == "permission_denied", path


def test_without_view_queue_is_403(batches: Any) -> None:
    finished, _ = batches
    client = APIClient()
    client.force_authenticate(grant(User.objects.create_user("eve"), "send_queue"))
    assert client.get(url(f"batches/{finished}/")).status_code == 403
