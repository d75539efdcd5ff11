"""What a worker accepts as a task: a signed envelope, for a task of this queue.

A message on a Tasks queue names code to run, so a worker runs it only when all of
this holds, and otherwise dead-letters it at once (reason ``InvalidTaskMessage``, no
retries, nothing imported or run) with a description that says what is wrong:

- the body is a JSON object ``{"task": path, "args": [...], "kwargs": {...},
  "backend": alias, "queue": name, "signature": hex}`` (and ``run_after``, epoch ms,
  when the call had one), and ``properties.timeout``, when present, is a number of
  seconds in (0, ``MAX_TIMEOUT_S``];
- ``signature`` verifies (``signing``: HMAC keyed from ``SECRET_KEY`` or one of
  ``SECRET_KEY_FALLBACKS``, over the queue, backend, task, arguments, ``run_after``,
  timeout and priority), so the envelope was written by the Tasks backend or by the
  front of an ``OPEN_TASK_QUEUES`` queue, and nothing in it changed since;
- the queue it was signed for is the queue the message came in on: a signed envelope
  moved to another queue (redrive, forward, move) does not run there;
- ``backend`` names an ``MQLiteBackend`` whose ``QUEUES`` include that queue (a backend
  without ``QUEUES`` takes any queue, as Django has it);
- ``task`` imports, from an installed app (or a module already imported), as a Django
  ``Task``.

Nothing is imported before the signature and the queue are checked.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.signals import setting_changed

from ..engine.received import Received
from . import signing
from .backend import MAX_TIMEOUT_S, MQLiteBackend
from .compat import Task, task_backends
from .results import resolve_task, restore_task

INVALID_REASON = "InvalidTaskMessage"
ENVELOPE_FIELDS = frozenset(
    {"task", "args", "kwargs", "backend", "queue", "run_after", "signature"}
)


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
        body = _DECODER.decode(msg.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidTaskMessage(f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidTaskMessage("body is not a JSON object")
    return body


def _verify(msg: Received, body: dict[str, Any]) -> None:
    """The signature first, then the queue: nothing else is looked at before."""
    signature = body.get("signature")
    if signature is None:
        raise InvalidTaskMessage(
            "the task envelope is not signed: only the Tasks backend (or the front of a "
            "queue in OPEN_TASK_QUEUES) writes task messages; envelopes queued before "
            "signing were unsigned"
        )
    timeout = (msg.properties or {}).get("timeout")
    try:
        data = signing.envelope_payload(body, timeout=timeout, priority=msg.priority)
    except (TypeError, ValueError, RecursionError):  # not JSON-shaped, cannot be signed
        data = b""
    if not data or not signing.verify(data, signature):
        raise InvalidTaskMessage(
            "the task envelope's signature does not verify: changed after it was "
            "signed, or signed with a key that is neither SECRET_KEY nor in "
            "SECRET_KEY_FALLBACKS"
        )
    if body.get("queue") != msg.queue:
        raise InvalidTaskMessage(
            f"the task envelope was signed for queue {str(body.get('queue'))[:100]!r}, "
            f"not {msg.queue!r}: a task runs only on the queue it was enqueued to"
        )


def _check_shape(body: dict[str, Any]) -> None:
    unknown = set(body) - ENVELOPE_FIELDS
    if unknown:
        raise InvalidTaskMessage(f"unknown envelope field(s): {', '.join(sorted(unknown))}"[:500])
    if not isinstance(body.get("task"), str):
        raise InvalidTaskMessage("'task' must be a dotted path")
    if not isinstance(body.get("args"), list):
        raise InvalidTaskMessage("'args' must be a list")
    if not isinstance(body.get("kwargs"), dict):
        raise InvalidTaskMessage("'kwargs' must be an object")
    if not isinstance(body.get("backend"), str):
        raise InvalidTaskMessage("'backend' must be a string")
    run_after = body.get("run_after")
    if run_after is not None and (
        not isinstance(run_after, int) or isinstance(run_after, bool) or not 0 <= run_after < 2**53
    ):
        raise InvalidTaskMessage("'run_after' must be epoch milliseconds")


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: Built once: ``json.loads`` with an option builds a decoder per call (per task).
_DECODER = json.JSONDecoder(parse_constant=_refuse)


def _backend(alias: str, queue: str) -> Any:
    if alias not in task_backends.settings:
        raise InvalidTaskMessage(f"no Tasks backend {alias!r}")
    backend = task_backends[alias]
    # A backend without QUEUES takes any queue name, as Django has it (system check
    # django_mqlite.E010 refuses it for runworker, which serves only listed queues).
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


def resolve(path: str) -> Task | None:
    """The Task at ``path`` (``resolve_task``: only modules of installed apps, or
    modules already imported, are imported), kept once found."""
    found = _resolved.get(path)
    if found is not None:
        return found
    found = resolve_task(path)
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
    _verify(msg, body)
    _check_shape(body)
    # The backend the call was made with (``task.using(backend=...)`` may differ from the
    # task's own): it must be one of ours and serve the queue the message came in on.
    backend = _backend(body["backend"], msg.queue)
    path = body["task"]
    task = resolve(path)
    if task is None:
        raise InvalidTaskMessage(f"{path[:200]!r} is not a task this worker knows")
    try:
        task = _restore(task, body, msg.priority, msg.queue)
    except Exception as exc:  # the backend's validation refuses this call
        raise InvalidTaskMessage(f"task {path[:200]!r}: {exc}"[:500]) from None
    return task, backend, body["args"], body["kwargs"]
