"""Who may do what to which queue: the permission model every remote surface shares.

Four verbs, each a Django model permission of this app:

- ``view``    (``django_mqlite.view_queue``): read queues, peek, stats, metrics;
- ``send``    (``django_mqlite.send_queue``): send, cancel a scheduled message;
- ``consume`` (``django_mqlite.consume_queue``): receive, settle, renew;
- ``manage``  (``django_mqlite.manage_queue``): create, change and delete queues,
  redrive, purge.

A user holding the permission may do that to every queue. Per queue, the project's
authentication backends decide: ``user.has_perm(perm, queue)`` is asked with the
``Queue`` model instance, so an object-permission backend (django-guardian, or a
backend of your own with a ``has_perm(user_obj, perm, obj)`` method) grants a verb on
some queues only. Nothing here imports an HTTP framework, so any surface can call it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .conf import current
from .engine.databases import database_of
from .exceptions import InvalidArgumentError

VERBS = ("view", "send", "consume", "manage")


def permission_name(verb: str) -> str:
    """The Django permission (``app_label.codename``) of a verb."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}; one of {', '.join(VERBS)}")
    return f"django_mqlite.{verb}_queue"


def has_queue_permission(user: Any, verb: str, queue: str | None) -> bool:
    """May ``user`` do ``verb`` to ``queue``? ``queue=None`` asks about every queue
    (the model permission alone). An inactive or anonymous user may do nothing."""
    perm = permission_name(verb)
    if user is None or not getattr(user, "is_active", False):
        return False
    if user.has_perm(perm):
        return True
    if queue is None:
        return False
    obj = _queue_object(queue)
    return obj is not None and bool(user.has_perm(perm, obj))


def permitted_queues(user: Any, verb: str, names: Iterable[str]) -> list[str]:
    """The names among ``names`` that ``user`` may ``verb``, in the order given."""
    names = list(names)
    if has_queue_permission(user, verb, None):
        return names
    return [n for n in names if has_queue_permission(user, verb, n)]


def _queue_object(name: str) -> Any:
    from .models import Queue

    try:
        alias = database_of(name)
    except InvalidArgumentError:  # not a queue name: no such queue
        return None
    return Queue.objects.using(alias).filter(name=name).first()


def task_queue_names() -> set[str]:
    """The queues that a Django Tasks backend of this app serves (``tasks.support``:
    read from the settings when no Tasks framework is there to load)."""
    from .tasks.support import task_queue_names as served

    return served()


def accepts_remote_sends(queue: str) -> bool:
    """Whether a remote surface (HTTP, SQS) may send to ``queue``.

    A message on a Tasks queue runs code of the project, so such a queue takes sends
    only from Python (``task.enqueue``) unless ``MQLITE["OPEN_TASK_QUEUES"]`` lists it.
    """
    if queue in current().open_task_queues:
        return True
    return queue not in task_queue_names()
