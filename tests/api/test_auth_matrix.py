"""Every route: anonymous → 401/403; authenticated without the permission → 403
(listings: only what the user may view); with it → the route's success status, by
default and whatever the project's DRF default permission. ``healthz/`` is the one
open route; ``MQLITE["API_PERMISSION_CLASSES"]`` may loosen the rest explicitly."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from rest_framework.test import APIClient

import django_mqlite as mq

from .conftest import url

PERMS = {
    "read": "view_queue",
    "send": "send_queue",
    "receive": "consume_queue",
    "manage": "manage_queue",
}

# (method, path, body, action, success status). {seq}/{token} come from a fresh claim,
# {sched} is a scheduled message, {deferred} a deferred one.
ROUTES = [
    ("get", "queues/", None, "read", 200),
    ("post", "queues/", {"name": "new"}, "manage", 201),
    ("get", "queues/work/", None, "read", 200),
    ("patch", "queues/work/", {"lock_duration": 5}, "manage", 200),
    ("delete", "queues/empty/", None, "manage", 204),
    ("post", "queues/work/messages/", {"body": 1}, "send", 201),
    ("get", "queues/work/messages/", None, "read", 200),
    ("delete", "queues/work/messages/{sched}/", None, "send", 204),
    ("post", "queues/work/receive/", {}, "receive", 200),
    ("post", "queues/work/messages/{seq}/complete/", {"lock_token": "{token}"}, "receive", 204),
    ("post", "queues/work/messages/{seq}/abandon/", {"lock_token": "{token}"}, "receive", 204),
    (
        "post",
        "queues/work/messages/{seq}/snooze/",
        {"lock_token": "{token}", "delay": 0},
        "receive",
        200,
    ),
    (
        "post",
        "queues/work/messages/{seq}/reject/",
        {"lock_token": "{token}", "reason": "r"},
        "receive",
        204,
    ),
    ("post", "queues/work/messages/{seq}/defer/", {"lock_token": "{token}"}, "receive", 204),
    ("post", "queues/work/messages/{seq}/renew/", {"lock_token": "{token}"}, "receive", 200),
    ("post", "queues/work/messages/{seq}/cancel/", None, "manage", 200),
    ("post", "queues/work/complete/", {"items": []}, "receive", 200),
    ("post", "queues/work/renew/", {"items": []}, "receive", 200),
    ("post", "queues/work/receive-deferred/", {"seqs": ["{deferred}"]}, "receive", 200),
    ("post", "queues/work/redrive/", {}, "manage", 200),
    ("post", "queues/work/purge/", {}, "manage", 200),
    ("post", "queues/work/pause/", None, "manage", 200),
    ("post", "queues/work/resume/", None, "manage", 200),
    ("get", "stats/", None, "read", 200),
    ("get", "queues/work/stats/", None, "read", 200),
    ("get", "metrics/", None, "read", 200),
    ("get", "schema/", None, "read", 200),
]

#: Routes that name no queue: they answer for the queues the user may see.
LISTINGS = {"queues/", "stats/", "metrics/", "schema/"}
IS_AUTHENTICATED = {"DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"]}


def _fill(value: Any, subs: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return subs[value[1:-1]]
    if isinstance(value, str):
        return value.format(**subs)
    if isinstance(value, dict):
        return {k: _fill(v, subs) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, subs) for v in value]
    return value


def _call(client: APIClient, route: tuple[Any, ...]) -> Any:
    method, path, body, _, _ = route
    mq.create_queue("work")
    mq.create_queue("empty")
    deferred_seq = mq.send("work", "d")
    (d,) = mq.receive("work")
    d.defer()
    subs = {"sched": mq.send("work", "s", delay=60), "deferred": deferred_seq}
    mq.send("work", "m")
    (m,) = mq.receive("work")
    subs.update(seq=m.seq, token=m.lock_token)
    kwargs = {} if body is None else {"data": _fill(body, subs), "format": "json"}
    return getattr(client, method)(url(path.format(**subs)), **kwargs)


def _ids(route: tuple[Any, ...]) -> str:
    return f"{route[0]} {route[1]}"


@pytest.mark.parametrize("route", ROUTES, ids=_ids)
def test_anonymous_is_refused(db: Any, route: tuple[Any, ...]) -> None:
    r = _call(APIClient(), route)
    assert r.status_code in (401, 403), r.content
    assert r.json()["code"] in ("unauthenticated", "permission_denied")


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if not (r[0] == "get" and r[1] in LISTINGS)], ids=_ids
)
def test_without_permission_is_403(db: Any, route: tuple[Any, ...]) -> None:
    user = User.objects.create_user("bob")
    # Every other permission, so it is the route's own permission that is missing.
    others = [p for a, p in PERMS.items() if a != route[3]]
    user.user_permissions.set(Permission.objects.filter(codename__in=others))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    r = _call(client, route)
    assert r.status_code == 403, r.content
    assert r.json()["code"] == "permission_denied"


@pytest.mark.parametrize("route", ROUTES, ids=_ids)
def test_with_permission_succeeds(db: Any, route: tuple[Any, ...]) -> None:
    user = User.objects.create_user("carol")
    user.user_permissions.set(Permission.objects.filter(codename=PERMS[route[3]]))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    r = _call(client, route)
    assert r.status_code == route[4], r.content


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if not (r[0] == "get" and r[1] in LISTINGS)], ids=_ids
)
def test_drf_default_is_authenticated_still_needs_the_permission(
    db: Any, route: tuple[Any, ...]
) -> None:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("dave"))
    rest = {**settings.REST_FRAMEWORK, **IS_AUTHENTICATED}
    with override_settings(REST_FRAMEWORK=rest):
        r = _call(client, route)
    assert r.status_code == 403, r.content


def test_listings_show_only_viewable_queues(db: Any) -> None:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("erin"))
    mq.create_queue("payroll")
    assert client.get(url("queues/")).json() == {"queues": []}
    assert client.get(url("stats/")).json() == {"queues": {}}
    assert b"payroll" not in client.get(url("metrics/")).content


@pytest.mark.parametrize("route", ROUTES, ids=_ids)
def test_an_explicit_setting_may_loosen(db: Any, route: tuple[Any, ...]) -> None:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("frank"))
    loose = {"API_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"]}
    with override_settings(MQLITE=loose):
        r = _call(client, route)
    assert r.status_code == route[4], r.content


def test_healthz_needs_nothing(db: Any) -> None:
    assert APIClient().get(url("healthz/")).status_code == 200
