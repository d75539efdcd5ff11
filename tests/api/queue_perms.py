"""An authentication backend granting this app's permissions per queue, the way a
project would (django-guardian works the same way): ``GRANTS[(username, perm)]`` is
the set of queue names."""

from __future__ import annotations

from typing import Any

GRANTS: dict[tuple[str, str], set[str]] = {}


class PerQueueBackend:
    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        if obj is None or not user_obj.is_active:
            return False
        return obj.name in GRANTS.get((user_obj.get_username(), perm), set())


#: The authentication backends a per-queue test runs with: Django's own and this one.
BACKENDS = ["django.contrib.auth.backends.ModelBackend", "tests.api.queue_perms.PerQueueBackend"]


def allow(perm: str, *queues: str, user: str = "pq") -> None:
    """Grant ``user`` this app's ``perm`` (send, consume, view, manage) on ``queues``."""
    GRANTS.setdefault((user, f"django_mqlite.{perm}_queue"), set()).update(queues)
