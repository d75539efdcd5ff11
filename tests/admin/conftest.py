from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

import django_mqlite as mq

VIEW_PERMS = ("view_queue", "view_message", "view_deadletter", "view_worker")


@pytest.fixture
def dead_letter(db: Any) -> Callable[..., int]:
    """Send a message and dead-letter it through the engine; returns its seq."""

    def make(
        queue: str,
        body: Any = b"payload",
        *,
        reason: str = "BadInput",
        description: str = "",
        error: str | None = None,
        **send: Any,
    ) -> int:
        seq = mq.send(queue, body, **send)
        [got] = mq.receive(queue)
        assert got.seq == seq, "dead_letter() needs a queue with nothing else claimable"
        mq.reject(queue, got.seq, got.lock_token or "", reason, description, error=error)
        return seq

    return make


@pytest.fixture
def staff_client(db: Any) -> Callable[..., Client]:
    """A logged-in staff user holding the view permissions plus ``extra`` codenames."""

    def make(*extra: str, view: bool = True) -> Client:
        user = User.objects.create_user(f"staff{User.objects.count()}", is_staff=True)
        codenames = (*VIEW_PERMS, *extra) if view else extra
        user.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label="django_mqlite", codename__in=codenames
            )
        )
        client = Client()
        client.force_login(user)
        return client

    return make


def state_of(seq: int) -> str | None:
    from django_mqlite.models import Message

    row = Message.objects.filter(seq=seq).values_list("state", flat=True).first()
    return row


def action_post(action: str, seqs: list[int], **extra: str) -> dict[str, Any]:
    return {"action": action, "_selected_action": [str(s) for s in seqs], "index": "0", **extra}
