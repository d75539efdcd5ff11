"""Who may do what through the SQS endpoint.

A plain credential (``"key id": "secret"``) may do everything but send to a Tasks
queue. A user-bound one (``{"secret": ..., "user": "<username>"}``) acts as that Django
user, with the permissions the HTTP API asks for (``django_mqlite.permissions``, per queue
where the project grants them). A Tasks queue takes no sends from any credential unless
``MQLITE["OPEN_TASK_QUEUES"]`` lists it: a message there runs the project's code.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from ..permissions import accepts_remote_sends, has_queue_permission
from .errors import SQSError

#: SQS verbs -> the HTTP API's (``docs/security.md``).
_VERBS = {"read": "view", "send": "send", "receive": "consume", "manage": "manage"}


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
    if verb == "send" and queue is not None and not accepts_remote_sends(queue):
        return False
    if user is None:
        return True
    return has_queue_permission(user, _VERBS[verb], queue)
