"""Tasks that subscribe to topics: ``mq.subscribe_task(topic, task, filter=None)``.

A queue that a Tasks backend serves runs only envelopes its backend signed, so a publish
cannot put copies of a message there (any body could name any code). Instead a task
subscribes: the subscription records the task's dotted path on the task's queue, and
each publish its filter takes is **enqueued as a call of that task** by the Tasks
backend, exactly as ``task.enqueue`` would (the signed envelope, the task's timeout and
priority, ``get_result``), in the publisher's transaction. The call's one argument is
the event: ``{"topic": ..., "subject": ..., "properties": ..., "body": ...}``, the body
as its JSON value (a JSON body decoded, a text body as a string; a binary body cannot
be a task argument and fails the publish with ``InvalidArgumentError``, nothing written).

A plain subscription (``mq.subscribe``) of a Tasks queue is refused with a pointer
here; over HTTP, a topic with a task subscription is published only when its queue is
listed in ``MQLITE["OPEN_TASK_QUEUES"]`` (the rule of a remote send to that queue).

Every surface that subscribes a task (Python, HTTP, ``manage.py mqlite subscribe
--task``, a declaration in ``MQLITE["TOPICS"]`` and its system check) goes through
``task_of``: a dotted path from a request or a setting names a task only by the rule of
a task message, so it never makes the process import code outside the installed apps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine import topics
from ..engine.rendering import body_view
from ..engine.types import OutMessage, Subscription
from ..exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from .compat import Task


def subscribe_task(
    topic: str,
    task: Any,
    filter: Any = None,
    *,
    queue: str | None = None,
    using: str | None = None,
) -> Subscription:
    """Subscribe ``task`` (a Task, or its dotted path) to ``topic``: each publish that
    ``filter`` takes enqueues ``task(event)`` on the task's queue. Replaces the queue's
    subscription to the topic if it has one (one task per queue and topic). ``queue``,
    when given (a surface that names the subscribed queue), must be the task's queue."""
    found = task_of(task, queue)
    return topics.subscribe(topic, found.queue_name, filter, using=using, task=found.module_path)


def task_of(task: Any, queue: str | None = None) -> Task:
    """The Task a subscription of ``task`` (a Task, or its dotted path) runs, or
    InvalidArgumentError. The rule every surface shares:

    - the path resolves by the rule of a task message (``envelope.resolve``): only
      modules of installed apps, or modules already imported, are imported, and what
      the path names must be a Django ``Task`` (decorated with ``@task``), so a path
      from a request or a setting never makes the process import other code;
    - its backend is a django-mqlite backend that serves the task's queue;
    - its queue is ``queue`` when one is given.

    Nothing is written; the system check of ``MQLITE["TOPICS"]`` asks this too."""
    try:
        from .backend import MQLiteBackend
        from .compat import task_backends
        from .envelope import resolve
    except ImportError:  # neither django.tasks nor the django-tasks backport
        raise InvalidArgumentError(
            "a task subscription needs Django's Tasks framework (django.tasks, or the "
            "django-tasks backport)"
        ) from None

    path = task if isinstance(task, str) else getattr(task, "module_path", None)
    found = resolve(path) if isinstance(path, str) else None
    if found is None:
        raise InvalidArgumentError(
            f"{str(path)[:200]!r} is not a task of this project (a Django task of an "
            "installed app, by its dotted path)"
        )
    backend = task_backends[found.backend] if found.backend in task_backends.settings else None
    if not isinstance(backend, MQLiteBackend) or found.queue_name not in backend.queues:
        raise InvalidArgumentError(
            f"task {path!r} runs on Tasks backend {found.backend!r}, which is no "
            f"django-mqlite backend serving queue {found.queue_name!r}"
        )
    if queue is not None and found.queue_name != queue:
        raise InvalidArgumentError(
            f"task {path!r} runs on queue {found.queue_name!r}, not {queue!r}: a task "
            "subscription is a subscription of the task's own queue"
        )
    return found


def event(topic: str, msg: OutMessage) -> dict[str, Any]:
    """The argument a task subscription's task is called with."""
    body = msg.body
    if isinstance(body, bytes | bytearray | memoryview):
        view = body_view(bytes(body), msg.content_type)
        body = view.value
        if view.kind == "binary":
            raise InvalidArgumentError(
                f"topic {topic!r} has a task subscription: a task argument is JSON, and "
                "this body is binary"
            )
    return {"topic": topic, "subject": msg.subject, "properties": msg.properties, "body": body}


class Delivery:
    """``engine.topics.TaskDelivery`` for this project's Tasks backends."""

    def refusal(self, queue: str) -> str | None:
        from ..permissions import task_queue_names

        if queue not in task_queue_names():
            return None
        return (
            f"queue {queue!r} runs Django tasks and takes no copies of published messages; "
            "subscribe a task of it with mq.subscribe_task(topic, task, filter)"
        )

    def deliver(self, topic: str, task: str, msg: OutMessage, using: str) -> None:
        from .compat import InvalidTaskError
        from .envelope import resolve

        found = resolve(task)
        if found is None:
            raise InvalidArgumentError(
                f"task {task[:200]!r} of a subscription to {topic!r} is not a task of this project"
            )
        try:
            found.enqueue(event(topic, msg))
        except (InvalidTaskError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"task {task[:200]!r}: {exc}"[:500]) from None

    def subscribe(
        self, topic: str, task: str, filter: Any, *, queue: str, using: str
    ) -> Subscription:
        return subscribe_task(topic, task, filter, queue=queue, using=using)


def install() -> None:
    topics.task_delivery = Delivery()
