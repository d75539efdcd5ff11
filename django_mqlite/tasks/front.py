"""The front of an open task queue: how an HTTP or SQS producer enqueues a task.

A queue that a Tasks backend serves takes sends from remote surfaces only when
``MQLITE["OPEN_TASK_QUEUES"]`` lists it (``permissions.accepts_remote_sends`` refuses
the others before anything gets here). A remote send to such a queue carries a task
call, ``{"task": path, "args": [...], "kwargs": {...}}`` (``backend`` optional), as a
JSON object or as JSON text, and :func:`remote_message` turns it into what the Tasks
backend would have enqueued, or refuses it with ``InvalidArgumentError`` before anything
is written:

- the task imports from an installed app (or a module already imported) as a Django
  ``Task`` of an ``MQLiteBackend`` that serves the queue;
- the task belongs to the queue: its ``queue_name`` is the queue, so a sender runs the
  tasks of the queue it may send to, never any other task of the project;
- the arguments are JSON, the priority one Django accepts;
- the envelope is then signed (``signing``) for this queue, with the task's own timeout
  (a ``timeout`` property of the sender is replaced) and the message's priority, and
  the message's subject marks it as a task (``get_result`` finds it by its seq);
- a task declared with a unique key (``tasks.unique``) gets it, computed from the
  call's arguments, unless the sender gave a ``unique_key`` of its own.

Every remote send path calls :func:`remote_message` for every message; to any other
queue it returns the message unchanged. Redrives, forwards and moves into a task queue
are not sends: they go through no front, and a worker refuses what they bring unless it
was signed for that queue.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..conf import current
from ..engine.types import OutMessage
from ..exceptions import InvalidArgumentError

CALL_FIELDS = frozenset({"task", "args", "kwargs", "backend"})


def remote_message(queue: str, out: OutMessage) -> OutMessage:
    """``out`` as a remote surface must store it on ``queue``: unchanged, unless the
    queue is an open task queue, where it is a validated, signed task envelope."""
    if queue not in current().open_task_queues:
        return out
    from ..permissions import task_queue_names

    if queue not in task_queue_names():
        return out
    return _task_message(queue, out)


def _call(body: Any) -> dict[str, Any]:
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body, parse_constant=_refuse)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise InvalidArgumentError(f"a task call must be a JSON object: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidArgumentError(
            'a task call must be a JSON object {"task": path, "args": [...], "kwargs": {...}}'
        )
    unknown = set(body) - CALL_FIELDS
    if unknown:
        raise InvalidArgumentError(
            f"unknown task call field(s): {', '.join(sorted(map(str, unknown)))}"[:500]
        )
    if not isinstance(body.get("task"), str):
        raise InvalidArgumentError("'task' must be a task's dotted path")
    if not isinstance(body.get("args", []), list):
        raise InvalidArgumentError("'args' must be a list")
    if not isinstance(body.get("kwargs", {}), dict):
        raise InvalidArgumentError("'kwargs' must be an object")
    if not isinstance(body.get("backend", ""), str):
        raise InvalidArgumentError("'backend' must be a string")
    return body


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _task_message(queue: str, out: OutMessage) -> OutMessage:
    from .backend import MQLiteBackend, envelope
    from .compat import InvalidTaskError, task_backends
    from .envelope import resolve
    from .results import SUBJECT_PREFIX
    from .signing import seal
    from .unique import send_options

    call = _call(out.body)
    path = call["task"]
    task = resolve(path)
    if task is None:
        raise InvalidArgumentError(f"{path[:200]!r} is not a task of this project")
    if task.queue_name != queue:
        raise InvalidArgumentError(
            f"task {path[:200]!r} belongs to queue {task.queue_name!r}, not {queue!r}"
        )
    alias = call.get("backend") or task.backend
    backend = task_backends[alias] if alias in task_backends.settings else None
    if not isinstance(backend, MQLiteBackend) or queue not in backend.queues:
        raise InvalidArgumentError(f"Tasks backend {alias[:100]!r} does not serve {queue!r}")
    unique: dict[str, Any] = {}
    try:
        task = dataclasses.replace(task, priority=out.priority, backend=alias)
        backend.validate_task(task)
        body = envelope(task, call.get("args", []), call.get("kwargs", {}), alias)
    except (InvalidTaskError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"task {path[:200]!r}: {exc}"[:500]) from None
    if out.unique_key is None:  # the task's own key, unless the sender gave one
        try:
            unique = send_options(task, call.get("args", []), call.get("kwargs", {}))
        except Exception as exc:  # the project's key function, on a remote call's arguments
            raise InvalidArgumentError(
                f"task {path[:200]!r}: its unique_key function failed: {exc!r}"[:500]
            ) from None
    _, _, timeout = backend.policy(task)
    properties = {k: v for k, v in (out.properties or {}).items() if k != "timeout"}
    if timeout is not None:
        properties["timeout"] = timeout
    seal(body, timeout=timeout, priority=out.priority)
    return dataclasses.replace(
        out,
        body=body,
        content_type="application/json",
        properties=properties or None,
        subject=f"{SUBJECT_PREFIX}{task.module_path}"[:256],  # what get_result looks for
        **unique,
    )
