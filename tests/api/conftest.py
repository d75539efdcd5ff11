from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

import django_mqlite as mq


@pytest.fixture
def user(db: Any) -> User:
    return User.objects.create_user("alice", password="secret")


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
