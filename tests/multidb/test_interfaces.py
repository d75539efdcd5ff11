"""The HTTP API, the CLI, the Tasks backend and the admin reach a queue declared on the
second database without being told where it lives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

import django_mqlite as mq
from tests.settings import SECOND
from tests.support.cli_helpers import mqlite, mqlite_json

from .conftest import BOTH, FAR, NEAR, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


@pytest.fixture
def api() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password="x"))
    return client


def test_http_api_routes_by_queue(api: APIClient) -> None:
    r = api.post(f"/mq/queues/{FAR}/messages/", {"body": {"n": 1}}, format="json")
    assert r.status_code == 201, r.content
    assert rows(SECOND, FAR) == 1 and rows("default", FAR) == 0
    r = api.post(f"/mq/queues/{FAR}/receive/", {"wait": 0.2}, format="json")
    [msg] = r.json()["messages"]
    r = api.post(
        f"/mq/queues/{FAR}/messages/{msg['seq']}/complete/",
        {"lock_token": msg["lock_token"]},
        format="json",
    )
    assert r.status_code == 204
    assert rows(SECOND, FAR) == 0
    names = {q["name"] for q in api.get("/mq/queues/").json()["queues"]}
    assert {FAR, NEAR} <= names
    assert api.get(f"/mq/queues/{FAR}/stats/").json()["totals"]["completed"] == 1
    assert {FAR, NEAR} <= set(api.get("/mq/stats/").json()["queues"])


def test_cli_routes_by_queue() -> None:
    out = mqlite("send", FAR, "hello")
    assert "sent seq" in out
    assert rows(SECOND, FAR) == 1
    assert [m["body"] for m in mqlite_json("peek", FAR)] == ["hello"]
    assert mqlite_json("stats", FAR)[FAR]["counts"]["active"] == 1
    listed = {q["name"] for q in mqlite_json("queues")}
    assert {FAR, NEAR} <= listed
    with pytest.raises(Exception, match="lives on database"):
        mqlite("send", FAR, "x", "--database", "default")


def test_tasks_backend_routes_by_queue(settings: Any) -> None:
    from tests.workerproject.recorder import tasks

    settings.MQLITE = {
        **settings.MQLITE,
        "QUEUES": {"tasks-other": {"database": SECOND, "keep_results": 60}},
    }
    result = tasks.returns_set.enqueue()
    assert result.id.endswith(f"@{SECOND}")
    assert rows(SECOND, "tasks-other") == 1 and rows("default", "tasks-other") == 0
    assert tasks.returns_set.get_result(result.id).status.name == "READY"
    assert tasks.returns_set.get_backend().cancel(result.id) is True
    assert tasks.returns_set.get_result(result.id).status.name == "FAILED"


def _dead_letter_on_far() -> int:
    seq = mq.send(FAR, "poison")
    [msg] = mq.receive(FAR)
    msg.reject("Bad")
    return seq


def test_admin_lists_and_acts_on_the_chosen_database() -> None:
    seq = _dead_letter_on_far()
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x"))
    page = client.get("/admin/django_mqlite/queue/").content.decode()
    assert f"?database={SECOND}" in page  # the database picker
    assert NEAR in page and f">{FAR}<" not in page
    page = client.get(f"/admin/django_mqlite/queue/?database={SECOND}").content.decode()
    assert f">{FAR}<" in page
    dlq = f"/admin/django_mqlite/deadletter/?database={SECOND}"
    assert "poison" in client.get(dlq).content.decode()
    r = client.post(
        dlq,
        {"action": "redrive_selected", "_selected_action": [str(seq)], "index": "0"},
        follow=True,
    )
    assert "Redrove 1 dead letter." in r.content.decode()
    assert rows(SECOND, FAR, "active") == 1


def test_admin_detail_page_of_a_message_on_the_second_database() -> None:
    seq = mq.send(FAR, json.dumps({"hello": "far"}))
    url = f"/admin/django_mqlite/message/{seq}/change/?_changelist_filters=database%3D{SECOND}"
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x"))
    page = client.get(url)
    assert page.status_code == 200
    assert "far" in page.content.decode()


def test_cli_health_probes_every_queue_database() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=f"0 live worker\\(s\\) on '{SECOND}'"):
        mqlite("health")
