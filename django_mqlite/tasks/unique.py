"""Unique tasks: a task's unique key and conflict policy, the Tasks form of
``mq.send(..., unique_key=, on_conflict=)``.

::

    @task(queue_name="reports", unique_key=lambda report_id: f"report-{report_id}")
    def refresh_report(report_id: int) -> None: ...

    refresh_report.enqueue(7)  # a second enqueue while it waits or runs is skipped
    refresh_report.using(unique_key="all-reports", on_conflict="replace").enqueue(7)

``unique_key`` is text, or ``callable(*args, **kwargs) -> text | None`` called with the
enqueue's arguments (None: this call has no key); ``on_conflict`` and ``unique_while``
are the engine's (``admission.ON_CONFLICT``, default ``"skip"``; ``UNIQUE_WHILE``,
default ``"live"``: held until the task has finished, or ``"pending"``: until a worker
starts it). Given through ``@task(...)`` (Django 6.1 and the backport pass extra
keywords to ``MQLiteTask``) or per call through ``task.using(...)``. The engine's
rules apply unchanged (the database enforces them; ``engine/unique.py``): the key is
the queue's, whatever task holds it.

The options are checked when the task is made (``@task`` or ``using()``: ``InvalidTask``
for an unknown policy, a policy without a key, a key that is not text of at most
``MAX_UNIQUE_KEY`` characters); a key computed at enqueue is checked by admission like
any send's (``InvalidArgumentError``, nothing written).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine import admission
from ..exceptions import InvalidArgumentError
from .compat import InvalidTaskError, Task

UniqueKey = str | Callable[..., str | None]


def check(task: Task) -> None:
    """Refuse a task whose unique options the engine would refuse at every enqueue."""
    key = getattr(task, "unique_key", None)
    on_conflict = getattr(task, "on_conflict", None)
    unique_while = getattr(task, "unique_while", None)
    try:
        admission.unique_key("callable" if callable(key) else key, on_conflict, unique_while)
    except InvalidArgumentError as exc:
        raise InvalidTaskError(f"task {task.module_path}: {exc}") from None


def send_options(task: Task, args: Any, kwargs: Any) -> dict[str, Any]:
    """The ``send`` keywords of one call of ``task``: its key (computed from the call's
    arguments when it is a callable) and policy; empty when the call has no key."""
    key = getattr(task, "unique_key", None)
    if callable(key):
        key = key(*args, **kwargs)
    if key is None:
        return {}
    return {
        "unique_key": key,
        "on_conflict": getattr(task, "on_conflict", None),
        "unique_while": getattr(task, "unique_while", None),
    }
