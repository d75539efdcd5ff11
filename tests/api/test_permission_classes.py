"""``QueuePermission`` itself: a per-queue grant reaches the route's queue, a view that
declares no action (or one the API does not know) needs ``manage``, and the
``API_AUTHENTICATION_CLASSES`` / ``API_PERMISSION_CLASSES`` settings take dotted paths
or classes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authentication import BasicAuthentication, SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.views import APIView

import django_mqlite as mq
from django_mqlite.api.permissions import (
    QueuePermission,
    authentication_classes,
    permission_classes,
)

from .conftest import url
from .queue_perms import allow

pytestmark = pytest.mark.django_db


def test_a_per_queue_grant_reaches_the_routes_queue(per_queue: APIClient) -> None:
    mq.create_queue("mine")
    mq.create_queue("theirs")
    allow("view", "mine")
    assert per_queue.get(url("queues/mine/stats/")).status_code == 200
    assert per_queue.get(url("queues/theirs/stats/")).status_code == 403


class Undeclared(APIView):
    permission_classes = [QueuePermission]

    def get(self, request: Any, name: str) -> Response:
        return Response({"ok": name})


class Unknown(Undeclared):
    mq_action = "frobnicate"


def _user(*codenames: str) -> User:
    user = User.objects.create_user(f"u{len(codenames)}-{'-'.join(codenames)}")
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # a fresh object: no cached permissions


@pytest.mark.parametrize("view", [Undeclared, Unknown])
def test_a_view_without_a_known_action_needs_manage(view: type[APIView]) -> None:
    mq.create_queue("work")
    reader = _user("view_queue", "send_queue", "consume_queue")
    manager = _user("manage_queue")
    for user, status in ((reader, 403), (manager, 200)):
        request = APIRequestFactory().get("/x/")
        force_authenticate(request, user=user)
        assert view.as_view()(request, name="work").status_code == status


@pytest.mark.parametrize(
    "configured",
    [
        ["rest_framework.authentication.BasicAuthentication"],
        [BasicAuthentication],
    ],
)
def test_the_authentication_setting_takes_paths_or_classes(
    settings: Any, configured: list[Any]
) -> None:
    settings.MQLITE = {**settings.MQLITE, "API_AUTHENTICATION_CLASSES": configured}
    assert authentication_classes() == [BasicAuthentication]
    settings.MQLITE = {
        **settings.MQLITE,
        "API_AUTHENTICATION_CLASSES": [SessionAuthentication, *configured],
    }
    assert authentication_classes() == [SessionAuthentication, BasicAuthentication]


def test_the_permission_setting_takes_paths_or_classes(settings: Any) -> None:
    assert permission_classes() == [QueuePermission]
    settings.MQLITE = {**settings.MQLITE, "API_PERMISSION_CLASSES": [AllowAny]}
    assert permission_classes() == [AllowAny]
    paths = ["rest_framework.permissions.AllowAny"]
    settings.MQLITE = {**settings.MQLITE, "API_PERMISSION_CLASSES": paths}
    assert permission_classes() == [AllowAny]
