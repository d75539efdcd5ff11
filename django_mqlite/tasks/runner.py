"""Running Django Tasks inside ``runworker``.

``register_task_queues`` (called by ``worker.discovery.autodiscover`` through
``tasks.plugin``) registers ``run_task`` as
the consumer of every queue of every ``MQLiteBackend``. For each delivery it:

1. sends ``task_started`` (the earlier attempts are read only on a redelivery);
2. calls the task (async functions too; ``takes_context`` gets the attempt number and
   the task control of ``context.MQLiteTaskContext``: the cancel request, progress and
   checkpoints); a task that raises once a cancel request reached it (an ``async def``
   one is cancelled) is dead-lettered as cancelled (reads FAILED, ``TaskCancelledError``);
3. on success hands the worker a completion carrying the JSON return value and this
   attempt (worker id, start time): the worker completes it in its next batch (one
   transaction for many tasks), appending the attempt to the row's ``attempts`` history
   in the completion's own statement, and then sends ``task_finished``;
   on an exception appends the attempt with its class path and traceback in the
   statement that retries it after the task's backoff or, on its last
   attempt (or for ``mq.Reject``), dead-letters it, and sends ``task_finished`` from
   inside the ``except`` block; ``mq.Snooze`` gives it back with the engine's snooze
   verb instead (no attempt used up, no attempt recorded, up to the queue's
   ``max_snoozes``).

One settlement statement per attempt and no write before the task runs: while it runs,
``get_result`` reads RUNNING with the running attempt taken from the locked row itself
(``locked_by`` and the claim time in ``visible_at``).

A timeout or a shutdown that gives up on a running task goes through ``give_up``: the
attempt is recorded as a ``TimeoutError`` and settled by the same rule.
"""

from __future__ import annotations

import asyncio
import logging
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction

from ..conf import current
from ..engine import admission, databases, settle
from ..engine.clock import now_ms, to_ms
from ..engine.queues import get_queue
from ..engine.received import Received
from ..engine.settle_items import MAX_DESCRIPTION
from ..engine.types import Completion, Outcome
from ..exceptions import InvalidArgumentError, LockLostError, Reject, Snooze
from ..worker import db_health
from ..worker.delivery import log_fields
from ..worker.handling import as_cancelled, release_to_resume, resumes, write_notes
from ..worker.registry import Registry
from ..worker.retry import backoff_delay
from . import envelope
from .compat import (
    Task,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)
from .context import MQLiteTaskContext
from .results import build_result, succeeded

logger = logging.getLogger("django_mqlite.tasks")
_rng = random.Random()  # noqa: S311 - jitter, not security
MAX_TRACEBACK = 16 * 1024
FAILED_REASON = "TaskFailed"


def mqlite_backends() -> list[Any]:
    """The configured Tasks backends that are ours."""
    from .backend import MQLiteBackend

    out = []
    for alias in task_backends.settings:
        backend = task_backends[alias]
        if isinstance(backend, MQLiteBackend):
            out.append(backend)
    return out


def register_task_queues(registry: Registry) -> list[str]:
    """Register the task runner for every queue of every MQLiteBackend."""
    names = []
    for backend in mqlite_backends():
        for queue in sorted(backend.queues):
            registry.register(
                queue,
                run_task,
                timeout_for=timeout_for,
                give_up=give_up,
                queue_options=backend.queue_options,
            )
            names.append(queue)
    return names


def timeout_for(msg: Received) -> float | None:
    # A message's timeout is only trusted when sane (run_task dead-letters the others).
    return envelope.message_timeout(msg)


@dataclass
class Job:
    """A delivered task: the message, what it names, and its attempt history."""

    msg: Received
    task: Task
    backend: Any
    args: list[Any]
    kwargs: dict[str, Any]
    enqueued_at: int = 0
    history: list[dict[str, Any]] | None = None
    #: This attempt's history entry, appended to the row when the attempt is settled.
    attempt: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, msg: Received) -> Job:
        """The job of a valid task message (``envelope.InvalidTaskMessage`` else)."""
        return cls(msg, *envelope.load(msg))

    # -- the history: earlier attempts from the row, this one in memory -----------------

    def _rows(self) -> Any:
        from ..models import Message

        return Message.objects.using(self.msg.using or current().database).filter(
            seq=self.msg.seq,
            lock_token=self.msg.lock_token,
            state="locked",
            locked_until__gt=now_ms(),
        )

    def read(self) -> None:
        """Load what the row knows: earlier attempts (on a redelivery) and enqueue time."""
        if self.msg.delivery_count <= 1 and self.msg.worker_id is not None:
            self.history = []
            self.enqueued_at = to_ms(self.msg.enqueued_at)
            self._worker = str(self.msg.worker_id)
            return
        row = db_health.retry_lost(
            lambda: self._rows().values_list("attempts", "locked_by", "enqueued_at").first(),
            self.alias,
            f"reading task #{self.msg.seq}",
        )
        if row is None:
            raise LockLostError(f"task #{self.msg.seq}: lease lost before it started")
        self.history = list(row[0] or [])
        self.enqueued_at = row[2]
        self._worker = "" if row[1] is None else str(row[1])

    def start(self) -> None:
        self.read()
        assert self.history is not None
        self.attempt = {"worker": self._worker, "started_at": now_ms(), "error": None}
        self.history.append(self.attempt)

    def record_error(self, class_path: str, text: str) -> None:
        assert self.history is not None
        if not self.attempt:  # given up on from outside the attempt (timeout, shutdown)
            self.attempt = {"worker": self._worker, "started_at": now_ms(), "error": None}
            self.history.append(self.attempt)
        if not self.attempt.get("error"):
            # Made storable (a NUL or lone surrogate in an exception's message would
            # fail the settlement that records it).
            tb = admission.diagnostic(text[-MAX_TRACEBACK:])
            self.attempt["error"] = {"class": class_path, "traceback": tb}

    # -- results and settlement ---------------------------------------------------------

    def result(self, status: Any, value: Any = None, finished: bool = False) -> TaskResult:
        return build_result(
            self.task,
            str(self.msg.seq),
            status,
            enqueued_at_ms=self.enqueued_at,
            history=self.history or [],
            finished_at_ms=now_ms() if finished else None,
            value=value,
            args=self.args,
            kwargs=self.kwargs,
        )

    @property
    def alias(self) -> str:
        return databases.alias_of(self.msg.using, self.msg.queue)

    def snooze(self, snooze: Snooze) -> bool | None:
        """Give the task back for ``snooze.seconds`` with the engine's snooze verb (the
        same request on a retry after a lost connection, as ``fail``); True when, past
        the queue's ``max_snoozes``, it was dead-lettered on its last delivery. None when
        the delay is invalid (negative, too long, past the task's expiry): nothing was
        written and the caller fails the attempt instead."""
        msg = self.msg
        assert msg.lock_token is not None
        item = settle.SnoozeItem(msg.seq, msg.lock_token, snooze.seconds)
        try:
            got = db_health.retry_lost(
                lambda: settle.snooze_many(msg.queue, [item], using=msg.using),
                self.alias,
                f"snoozing task #{msg.seq}",
            )
        except InvalidArgumentError as exc:
            logger.warning("task #%s: cannot snooze: %s", msg.seq, exc, extra=log_fields(msg))
            return None
        msg.outcome = settle.one(msg.queue, got)
        msg.settled = "snooze"
        return msg.outcome.outcome in (Outcome.DEAD_LETTERED, Outcome.FORWARDED)

    def fail(self, description: str, tb: str, reject: Reject | None = None) -> bool:
        """Retry or dead-letter after a failed attempt; True when it was the last.

        The attempt may have failed because this thread's connection was lost (the
        task's own queries met a terminated backend or a restart): the connection is
        checked first, and the settlement is retried on a fresh one, since an
        exact replay of a settlement that did commit succeeds through its receipt."""
        db_health.refresh()
        settled = db_health.retry_lost(
            self._fail_settlement(description, tb, reject),
            self.alias,
            f"recording task #{self.msg.seq}'s failure",
        )
        return settled

    def _fail_settlement(
        self, description: str, tb: str, reject: Reject | None
    ) -> Callable[[], bool]:
        """The settlement of a failed attempt, decided once (its retry delay too), so
        that a repeat is the same request."""
        max_attempts, backoff, _ = self.backend.policy(self.task)
        attempt = self.msg.delivery_count
        delay = retry_delay(backoff, attempt)

        def run() -> bool:
            return self._settle_failed(description, tb, reject, max_attempts, attempt, delay)

        return run

    def _settle_failed(
        self,
        description: str,
        tb: str,
        reject: Reject | None,
        max_attempts: int,
        attempt: int,
        delay: float,
    ) -> bool:
        msg = self.msg
        token = msg.lock_token
        assert token is not None
        cap = get_queue(msg.queue, using=msg.using).max_delivery_count
        if reject is not None:
            item = settle.RejectItem(
                msg.seq, token, reject.reason, reject.description, attempt=self.attempt
            )
            got = settle.reject_many(msg.queue, [item], using=msg.using)
            final = True
        elif attempt >= min(max_attempts, cap):
            text = f"{description} (attempt {attempt} of {max_attempts})"[:4096]
            item = settle.RejectItem(
                msg.seq, token, FAILED_REASON, text, error=tb, attempt=self.attempt
            )
            got = settle.reject_many(msg.queue, [item], using=msg.using)
            final = True
        else:
            write_notes(msg.queue, [msg], msg.using)  # the retry resumes from the checkpoint
            abandon = settle.AbandonItem(msg.seq, token, delay, tb, self.attempt)
            got = settle.abandon_many(msg.queue, [abandon], using=msg.using)
            final = False
        msg.outcome = settle.one(msg.queue, got)
        msg.settled = "reject" if final else "abandon"
        return final


def retry_delay(backoff: Any, attempt: int) -> float:
    if callable(backoff):
        return max(0.0, float(backoff(attempt)))
    conf = current()
    base = conf.retry_backoff_base_s if backoff is None else float(backoff)
    return backoff_delay(attempt, base_s=base, cap_s=conf.retry_backoff_cap_s, rng=_rng)


def _class_path(exc: BaseException) -> str:
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


def run_task(msg: Received) -> None:
    """The consumer of task queues: run one delivery of a task and settle it."""
    try:
        job = Job.load(msg)
    except envelope.InvalidTaskMessage as exc:
        bury_invalid(msg, str(exc))
        return
    msg.resumable = bool(getattr(job.task, "resumable", False))
    if msg.resumable:
        msg.last_checkpoint  # noqa: B018 - read it now, outside any event loop
    job.start()
    sender = type(job.backend)
    running: TaskResult | None = None
    if task_started.has_listeners(sender):  # building a TaskResult is not free
        running = job.result(TaskResultStatus.RUNNING)
        task_started.send(sender, task_result=running)
    try:
        if job.task.takes_context:
            context = MQLiteTaskContext(
                task_result=job.result(TaskResultStatus.RUNNING), message=msg
            )
            value = call(job.task, msg, context, *job.args, **job.kwargs)
        else:
            value = call(job.task, msg, *job.args, **job.kwargs)
        value = normalize_json(value)
        # Encoded here, where a value JSON cannot hold fails the task: the completion
        # stores this text as it is.
        encoded = None if value is None else admission.result_json(value, "the task's result")
    except BaseException as exc:
        # SystemExit (a library calling sys.exit) fails the task like any exception.
        # KeyboardInterrupt too: raised inside a task it is the task's own doing (a real
        # Ctrl-C reaches the worker's main thread, which drains gracefully), and letting
        # it escape would leave the task RUNNING with its lease renewed forever.
        tb = traceback.format_exc()
        exc = as_cancelled(msg, exc)  # raised once a cancel request reached it
        if resumes(msg, exc):  # a resumable task stopping with its worker
            release_to_resume(msg, job.alias)
            return
        if isinstance(exc, Snooze) and (final := job.snooze(exc)) is not None:
            if final:
                task_finished.send(
                    sender, task_result=job.result(TaskResultStatus.FAILED, None, True)
                )
            return
        msg.failure = exc
        job.record_error(_class_path(exc), tb)
        final = job.fail(
            f"{type(exc).__name__}: {exc}", tb, exc if isinstance(exc, Reject) else None
        )
        if final:
            result = job.result(TaskResultStatus.FAILED, finished=True)
            task_finished.send(sender, task_result=result)
        return

    def finished() -> None:
        if running is None:
            result = job.result(TaskResultStatus.SUCCESSFUL, value, True)
        else:  # the same result, made from the one task_started carried
            result = succeeded(running, value, now_ms())
        task_finished.send(sender, task_result=result)

    # Returning hands the completion to the worker, which batches it with others (one
    # transaction for many tasks) and sends task_finished once it has committed.
    msg.completion = Completion(
        result=value,
        _result_json=encoded,
        attempt=job.attempt,
        on_completed=finished if task_finished.has_listeners(sender) else None,
    )


def call(task: Task, msg: Received, *args: Any, **kwargs: Any) -> Any:
    """Call ``task`` as ``Task.call`` does; an ``async def`` one runs as a task that a
    cancel request cancels (``Received.on_cancel``: CancelledError at its next await)."""
    if not iscoroutinefunction(task.func):
        return task.call(*args, **kwargs)

    async def cancellable() -> Any:
        current = asyncio.current_task()
        assert current is not None
        loop = asyncio.get_running_loop()
        msg.on_cancel(lambda: loop.call_soon_threadsafe(current.cancel))
        try:
            return await task.func(*args, **kwargs)
        finally:
            msg.on_cancel(None)

    return async_to_sync(cancellable)()


def bury_invalid(msg: Received, why: str) -> None:
    """Dead-letter a message that is not a task this queue may run: at once, since no
    retry can make it valid, and without running anything."""
    assert msg.lock_token is not None
    # The reason may quote the message: made storable by the engine's one rule for
    # diagnostics (the reject applies it too; here it also keeps the log line writable),
    # and cut to what a description may hold.
    why = admission.diagnostic(why)[:MAX_DESCRIPTION]
    logger.warning(
        "task message #%s on %r dead-lettered: %s", msg.seq, msg.queue, why, extra=log_fields(msg)
    )
    item = settle.RejectItem(msg.seq, msg.lock_token, envelope.INVALID_REASON, why)
    msg.outcome = settle.one(msg.queue, settle.reject_many(msg.queue, [item], using=msg.using))
    msg.settled = "reject"


def give_up(msg: Received, error: str) -> None:
    """The worker stopped waiting for this task (timeout or shutdown): a failed attempt."""
    try:
        job = Job.load(msg)
    except envelope.InvalidTaskMessage as exc:
        bury_invalid(msg, str(exc))
        return
    job.read()
    job.record_error("builtins.TimeoutError", error)
    try:
        raise TimeoutError(error)
    except TimeoutError:
        if job.fail(error, error):
            result = job.result(TaskResultStatus.FAILED, finished=True)
            task_finished.send(type(job.backend), task_result=result)
