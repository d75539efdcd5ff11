"""Who may do what through the SQS endpoint.

A plain credential (``"key id": "secret"``) may do everything. A user-bound one
(``{"secret": ..., "user": "<username>"}``) acts as that Django user, with the same
Django model permissions the HTTP API asks for.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from .errors import SQSError

_PERMS = {
    "read": "django_mqlite.view_queue",
    "send": "django_mqlite.add_message",
    "receive": "django_mqlite.change_message",
    "manage": "django_mqlite.change_queue",
}


def load_user(username: str) -> Any:
    """The active user a credential is bound to; a missing or inactive one refuses the key."""
    model = get_user_model()
    try:
        user = model._default_manager.get_by_natural_key(username)
    except model.DoesNotExist:
        user = None
    if user is None or not user.is_active:
        raise SQSError(
            "InvalidClientTokenId", "The security token included in the request is invalid.", 403
        )
    return user


def allowed(user: Any, verb: str, queue: str | None) -> bool:
    """May ``user`` (None: an unbound credential) do ``verb`` (read, send, receive,
    manage) on ``queue`` (None: across queues)? The one place the decision is made."""
    if user is None:
        return True
    return bool(user.has_perm(_PERMS[verb]))
