"""Permissions of the HTTP API.

Every view declares an ``mq_action``: ``read`` (list and read queues, peek, stats,
metrics, schema), ``send`` (send, cancel a scheduled message), ``receive`` (receive,
settle, renew, receive deferred) or ``manage`` (create, change and delete queues, redrive,
purge). ``QueuePermission`` turns the action into Django model permissions, per queue when
a project overrides ``has_queue_permission``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.utils.module_loading import import_string
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from ..conf import mqlite_settings

ACTIONS = ("read", "send", "receive", "manage")


class QueuePermission(BasePermission):
    """Grants an action when the user holds its Django permissions (``perms``).

    Subclass and override ``has_queue_permission`` to decide per queue, e.g. from a
    group name or a table of your own; ``queue`` is None for routes that span queues.
    """

    message = "you do not have permission for this operation on this queue"

    perms: ClassVar[dict[str, tuple[str, ...]]] = {
        "read": ("django_mqlite.view_queue",),
        "send": ("django_mqlite.add_message",),
        "receive": ("django_mqlite.change_message",),
        "manage": ("django_mqlite.change_queue",),
    }

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            return False
        action = getattr(view, "mq_action", "manage")
        queue = view.kwargs.get("name") if hasattr(view, "kwargs") else None
        return self.has_queue_permission(request, action, queue)

    def has_queue_permission(self, request: Request, action: str, queue: str | None) -> bool:
        return bool(request.user.has_perms(self.perms.get(action, self.perms["manage"])))


def _load(paths: Any) -> list[Any]:
    return [import_string(p) if isinstance(p, str) else p for p in paths]


def authentication_classes() -> list[Any]:
    """``MQLITE["API_AUTHENTICATION_CLASSES"]``, else the project's DRF default."""
    configured = mqlite_settings.API_AUTHENTICATION_CLASSES
    if configured is None:
        return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    return _load(configured)


def permission_classes() -> list[Any]:
    """``MQLITE["API_PERMISSION_CLASSES"]`` as given, else ``IsAuthenticated`` plus the
    project's DRF default (which is ``AllowAny`` when unset: never an open queue)."""
    configured = mqlite_settings.API_PERMISSION_CLASSES
    if configured is None:
        defaults = list(api_settings.DEFAULT_PERMISSION_CLASSES)
        return [IsAuthenticated, *(c for c in defaults if c is not IsAuthenticated)]
    return _load(configured)
