"""What a worker accepts as a task: a valid envelope, for a task of this queue.

A message on a Tasks queue names code to run, so a worker runs it only when all of
this holds, and otherwise dead-letters it at once (reason ``InvalidTaskMessage``, no
retries) with a description that says what is wrong:

- the body is a JSON object ``{"task": path, "args": [...], "kwargs": {...},
  "backend": alias}`` (``backend`` optional), and ``properties.timeout``, when present,
  is a number of seconds in (0, ``MAX_TIMEOUT_S``];
- ``backend`` names an ``MQLiteBackend`` that serves the queue the message came in on;
- ``task`` imports as a Django ``Task`` of that backend;
- the task belongs to that queue: its ``queue_name`` is the queue, or the queue is
  closed to remote senders (not in ``MQLITE["OPEN_TASK_QUEUES"]``), so only the
  project's own code can have enqueued it there (``task.using(queue_name=...)``).

A queue open to HTTP senders therefore runs only its own tasks, never any task of the
project with arguments a sender chose.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from django.core.signals import setting_changed

from ..conf import mqlite_settings
from ..engine.received import Received
from .backend import MAX_TIMEOUT_S, MQLiteBackend
from .compat import Task, task_backends
from .results import resolve_task, restore_task

INVALID_REASON = "InvalidTaskMessage"


class InvalidTaskMessage(Exception):  # noqa: N818 - reads as what the message is
    """The message is not a task this worker may run on this queue."""


def message_timeout(msg: Received) -> float | None:
    """``properties.timeout`` when it is a sane number of seconds, else None."""
    value = (msg.properties or {}).get("timeout")
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT_S else None


def _body(msg: Received) -> dict[str, Any]:
    try:
        body = json.loads(msg.body.decode("utf-8"), parse_constant=_refuse)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidTaskMessage(f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidTaskMessage("body is not a JSON object")
    unknown = set(body) - {"task", "args", "kwargs", "backend", "run_after"}
    if unknown:
        raise InvalidTaskMessage(f"unknown envelope field(s): {', '.join(sorted(unknown))}")
    if not isinstance(body.get("task"), str):
        raise InvalidTaskMessage("'task' must be a dotted path")
    if not isinstance(body.get("args", []), list):
        raise InvalidTaskMessage("'args' must be a list")
    kwargs = body.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise InvalidTaskMessage("'kwargs' must be an object")
    if not isinstance(body.get("backend", ""), str):
        raise InvalidTaskMessage("'backend' must be a string")
    run_after = body.get("run_after")
    if run_after is not None and (
        not isinstance(run_after, int) or isinstance(run_after, bool) or not 0 <= run_after < 2**53
    ):
        raise InvalidTaskMessage("'run_after' must be epoch milliseconds")
    return body


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _backend(alias: str, queue: str) -> Any:
    if alias not in task_backends.settings:
        raise InvalidTaskMessage(f"no Tasks backend {alias!r}")
    backend = task_backends[alias]
    # A backend without QUEUES takes any queue name (as Django has it); a worker still
    # runs tasks only on the queues it registered the task runner for.
    if not isinstance(backend, MQLiteBackend) or (backend.queues and queue not in backend.queues):
        raise InvalidTaskMessage(f"Tasks backend {alias!r} does not serve queue {queue!r}")
    return backend


#: Paths already resolved to a Task in this process, and the Tasks restored from them
#: (a worker sees the same few kinds again and again). Only successes are kept, so a
#: path refused now (its module not yet imported) is looked at afresh next time; both
#: are emptied when the settings change.
_resolved: dict[str, Task] = {}
_restored: dict[tuple[Any, ...], Task] = {}
CACHE_MAX = 1024


def _resolve(path: str) -> Task | None:
    """The Task at ``path``, importing only modules of installed apps (or modules
    already imported): a message never makes a worker import arbitrary code."""
    found = _resolved.get(path)
    if found is not None:
        return found
    from django.apps import apps

    module = path.rpartition(".")[0]
    if not module:
        return None
    inside_app = any(
        module == c.name or module.startswith(c.name + ".") for c in apps.get_app_configs()
    )
    if not inside_app and module not in sys.modules:
        return None
    try:
        found = resolve_task(path)
    except Exception:  # importing a broken module is a bad message, not a crashed worker
        return None
    if found is not None:
        if len(_resolved) >= CACHE_MAX:
            _resolved.clear()
        _resolved[path] = found
    return found


def _restore(task: Task, body: dict[str, Any], priority: int, queue: str) -> Task:
    """``restore_task``, kept per (task, priority, queue, backend): building a Task runs
    its backend's validation, the same for every message of a kind. A task with a
    ``run_after`` (one time each) is not kept."""
    if body.get("run_after") is not None:
        return restore_task(task, body, priority=priority, queue_name=queue)
    key = (task, priority, queue, body.get("backend"))
    try:
        found = _restored.get(key)
    except TypeError:  # a Task subclass with an unhashable field
        return restore_task(task, body, priority=priority, queue_name=queue)
    if found is None:
        found = restore_task(task, body, priority=priority, queue_name=queue)
        if len(_restored) >= CACHE_MAX:
            _restored.clear()
        _restored[key] = found
    return found


def clear_caches(**kwargs: Any) -> None:
    """Forget resolved and restored tasks (connected to ``setting_changed``)."""
    _resolved.clear()
    _restored.clear()


setting_changed.connect(clear_caches)


def load(msg: Received) -> tuple[Task, Any, list[Any], dict[str, Any]]:
    """(task, backend, args, kwargs) of a valid task message; InvalidTaskMessage else."""
    props = msg.properties or {}
    if "timeout" in props and message_timeout(msg) is None:
        raise InvalidTaskMessage(
            f"properties.timeout must be seconds in (0, {MAX_TIMEOUT_S:g}], "
            f"not {props['timeout']!r}"[:500]
        )
    body = _body(msg)
    path = body["task"]
    task = _resolve(path)
    if task is None:
        raise InvalidTaskMessage(f"{path[:200]!r} is not a task this worker knows")
    # The backend the call was made with (``task.using(backend=...)`` may differ from the
    # task's own): it must be one of ours and serve the queue the message came in on.
    backend = _backend(body.get("backend") or task.backend, msg.queue)
    own = task.queue_name == msg.queue
    if not own and msg.queue in set(mqlite_settings.OPEN_TASK_QUEUES or ()):
        raise InvalidTaskMessage(
            f"task {path!r} belongs to queue {task.queue_name!r}, not {msg.queue!r}"
        )
    task = _restore(task, body, msg.priority, msg.queue)
    return task, backend, body.get("args", []), body.get("kwargs", {})
