"""Hostile and careless requests: nothing is lost, nobody gets in by accident, every
answer is a JSON status below 500."""

from __future__ import annotations

import base64
import datetime as dt
import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

import django_mqlite as mq
from tests.support.legacy_rows import store_raw

from .conftest import error, grant, url
from .queue_perms import allow

NON_STANDARD_JSON = (b"NaN", b'{"x": Infinity}', b"[1e400]")


def test_non_standard_json_bodies_are_refused_at_the_send(api: Any, q: str) -> None:
    for raw in NON_STANDARD_JSON:
        body = {"body_base64": base64.b64encode(raw).decode(), "content_type": "application/json"}
        error(api.post(url(f"queues/{q}/messages/"), body, format="json"), 400, "invalid_argument")
    assert mq.peek(q) == []


# -- 1: nothing is lost to a body that cannot be rendered ------------------------------


@pytest.mark.parametrize("mode", ["peek_lock", "receive_and_delete"])
def test_non_standard_json_bodies_are_delivered_as_base64(api: Any, q: str, mode: str) -> None:
    """As an older version stored them."""
    for raw in NON_STANDARD_JSON:
        store_raw(q, raw, "application/json")
    r = api.post(url(f"queues/{q}/receive/"), {"max_messages": 10, "mode": mode}, format="json")
    assert r.status_code == 200, r.content
    got = r.json()["messages"]
    assert [base64.b64decode(m["body_base64"]) for m in got] == [
        b"NaN",
        b'{"x": Infinity}',
        b"[1e400]",
    ]
    assert api.get(url(f"queues/{q}/messages/")).status_code == 200


@pytest.mark.parametrize(
    "raw",
    [
        b'{"body": 1, "properties": {"x": 1e400}}',
        b'{"body": 1e400}',
        b'{"body": [NaN]}',
        b'{"body": 1, "priority": -Infinity}',
        b'{"max_messages": 1, "wait": 1e999}',
    ],
)
def test_non_finite_numbers_anywhere_are_400(api: Any, q: str, raw: bytes) -> None:
    r = api.generic("POST", url(f"queues/{q}/messages/"), raw, content_type="application/json")
    error(r, 400, "invalid_argument")
    assert mq.stats(q).totals["enqueued"] == 0


# -- 5, 6: permissions per route and per queue ----------------------------------------


def test_a_user_without_permissions_can_do_nothing(nobody: Any, q: str) -> None:
    mq.send(q, b"x")
    for method, path, body in [
        ("post", "queues/", {"name": "new"}),
        ("post", f"queues/{q}/messages/", {"body": 1}),
        ("get", f"queues/{q}/messages/", None),
        ("post", f"queues/{q}/receive/", {}),
        ("post", f"queues/{q}/purge/", {"state": "active"}),
        ("delete", f"queues/{q}/?force=true", None),
    ]:
        r = getattr(nobody, method)(url(path), body, format="json")
        error(r, 403, "permission_denied")
    assert mq.stats(q).counts["active"] == 1


def test_per_queue_grants(per_queue: APIClient) -> None:
    mq.create_queue("mine")
    mq.create_queue("theirs")
    allow("view", "mine")
    allow("send", "mine")
    assert [q["name"] for q in per_queue.get(url("queues/")).json()["queues"]] == ["mine"]
    assert list(per_queue.get(url("stats/")).json()["queues"]) == ["mine"]
    metrics = per_queue.get(url("metrics/")).content
    assert b'queue="mine"' in metrics and b"theirs" not in metrics
    ok = per_queue.post(url("queues/mine/messages/"), {"body": 1}, format="json")
    assert ok.status_code == 201
    denied = per_queue.post(url("queues/theirs/messages/"), {"body": 1}, format="json")
    error(denied, 403, "permission_denied")


def test_redrive_target_and_create_name_are_checked(per_queue: APIClient) -> None:
    mq.create_queue("mine")
    mq.create_queue("theirs")
    mq.send("mine", b"x")
    (m,) = mq.receive("mine")
    m.reject("bad")
    allow("manage", "mine")
    r = per_queue.post(url("queues/mine/redrive/"), {"to_queue": "theirs"}, format="json")
    error(r, 403, "permission_denied")
    assert mq.stats("mine").counts["dead_lettered"] == 1
    allow("send", "theirs")
    r = per_queue.post(url("queues/mine/redrive/"), {"to_queue": "theirs"}, format="json")
    assert r.json() == {"count": 1}
    # A create is checked against the new name: a per-queue grant elsewhere is not enough.
    error(per_queue.post(url("queues/"), {"name": "new"}, format="json"), 403, "permission_denied")
    assert "new" not in {q.name for q in mq.list_queues()}


# -- 7: task queues take no HTTP sends unless they opt in -----------------------------


def test_sending_to_a_task_queue_over_http_is_refused(api: Any) -> None:
    # The task's module is imported, as an installed app's tasks module is in a project
    # (the front resolves only such modules; this test must not rely on another test's
    # import).
    importlib.import_module("tests.workerproject.recorder.tasks")
    mq.create_queue("tasks")
    mq.create_queue("plain")
    envelope = {"task": "tests.workerproject.recorder.tasks.add", "args": [1, 2], "kwargs": {}}
    r = api.post(url("queues/tasks/messages/"), {"body": envelope}, format="json")
    error(r, 403, "permission_denied")
    mq.send("plain", envelope)
    (m,) = mq.receive("plain")
    m.reject("x")
    r = api.post(url("queues/plain/redrive/"), {"to_queue": "tasks"}, format="json")
    error(r, 403, "permission_denied")
    assert mq.stats("tasks").totals["enqueued"] == 0
    with override_settings(MQLITE={"OPEN_TASK_QUEUES": ["tasks"]}):
        r = api.post(url("queues/tasks/messages/"), {"body": envelope}, format="json")
    assert r.status_code == 201


# -- 8: receive attempts belong to their caller ---------------------------------------


def test_attempt_ids_are_private_to_the_caller(api: Any, q: str) -> None:
    other = APIClient()
    other.force_authenticate(grant(User.objects.create_user("bob")))
    mq.send(q, b"x")
    body = {"attempt_id": "a1", "lock_duration": 60}
    first = api.post(url(f"queues/{q}/receive/"), body, format="json").json()["messages"]
    again = api.post(url(f"queues/{q}/receive/"), body, format="json").json()["messages"]
    assert [m["lock_token"] for m in again] == [m["lock_token"] for m in first]
    theirs = other.post(url(f"queues/{q}/receive/"), body, format="json").json()["messages"]
    assert theirs == []


def test_a_settlement_replay_on_another_queue_is_lock_lost(api: Any, q: str) -> None:
    mq.create_queue("other")
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    token = {"lock_token": m.lock_token}
    done = url(f"queues/{q}/messages/{m.seq}/complete/")
    assert api.post(done, token, format="json").status_code == 204
    assert api.post(done, token, format="json").status_code == 204
    r = api.post(url(f"queues/other/messages/{m.seq}/complete/"), token, format="json")
    error(r, 409, "lock_lost")


# -- 9: the schema builds without DEFAULT_SCHEMA_CLASS --------------------------------


def test_schema_needs_no_default_schema_class(api: Any) -> None:
    rest = {k: v for k, v in settings.REST_FRAMEWORK.items() if k != "DEFAULT_SCHEMA_CLASS"}
    with override_settings(REST_FRAMEWORK=rest):
        r = api.get(url("schema/"))
    assert r.status_code == 200
    assert "/queues/{name}/receive/" in r.json()["paths"]


# -- 10: big requests get the documented answers --------------------------------------


def test_requests_above_djangos_upload_limit_reach_the_apis_own_cap(api: Any, q: str) -> None:
    text = "x" * 900_000
    batch = {"messages": [{"body": text} for _ in range(4)]}  # ~3.6 MB of JSON
    r = api.post(url(f"queues/{q}/messages/"), batch, format="json")
    assert r.status_code == 201, r.content[:200]
    assert mq.stats(q).counts["active"] == 4
    form = api.generic(
        "POST",
        url(f"queues/{q}/messages/"),
        "a=" + "x" * 3_000_000,
        content_type="application/x-www-form-urlencoded",
    )
    assert form.status_code in (413, 415)
    assert form.json()["code"] in ("request_too_large", "unsupported_media_type")


# -- 11: bounds over HTTP --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("messages/", {"body": 1, "scheduled_at": "9999-12-31T00:00:00Z", "ttl": 60}),
        ("receive/", {"lock_duration": 10 * 365 * 86400}),
        ("receive/", {"lock_duration": 12 * 3600 + 1}),
    ],
)
def test_bounds_are_400(api: Any, q: str, path: str, body: dict[str, Any]) -> None:
    mq.send(q, b"x")
    error(api.post(url(f"queues/{q}/{path}"), body, format="json"), 400, "invalid_argument")
    assert mq.stats(q).counts["active"] == 1
    assert api.get(url(f"queues/{q}/messages/")).status_code == 200


def test_renewing_for_years_is_400(api: Any, q: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    body = {"lock_token": m.lock_token, "lock_duration": 10 * 365 * 86400}
    r = api.post(url(f"queues/{q}/messages/{m.seq}/renew/"), body, format="json")
    error(r, 400, "invalid_argument")


def test_queue_names_with_a_newline_are_400(api: Any) -> None:
    error(api.post(url("queues/"), {"name": "work\n"}, format="json"), 400, "invalid_argument")
    assert mq.list_queues() == []


# -- 12: responses are bounded by bytes ------------------------------------------------


@pytest.fixture
def small_budget() -> Iterator[None]:
    with override_settings(MQLITE={"API_MAX_RESPONSE_BYTES": 300_000}):
        yield


def test_peek_is_bounded_by_bytes(api: Any, q: str, small_budget: None) -> None:
    for _ in range(10):
        mq.send(q, b"x" * 100_000)
    r = api.get(url(f"queues/{q}/messages/?limit=1000"))
    assert len(r.content) <= 300_000
    assert r.json()["truncated"] is True
    assert 1 <= len(r.json()["messages"]) < 10


def test_receive_is_bounded_by_bytes_and_loses_nothing(
    api: Any, q: str, small_budget: None
) -> None:
    seqs = [mq.send(q, b"x" * 100_000) for _ in range(10)]
    r = api.post(url(f"queues/{q}/receive/"), {"max_messages": 10}, format="json")
    assert len(r.content) <= 300_000
    got = r.json()["messages"]
    assert r.json()["truncated"] is True and 1 <= len(got) < 10
    counts = mq.stats(q).counts
    assert (counts["locked"], counts["active"]) == (len(got), 10 - len(got))
    rest = mq.receive(q, max_messages=10)
    assert sorted([m["seq"] for m in got] + [m.seq for m in rest]) == seqs
    assert {m.delivery_count for m in rest} == {1}  # handed back unburnt


def test_receive_and_delete_claims_only_what_fits(api: Any, q: str, small_budget: None) -> None:
    for _ in range(5):
        mq.send(q, b"x" * 100_000)
    body = {"max_messages": 5, "mode": "receive_and_delete"}
    r = api.post(url(f"queues/{q}/receive/"), body, format="json")
    got = r.json()["messages"]
    assert len(r.content) <= 300_000
    assert r.json()["truncated"] is True
    assert mq.stats(q).counts["active"] == 5 - len(got)
    assert mq.stats(q).totals["completed"] == len(got)


def test_scheduled_far_ahead_never_blocks_peek(api: Any, q: str) -> None:
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3000)).isoformat()
    r = api.post(url(f"queues/{q}/messages/"), {"body": 1, "scheduled_at": later}, format="json")
    assert r.status_code == 201
    assert api.get(url(f"queues/{q}/messages/")).status_code == 200
