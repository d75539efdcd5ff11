from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

import django_mqlite as mq

API_PERMISSIONS = ("view_queue", "send_queue", "consume_queue", "manage_queue")


def grant(user: User, *codenames: str) -> User:
    """Give ``user`` this app's API permissions (all four when none are named)."""
    perms = Permission.objects.filter(
        content_type__app_label="django_mqlite", codename__in=codenames or API_PERMISSIONS
    )
    user.user_permissions.add(*perms)
    return User.objects.get(pk=user.pk)  # a fresh object: permissions are cached


@pytest.fixture
def user(db: Any) -> User:
    """A user holding every API permission (the API refuses users without them)."""
    return grant(User.objects.create_user("alice", password="secret"))


@pytest.fixture
def nobody(db: Any) -> APIClient:
    """An authenticated client without any of this app's permissions."""
    client = APIClient()
    client.force_authenticate(User.objects.create_user("mallory", password="secret"))
    return client


@pytest.fixture
def api(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def anon(db: Any) -> APIClient:
    return APIClient()


@pytest.fixture
def sent(q: str) -> Callable[..., int]:
    def send(body: Any = None, **options: Any) -> int:
        return mq.send(q, {"n": 1} if body is None else body, **options)

    return send


def url(path: str) -> str:
    return f"/mq/{path}"


def error(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    assert response.json()["code"] == code, response.json()
    assert set(response.json()) == {"code", "message"}


@pytest.fixture
def per_queue(db: Any) -> Iterator[APIClient]:
    """A client whose user (``pq``) holds only the per-queue grants ``queue_perms.allow``
    gives it."""
    from django.test import override_settings

    from . import queue_perms

    queue_perms.GRANTS.clear()
    client = APIClient()
    client.force_authenticate(User.objects.create_user("pq"))
    with override_settings(AUTHENTICATION_BACKENDS=queue_perms.BACKENDS):
        yield client
    queue_perms.GRANTS.clear()
