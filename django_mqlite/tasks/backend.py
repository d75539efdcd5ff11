"""The Django Tasks backend: ``TASKS = {"default": {"BACKEND":
"django_mqlite.backends.MQLiteBackend", "QUEUES": ["default"], "OPTIONS": {...}}}``.

A task is a message on the mqlite queue named like the task's ``queue_name``; its result
id is the message's seq. Enqueueing is a row insert in the caller's transaction (the
outbox); ``runworker`` runs it (``task_runner``); ``get_result`` reads the row from any
process. Constructing the backend touches neither models nor the database: Django
builds it when a ``@task`` module is imported.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError
from django.utils import timezone

from ..engine import clock, databases
from ..engine.batch import current as current_batch
from ..exceptions import (
    MessageFinishedError,
    MessageNotFoundError,
    QueueExistsError,
    QueueNotFoundError,
)
from .compat import (
    BaseTaskBackend,
    InvalidTaskError,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_enqueued,
)
from .dependencies import references
from .results import (
    SUBJECT_PREFIX,
    MQLiteTaskResult,
    TaskCancelledError,
    TaskDeadLetteredError,
    load_result,
    locate,
    parse_id,
)
from .signing import seal
from .unique import UniqueKey

DEFAULT_KEEP_RESULTS = 7 * 86400.0
#: The longest timeout a task (or a task message) may carry: a week.
MAX_TIMEOUT_S = 7 * 86400.0
OPTION_NAMES = ("database", "max_attempts", "backoff", "timeout", "keep_results", "queue_options")

Backoff = float | Callable[[int], float]


@dataclass(frozen=True, slots=True, kw_only=True)
class MQLiteTask(Task):  # type: ignore[misc,unused-ignore]
    """A task with a retry and timeout policy: ``@task(max_attempts=3, backoff=2,
    timeout=60)``. ``None`` takes the backend's ``OPTIONS`` (then the defaults)."""

    #: Attempts before the task is FAILED (1: no retry).
    max_attempts: int | None = None
    #: Seconds before the first retry, doubling each time (with jitter, capped by
    #: ``MQLITE["RETRY_BACKOFF_CAP"]``), or ``callable(attempt) -> seconds``.
    backoff: Backoff | None = None
    #: Seconds an attempt may run before it counts as failed.
    timeout: float | None = None
    #: At a worker's shutdown, give the running attempt back to resume from its last
    #: checkpoint (``context.checkpoint``) instead of failing it (``context.stop_requested``).
    resumable: bool = False
    #: At most one live message of the task's queue per key (``tasks.unique``): text,
    #: or ``callable(*args, **kwargs) -> text | None`` called with each enqueue's
    #: arguments. None: no key.
    unique_key: UniqueKey | None = None
    #: What an enqueue whose key is held does: ``"skip"`` (default), ``"replace"`` or
    #: ``"debounce"``, as ``mq.send``'s ``on_conflict``.
    on_conflict: str | None = None
    #: How long a task holds its key: ``"live"`` (default: until it has finished) or
    #: ``"pending"`` (until a worker starts it), as ``mq.send``'s ``unique_while``.
    unique_while: str | None = None
    #: What the calls made through this copy wait for (``tasks.dependencies``): task
    #: results, result ids, and what ``mq.send``'s ``depends_on`` takes. Given per
    #: call, through ``task.using(depends_on=[...])``.
    depends_on: tuple[Any, ...] | None = None

    def using(
        self,
        *,
        unique_key: UniqueKey | None = None,
        on_conflict: str | None = None,
        unique_while: str | None = None,
        depends_on: Any = None,
        **changes: Any,
    ) -> MQLiteTask:
        """Django's ``using()`` (priority, queue_name, run_after, backend), and the
        task's unique key, conflict policy and key window, and what it waits for
        (``depends_on``: a list of task results, result ids, seqs or batches), for the
        calls made through the copy."""
        # Not super(): a slotted dataclass is a new class, which zero-argument super()
        # does not know.
        task: MQLiteTask = Task.using(self, **changes)  # type: ignore[assignment]
        extra: dict[str, Any] = {
            name: value
            for name, value in (
                ("unique_key", unique_key),
                ("on_conflict", on_conflict),
                ("unique_while", unique_while),
            )
            if value is not None
        }
        if depends_on is not None:
            if not isinstance(depends_on, list | tuple):
                raise InvalidTaskError(
                    "depends_on must be a list of task results, result ids, seqs or batches"
                )
            extra["depends_on"] = tuple(depends_on)
        return dataclasses.replace(task, **extra) if extra else task


def _database_of(alias: str) -> str | bool | None:
    """The database of the task queues of Tasks backend ``alias``; False when it is not
    a django-mqlite backend (``tasks.dependencies``)."""
    if alias not in task_backends.settings:
        return False
    backend = task_backends[alias]
    return backend.database if isinstance(backend, MQLiteBackend) else False


def _check_positive(value: object, what: str, *, allow_zero: bool = False) -> None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value > 0 or (allow_zero and value == 0))
    )
    if not ok:
        raise InvalidTaskError(f"{what} must be a positive number of seconds, not {value!r}")


def check_policy(max_attempts: object, backoff: object, timeout: object) -> None:
    """Validate a retry/timeout policy (a task's or the OPTIONS defaults)."""
    if max_attempts is not None and (
        not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1
    ):
        raise InvalidTaskError(f"max_attempts must be an integer >= 1, not {max_attempts!r}")
    if backoff is not None and not callable(backoff):
        _check_positive(backoff, "backoff", allow_zero=True)
    if timeout is not None:
        _check_positive(timeout, "timeout")
        if timeout > MAX_TIMEOUT_S:  # type: ignore[operator]
            raise InvalidTaskError(f"timeout must be at most {MAX_TIMEOUT_S:g} seconds")


class MQLiteBackend(BaseTaskBackend):  # type: ignore[misc,unused-ignore]
    """Django's Tasks framework on django-mqlite queues (Django 6.1+, or Django 5.2 with
    the ``django-tasks`` backport): ``TASKS = {"default": {"BACKEND":
    "django_mqlite.backends.MQLiteBackend", "QUEUES": ["default"], "OPTIONS": {...}}}``.

    ``enqueue`` writes a message in the caller's transaction, ``runworker`` runs it,
    ``get_result`` reads it back from any process; ``cancel`` dead-letters a task that
    has not started and asks a running one to stop. ``OPTIONS``: ``max_attempts``,
    ``backoff``, ``timeout``, ``keep_results``, ``queue_options``, ``database``.
    """

    task_class = MQLiteTask
    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        options = dict(self.options)
        unknown = set(options) - set(OPTION_NAMES)
        if unknown:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS']: unknown option(s) {', '.join(sorted(unknown))} "
                f"(known: {', '.join(OPTION_NAMES)})"
            )
        self.database: str | None = options.get("database")
        self.max_attempts: int = options.get("max_attempts", 1)
        self.backoff: Backoff | None = options.get("backoff")
        self.timeout: float | None = options.get("timeout")
        try:
            check_policy(self.max_attempts, self.backoff, self.timeout)
        except InvalidTaskError as exc:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]['OPTIONS']: {exc}") from None
        queue_options = dict(options.get("queue_options") or {})
        queue_options.setdefault("keep_results", options.get("keep_results", DEFAULT_KEEP_RESULTS))
        #: Options of ``mq.create_queue`` for task queues created on demand.
        self.queue_options: dict[str, Any] = queue_options

    # -- validation ---------------------------------------------------------------------

    def validate_task(self, task: Task) -> None:
        from . import unique

        super().validate_task(task)
        check_policy(
            getattr(task, "max_attempts", None),
            getattr(task, "backoff", None),
            getattr(task, "timeout", None),
        )
        unique.check(task)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        out = list(super().check(**kwargs))
        if not self.queues:
            out.append(
                checks.Error(
                    f"TASKS[{self.alias!r}] uses MQLiteBackend without QUEUES.",
                    hint='List the queue names, e.g. "QUEUES": ["default"]; workers serve them.',
                    id="django_mqlite.E010",
                )
            )
        declared = getattr(settings, "MQLITE", {}).get("QUEUES", {}) or {}
        for name in sorted(self.queues):
            options = declared.get(name) or {}
            # Without keep_results the declaration gets the backend's; an explicit
            # None (or 0) turns results off, which get_result() cannot live with.
            if "keep_results" in options and not options["keep_results"]:
                out.append(
                    checks.Warning(
                        f'MQLITE["QUEUES"][{name!r}] serves tasks but keeps no results: '
                        "get_result() cannot find a task once it succeeded.",
                        hint='Remove "keep_results" from that queue\'s options (the '
                        "backend's keep_results applies) or give it seconds.",
                        id="django_mqlite.W010",
                    )
                )
        return out

    # -- policy -------------------------------------------------------------------------

    def policy(self, task: Task) -> tuple[int, Backoff | None, float | None]:
        """The task's (max_attempts, backoff, timeout), falling back to OPTIONS."""
        max_attempts = getattr(task, "max_attempts", None) or self.max_attempts
        backoff = getattr(task, "backoff", None)
        timeout = getattr(task, "timeout", None)
        return (
            max_attempts,
            self.backoff if backoff is None else backoff,
            self.timeout if timeout is None else timeout,
        )

    # -- enqueue ------------------------------------------------------------------------

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        return self._enqueue(task, args, kwargs, message_id=None)

    def enqueue_once(self, task: Task, args: Any, kwargs: Any, key: str) -> TaskResult:
        """Deprecated: ``task.using(unique_key=key).enqueue(*args, **kwargs)``.

        Enqueue unless a live task of the queue holds ``key`` (a unique key, skip
        policy); then return that one's result. Before unique keys this collapsed
        enqueues within the queue's ``dedup_window``, even after the first had run."""
        warnings.warn(
            "MQLiteBackend.enqueue_once() is deprecated: use "
            "task.using(unique_key=key).enqueue(*args, **kwargs) (docs/tasks.md, Unique tasks)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._enqueue(task, args, kwargs, message_id=None, unique={"unique_key": key})

    def enqueue_deduplicated(
        self, task: Task, args: Any, kwargs: Any, *, message_id: str
    ) -> TaskResult:
        """Enqueue with ``message_id`` for producer dedup: a repeat within the queue's
        ``dedup_window`` collapses into the original. Periodic schedules send each
        occurrence so (their compare-and-set decides; the dedup covers a task queue on
        another database than the schedule's, whose send commits on its own)."""
        return self._enqueue(task, args, kwargs, message_id=message_id)

    def enqueue_scheduled(
        self,
        task: Task,
        args: Any,
        kwargs: Any,
        *,
        message_id: str | None,
        unique: dict[str, Any] | None,
    ) -> bool:
        """A schedule's run (``tasks/periodic.py``): with ``message_id`` (an occurrence's,
        for producer dedup) and ``unique`` (the schedule's key, skip policy; None: the
        task's own). False when the key was held and nothing was enqueued."""
        return self._enqueue_reported(task, args, kwargs, message_id=message_id, unique=unique)[1]

    def message(self, task: Task, args: Any, kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The signed envelope of a call of ``task`` and the keywords of its send: what
        ``enqueue`` sends, and what a batch callback (``tasks.batches.callback``) keeps
        to send when its batch finishes."""
        self.validate_task(task)
        body = envelope(task, args, kwargs, self.alias)
        _, _, timeout = self.policy(task)
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):
            run_after = timezone.make_aware(run_after)
        if run_after is not None:  # kept in the body: the row's visible_at moves on claims
            body["run_after"] = clock.to_ms(run_after)
        seal(body, timeout=timeout, priority=task.priority)
        options = {
            "subject": f"{SUBJECT_PREFIX}{task.module_path}"[:256],
            "priority": task.priority,
            "scheduled_at": run_after,
            "properties": {"timeout": timeout} if timeout is not None else None,
        }
        depends_on = getattr(task, "depends_on", None)
        if depends_on is not None:  # the engine decides what a callback or a step takes
            options["depends_on"] = references(list(depends_on), self.alias, _database_of)
        return body, options

    def _enqueue(
        self,
        task: Task,
        args: Any,
        kwargs: Any,
        *,
        message_id: str | None,
        unique: dict[str, Any] | None = None,
    ) -> TaskResult:
        return self._enqueue_reported(task, args, kwargs, message_id=message_id, unique=unique)[0]

    def _enqueue_reported(
        self,
        task: Task,
        args: Any,
        kwargs: Any,
        *,
        message_id: str | None,
        unique: dict[str, Any] | None = None,
    ) -> tuple[TaskResult, bool]:
        """The enqueue, and whether it enqueued (False: a held unique key skipped it)."""
        from . import unique as unique_tasks

        body, options = self.message(task, args, kwargs)
        if unique is None:
            unique = unique_tasks.send_options(task, args, kwargs)
        # Inside ``with mq.batch(...)``, the task joins the batch (its database checked
        # before anything is sent).
        open_batch = current_batch()
        using = self.database_for(task.queue_name)
        if open_batch is not None:
            open_batch.check(task.queue_name, using)
        seq, enqueued_ms, inserted = self._send(
            task.queue_name, body, message_id=message_id, **options, **unique
        )
        if open_batch is not None:
            open_batch.join_sent([seq])
        result_id = self._result_id(task.queue_name, seq)
        skipped = not inserted and unique.get("on_conflict") in (None, "skip")
        if unique and skipped:
            # The key's holder: its own call, status and attempts (it may be running).
            held = load_result(self, result_id)
            if held is not None:
                return held, False
        result: TaskResult[Any, Any] = MQLiteTaskResult(
            task=task,
            id=result_id,
            status=TaskResultStatus.READY,
            enqueued_at=clock.from_ms(enqueued_ms),  # what the row stores
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=body["args"],
            kwargs=body["kwargs"],
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        if not (unique and skipped):  # a skipped enqueue enqueued nothing
            task_enqueued.send(type(self), task_result=result)
        return result, not (unique and skipped)

    def database_for(self, queue: str) -> str | None:
        """A queue declared on a database (``MQLITE["QUEUES"]``) lives there; the others
        on ``OPTIONS["database"]`` (default: the queue database)."""
        return databases.declared_database(queue) or self.database

    def _result_id(self, queue: str, seq: int) -> str:
        # Seqs are per database: a task on another database than the backend's says where.
        alias = databases.alias_of(self.database_for(queue))
        return str(seq) if alias == databases.alias_of(self.database) else f"{seq}@{alias}"

    def _send(self, queue: str, body: Any, **options: Any) -> tuple[int, int, bool]:
        """(seq, stored enqueue time in ms, whether a row was inserted: ``send_reported``),
        creating the queue on first use."""
        from ..engine.send import send_reported as send

        using = self.database_for(queue)
        try:
            return send(queue, body, using=using, **options)
        except QueueNotFoundError:
            pass
        self.ensure_queue(queue)
        return send(queue, body, using=using, **options)

    def ensure_queue(self, queue: str) -> None:
        """Create ``queue`` with the backend's queue options unless it exists."""
        from ..engine.queues import create_queue

        try:
            create_queue(queue, using=self.database_for(queue), **self.queue_options)
        except (IntegrityError, QueueExistsError):  # it exists, with settings its own
            pass

    # -- results ------------------------------------------------------------------------

    def get_result(self, result_id: str) -> TaskResult:

        result = load_result(self, result_id)
        if result is None:
            raise TaskResultDoesNotExist(result_id)
        return result

    def cancel(self, result_id: str) -> bool:
        """Cancel a task (``engine.running.cancel``): one waiting to run (READY: not
        started yet, or waiting for a retry) is cancelled at once; a RUNNING one is asked
        to stop (``context.cancel_requested``; an ``async def`` task is cancelled) and
        reads FAILED once it stops, or SUCCESSFUL if it finishes first. A cancelled task
        reads FAILED with a ``TaskCancelledError``. True when this call cancelled it or
        recorded the request; False when there is nothing (more) to cancel: finished,
        unknown, or asked already."""
        from ..engine import running

        found = locate(self, result_id)
        if found is None:
            return False
        queue, seq = found
        try:
            got = running.cancel(queue, seq, using=self.database_for(queue))
        except (MessageFinishedError, MessageNotFoundError):
            return False
        return got != running.ALREADY_REQUESTED

    async def acancel(self, result_id: str) -> bool:
        from asgiref.sync import sync_to_async

        return await sync_to_async(self.cancel, thread_sensitive=True)(result_id)


def envelope(task: Task, args: Any, kwargs: Any, alias: str) -> dict[str, Any]:
    """The message body of a task call, not yet signed (``signing.seal``). Arguments
    must be JSON: anything else raises TypeError here, before anything is written."""
    try:
        norm_args = normalize_json(list(args))
        norm_kwargs = normalize_json(dict(kwargs))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"arguments of task {task.module_path} must be JSON-serializable: {exc}"
        ) from None
    for key in norm_kwargs:
        if not isinstance(key, str):
            raise TypeError(f"keyword argument names must be strings, not {key!r}")
    for value in (norm_args, norm_kwargs):
        _reject_non_finite(value, task.module_path)
    return {
        "task": task.module_path,
        "args": norm_args,
        "kwargs": norm_kwargs,
        "backend": alias,
        "queue": task.queue_name,
    }


def _reject_non_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError(f"arguments of task {path} must be JSON: {value!r} is not")
    if isinstance(value, list):
        for v in value:
            _reject_non_finite(v, path)
    elif isinstance(value, Mapping):
        for v in value.values():
            _reject_non_finite(v, path)


__all__ = [
    "MQLiteBackend",
    "MQLiteTask",
    "TaskCancelledError",
    "TaskDeadLetteredError",
    "envelope",
    "parse_id",
]
