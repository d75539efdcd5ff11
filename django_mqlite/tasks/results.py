"""Reading a task's result back from its message row, from any process.

The row's state gives the status (waiting states read READY, ``locked`` RUNNING,
``completed`` SUCCESSFUL, ``dead_lettered`` FAILED); its ``attempts`` history gives the
worker ids, start times and every attempt's error; ``result`` holds the return value
while the queue keeps results.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.module_loading import import_string

from ..engine.clock import from_ms
from .compat import Task, TaskError, TaskResult, TaskResultStatus

if TYPE_CHECKING:
    from .backend import MQLiteBackend

#: Subject prefix that marks a message as a task (and names its function).
SUBJECT_PREFIX = "task:"


@dataclasses.dataclass(frozen=True, kw_only=True)
class MQLiteTaskResult(TaskResult):  # type: ignore[misc,unused-ignore]
    """Django's ``TaskResult`` with what this backend adds: ``progress`` (the JSON value
    the task last reported with ``context.set_progress``, None for none) and ``wait``.
    ``refresh()`` reloads it too."""

    progress: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        # The base class's slot of this init=False field is left unset by a subclass's
        # generated __init__.
        if not hasattr(self, "_return_value"):
            object.__setattr__(self, "_return_value", None)

    def refresh(self) -> None:
        fresh = self.task.get_backend().get_result(self.id)
        for f in dataclasses.fields(fresh):
            if f.name not in ("task", "id", "args", "kwargs", "backend"):
                object.__setattr__(self, f.name, getattr(fresh, f.name))

    async def arefresh(self) -> None:
        from asgiref.sync import sync_to_async

        await sync_to_async(self.refresh, thread_sensitive=True)()

    def wait(self, timeout: float | None = None) -> MQLiteTaskResult:
        """Block until the task has finished (SUCCESSFUL or FAILED), at most ``timeout``
        seconds (None: no limit), then ``refresh()`` and return this result. Raises
        ``TimeoutError`` when it has not finished by then. It waits with ``mq.wait``
        (woken by the settlement that finishes the task, with a slow safety poll), never
        a busy loop; a retry in between is not the end. Outside a transaction only."""
        from ..engine import waiting

        backend: Any = self.task.get_backend()  # an MQLiteBackend: it made this result
        found = locate(backend, self.id)
        if found is not None:
            queue, seq = found
            using = backend.database_for(queue)
            if timeout is None:
                while waiting.wait(queue, seq, WAIT_CHUNK_S, using=using) is None:
                    pass
            else:
                waiting.wait(queue, seq, timeout, using=using)
        self.refresh()
        if not self.is_finished:
            raise TimeoutError(f"task {self.id} has not finished after {timeout}s")
        return self


#: How long one round of ``MQLiteTaskResult.wait(None)`` waits before it waits again.
WAIT_CHUNK_S = 3600.0


class TaskCancelledError(Exception):
    """The error a cancelled task reads as having failed with."""


class TaskDeadLetteredError(Exception):
    """The error of a task dead-lettered for a reason other than its own exceptions
    (TTL expiry, an operator's reject, a worker lost on its last attempt)."""


def parse_id(result_id: object) -> int | None:
    """A result id is a message seq in decimal (``"<seq>@<alias>"`` for a task on a
    queue declared on another database than the backend's); anything else is no id."""
    if isinstance(result_id, str) and "@" in result_id:
        result_id = result_id.split("@", 1)[0]
    if not isinstance(result_id, str) or not result_id.isascii() or not result_id.isdigit():
        return None
    if len(result_id) > 19:
        return None
    seq = int(result_id)
    return seq if 0 < seq < 2**63 else None


STATUS_OF_STATE = {
    "active": TaskResultStatus.READY,
    "scheduled": TaskResultStatus.READY,
    "waiting": TaskResultStatus.READY,
    "deferred": TaskResultStatus.READY,
    "locked": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "dead_lettered": TaskResultStatus.FAILED,
}
COLUMNS = (
    "progress",
    "seq",
    "queue__name",
    "state",
    "subject",
    "body",
    "priority",
    "enqueued_at",
    "visible_at",
    "completed_at",
    "dead_lettered_at",
    "dead_letter_reason",
    "dead_letter_description",
    "last_error",
    "result",
    "attempts",
    "locked_by",
)


def _row(backend: MQLiteBackend, result_id: str, columns: tuple[str, ...]) -> Any:
    from ..models import Message

    seq = parse_id(result_id)
    alias = backend.database or _default_alias()
    if "@" in result_id:
        alias = result_id.split("@", 1)[1]
        if alias not in settings.DATABASES:
            return None
    if seq is None:
        return None
    row = (
        Message.objects.using(alias)
        .filter(seq=seq, subject__startswith=SUBJECT_PREFIX)
        .values(*columns)
        .first()
    )
    if row is None or (backend.queues and row["queue__name"] not in backend.queues):
        return None
    return row


def _default_alias() -> str:
    from ..conf import current

    return current().database


def locate(backend: MQLiteBackend, result_id: str) -> tuple[str, int] | None:
    row = _row(backend, result_id, ("seq", "queue__name"))
    return None if row is None else (row["queue__name"], row["seq"])


def resolve_task(path: str) -> Task | None:
    """The Task object a message names, or None when it cannot be imported. Only
    modules of installed apps (or modules already imported) are imported: a message,
    whoever wrote it, never makes a process import arbitrary code."""
    if not isinstance(path, str) or not importable(path.rpartition(".")[0]):
        return None
    try:
        found = import_string(path)
    except Exception:  # importing a broken module is a bad message, not a crash
        return None
    return found if isinstance(found, Task) else None


def importable(module: str) -> bool:
    """Whether a task path may import ``module``: it is an installed app's module (or
    the app itself), or it is already imported."""
    from django.apps import apps

    if not module:
        return False
    if module in sys.modules:
        return True
    return any(module == c.name or module.startswith(c.name + ".") for c in apps.get_app_configs())


def restore_task(task: Task, body: dict[str, Any], *, priority: int, queue_name: str) -> Task:
    """The task as it was enqueued: the imported Task with the priority, queue, backend
    and ``run_after`` the call was made with (``using()`` may have changed any of them)."""
    changes: dict[str, Any] = {"priority": priority, "queue_name": queue_name}
    if body.get("backend"):
        changes["backend"] = body["backend"]
    run_after = body.get("run_after")
    if isinstance(run_after, int):
        changes["run_after"] = from_ms(run_after)
    return dataclasses.replace(task, **changes)


def load_result(backend: MQLiteBackend, result_id: str) -> TaskResult | None:
    import json

    row = _row(backend, result_id, COLUMNS)
    if row is None:
        return None
    try:
        body = json.loads(bytes(row["body"]))
    except ValueError:
        return None
    task = resolve_task(body.get("task", ""))
    if task is None:
        return None
    task = restore_task(task, body, priority=row["priority"], queue_name=row["queue__name"])
    if "backend" not in body:
        task = dataclasses.replace(task, backend=backend.alias)
    state = row["state"]
    status = STATUS_OF_STATE[state]
    finished = row["completed_at"] if state == "completed" else row["dead_lettered_at"]
    history = list(row["attempts"] or [])
    if state == "locked":
        # The running attempt is recorded when it is settled; until then the locked row
        # itself says who runs it and since when (a claim stamps visible_at).
        worker = "" if row["locked_by"] is None else str(row["locked_by"])
        history.append({"worker": worker, "started_at": row["visible_at"], "error": None})
    extra = None
    if status == TaskResultStatus.FAILED:
        extra = _burial_error(row, history)
    return build_result(
        task,
        str(row["seq"]),
        status,
        enqueued_at_ms=row["enqueued_at"],
        history=history,
        finished_at_ms=finished if status in _FINAL else None,
        value=row["result"],
        args=body.get("args", []),
        kwargs=body.get("kwargs", {}),
        extra_error=extra,
        progress=row["progress"],
    )


_FINAL = (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED)


def _burial_error(row: dict[str, Any], history: list[dict[str, Any]]) -> TaskError | None:
    """A FAILED task whose own attempts do not explain the failure still reads with an
    error: its cancellation, or the dead-letter reason."""

    reason = row["dead_letter_reason"] or ""
    if reason == "Cancelled":
        cls: type[Exception] = TaskCancelledError
    elif history and history[-1].get("error"):
        return None
    else:
        cls = TaskDeadLetteredError
    text = f"{reason}: {row['dead_letter_description'] or ''}".rstrip(": ")
    if row["last_error"] and cls is TaskDeadLetteredError:
        text = f"{text}\n{row['last_error']}"
    return TaskError(exception_class_path=f"{cls.__module__}.{cls.__qualname__}", traceback=text)


def build_result(
    task: Task,
    result_id: str,
    status: Any,
    *,
    enqueued_at_ms: int | None,
    history: list[dict[str, Any]],
    finished_at_ms: int | None,
    value: Any,
    args: list[Any],
    kwargs: dict[str, Any],
    extra_error: TaskError | None = None,
    progress: Any = None,
) -> TaskResult:
    starts = [h["started_at"] for h in history if h.get("started_at") is not None]
    errors = [
        TaskError(exception_class_path=h["error"]["class"], traceback=h["error"]["traceback"])
        for h in history
        if h.get("error")
    ]
    if extra_error is not None:
        errors.append(extra_error)
    first = from_ms(min(starts)) if starts else None
    last = from_ms(max(starts)) if len(starts) > 1 else first  # one attempt: the same
    result: TaskResult[Any, Any] = MQLiteTaskResult(
        progress=progress,
        task=task,
        id=result_id,
        status=status,
        enqueued_at=None if enqueued_at_ms is None else from_ms(enqueued_at_ms),
        started_at=first,
        last_attempted_at=last,
        finished_at=None if finished_at_ms is None else from_ms(finished_at_ms),
        args=args,
        kwargs=kwargs,
        backend=task.backend,
        errors=errors,
        worker_ids=[str(h.get("worker", "")) for h in history],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", value)
    return result


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def succeeded(running: TaskResult, value: Any, finished_at_ms: int) -> TaskResult:
    """The SUCCESSFUL result of the attempt whose RUNNING result (``build_result``'s) is
    ``running``: what ``build_result`` builds from the same history, since a success
    adds no error and no attempt, with the status, the finish time and the value. A
    copy made field by field, without the dataclass's ``__init__`` (which sets every
    field through ``object.__setattr__`` and normalizes the args and kwargs again, half
    the cost of a task's two results); ``running`` is left as it was, and the copy's
    lists are its own."""
    cls = type(running)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    result = object.__new__(cls)
    for name in names:
        object.__setattr__(result, name, getattr(running, name))
    object.__setattr__(result, "errors", list(running.errors))
    object.__setattr__(result, "worker_ids", list(running.worker_ids))
    object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    object.__setattr__(result, "finished_at", from_ms(finished_at_ms))
    object.__setattr__(result, "_return_value", value)
    return result
