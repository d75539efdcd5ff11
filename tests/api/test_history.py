"""``GET queues/{name}/history/``: the buckets of ``mq.history``, the same permission as
the queue's stats, and a 400 for a bad ``minutes``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from rest_framework.test import APIClient

import django_mqlite as mq

from .conftest import error, url

T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
QUEUE_PERMISSION = {"API_PERMISSION_CLASSES": ["django_mqlite.api.permissions.QueuePermission"]}


def test_buckets(api: APIClient, db: Any) -> None:
    with mq.clock.frozen(T0) as clock:
        q = mq.create_queue("hist").name
        mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
        clock.advance(60)
        mq.reap()
        [m] = mq.receive(q)
        m.complete()
        r = api.get(url(f"queues/{q}/history/?minutes=3"))
        expected = mq.history(q, minutes=3)
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["queue"], body["minutes"], len(body["buckets"])) == (q, 3, 3)
    before, first, now = body["buckets"]
    assert before["depth"] is None and before["enqueued"] == 0
    assert first["start"] == "2026-03-02T12:00:00Z"
    assert (first["enqueued"], first["depth"]["active"]) == (2, 2)
    assert (now["delivered"], now["completed"], now["depth"]["active"]) == (1, 1, 1)
    for got, want in zip(body["buckets"], expected, strict=True):
        assert {k: v for k, v in got.items() if k != "start"} == {
            k: v for k, v in want.items() if k != "start"
        }


def test_default_is_an_hour(api: APIClient, q: str) -> None:
    body = api.get(url(f"queues/{q}/history/")).json()
    assert body["minutes"] == 60 and len(body["buckets"]) == 60


@pytest.mark.parametrize("bad", ["0", "-5", "abc", "1.5", "10081", "99999999999999999999"])
def test_bad_minutes_is_400(api: APIClient, q: str, bad: str) -> None:
    error(api.get(url(f"queues/{q}/history/?minutes={bad}")), 400, "invalid_argument")


def test_unknown_queue_is_404(api: APIClient) -> None:
    error(api.get(url("queues/nope/history/")), 404, "not_found")


def test_anonymous_is_refused(anon: APIClient, q: str) -> None:
    r = anon.get(url(f"queues/{q}/history/"))
    assert r.status_code in (401, 403)


def _client_with(codenames: list[str]) -> APIClient:
    user = User.objects.create_user(f"u{User.objects.count()}")
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_mqlite", codename__in=codenames)
    )
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    return client


def _codenames() -> list[str]:
    return list(
        Permission.objects.filter(content_type__app_label="django_mqlite").values_list(
            "codename", flat=True
        )
    )


@override_settings(MQLITE=QUEUE_PERMISSION)
def test_history_needs_what_stats_needs(db: Any, q: str) -> None:
    """With each single permission, and with none: history answers like stats."""
    granted = []
    for codenames in [[], *([c] for c in _codenames())]:
        client = _client_with(codenames)
        stats = client.get(url(f"queues/{q}/stats/")).status_code
        history = client.get(url(f"queues/{q}/history/")).status_code
        assert history == stats, codenames
        if stats == 200:
            granted.append(codenames)
    assert granted, "some permission grants reading stats"
    assert [] not in granted


@override_settings(MQLITE=QUEUE_PERMISSION)
def test_without_the_permission_is_403(db: Any, q: str) -> None:
    readers = {c for c in _codenames() if _client_with([c]).get(url("stats/")).status_code == 200}
    others = [c for c in _codenames() if c not in readers]
    error(_client_with(others).get(url(f"queues/{q}/history/")), 403, "permission_denied")


def test_in_the_schema(api: APIClient) -> None:
    schema = api.get(url("schema/"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    op = schema["paths"]["/queues/{name}/history/"]["get"]
    [minutes] = [p for p in op["parameters"] if p["name"] == "minutes"]
    assert minutes["schema"]["minimum"] == 1 and minutes["schema"]["maximum"] == 10080


@pytest.mark.parametrize("query", ["minutes=", "minutes=5&minutes=10"])
def test_an_empty_or_repeated_query_parameter_is_400(api: Any, q: str, query: str) -> None:
    r = api.get(url(f"queues/{q}/history/?{query}"))
    assert r.status_code == 400 and r.json()["code"] == "invalid_argument"
