"""Permissions of the HTTP API.

Every view declares an ``mq_action``: ``read`` (list and read queues, peek, stats,
metrics, schema), ``send`` (send, cancel a scheduled message), ``receive`` (receive,
settle, renew, receive deferred) or ``manage`` (create, change and delete queues, redrive,
purge). The default, ``QueuePermission``, turns the action into this app's Django model
permissions (``django_mqlite.permissions``), per queue where an authentication backend
grants object permissions, whatever the project's DRF default permission is.
``MQLITE["API_PERMISSION_CLASSES"]`` replaces it explicitly (and may loosen it).
"""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from .. import permissions as model_permissions
from ..conf import mqlite_settings

ACTIONS = ("read", "send", "receive", "manage")
#: The permission verb (``django_mqlite.<verb>_queue``) of each API action.
VERB = {"read": "view", "send": "send", "receive": "consume", "manage": "manage"}


class QueuePermission(BasePermission):
    """Grants an action on the route's queue when the user holds its permission.

    Routes that name no queue are let through here and decide per queue themselves:
    listings (queues, stats, metrics) show only the queues the user may view, and a
    create asks about the new name. Subclass and override ``has_queue_permission`` to
    decide per queue some other way; every per-queue decision of the API calls it.
    """

    message = "you do not have permission for this operation on this queue"

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            return False
        action = getattr(view, "mq_action", "manage")
        queue = view.kwargs.get("name") if hasattr(view, "kwargs") else None
        if queue is None:
            return True  # the view asks per queue (see the class docstring)
        return self.has_queue_permission(request, action, queue)

    def has_queue_permission(self, request: Request, action: str, queue: str | None) -> bool:
        verb = VERB.get(action, "manage")
        return model_permissions.has_queue_permission(request.user, verb, queue)


def _load(paths: Any) -> list[Any]:
    return [import_string(p) if isinstance(p, str) else p for p in paths]


def authentication_classes() -> list[Any]:
    """``MQLITE["API_AUTHENTICATION_CLASSES"]``, else the project's DRF default."""
    configured = mqlite_settings.API_AUTHENTICATION_CLASSES
    if configured is None:
        return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    return _load(configured)


def permission_classes() -> list[Any]:
    """``MQLITE["API_PERMISSION_CLASSES"]`` as given, else ``QueuePermission`` (never
    the project's DRF default, which is often just ``IsAuthenticated``)."""
    configured = mqlite_settings.API_PERMISSION_CLASSES
    if configured is None:
        return [QueuePermission]
    return _load(configured)
