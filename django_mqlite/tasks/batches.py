"""Django Tasks in batches: a task enqueued inside ``with mq.batch(...)`` joins it (the
backend's ``enqueue``), and ``callback(task, *args, **kwargs)`` makes a call of a task a
batch's callback, enqueued with the signed envelope ``enqueue`` would send::

    from django_mqlite.tasks.batches import callback

    with mq.batch(on_success=callback(build_report, order.pk)):
        for line in order.lines.all():
            make_thumbnail.enqueue(line.pk)
"""

from __future__ import annotations

from typing import Any

from ..engine.types import Callback
from ..exceptions import InvalidArgumentError
from .compat import Task, task_backends


def callback(task: Task, *args: Any, **kwargs: Any) -> Callback:
    """A call of ``task`` (a task of a django-mqlite backend) as a batch callback. The
    envelope is built and signed now (so arguments that are not JSON are refused now,
    with nothing written), and the task's queue is created if this is its first use."""
    from .backend import MQLiteBackend

    backend = task_backends[task.backend]
    if not isinstance(backend, MQLiteBackend):
        raise InvalidArgumentError(
            f"task {task.module_path} runs on backend {task.backend!r}, not a django-mqlite one"
        )
    body, options = backend.message(task, args, kwargs)
    if options.pop("scheduled_at") is not None:
        raise InvalidArgumentError("a callback task cannot have run_after (use a delay)")
    backend.ensure_queue(task.queue_name)
    return Callback(task.queue_name, body, **options)
