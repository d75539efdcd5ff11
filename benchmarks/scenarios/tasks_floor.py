"""The floor of a Django Tasks worker: what Django does for a task once a worker has it,
with no queue at all, measured in this process on one thread.

``django.tasks_floor`` runs the brokers scenario's task (``record_task``: one Redis
``INCR``) through Django's own ``ImmediateBackend._execute_task``, the worker half of
Django's reference backend: the ``TaskResult`` moving to RUNNING, ``task_started`` (and
the INFO record Django's own receiver logs for it), ``Task.call``, the return value
normalized, ``task_finished`` (and its record), at the project's logging defaults. It
also sends ``task_enqueued``, whose receiver logs at DEBUG: below the logger's level,
so one level check. The ``TaskResult`` each task starts from is built outside the
clock. ``django.record_only`` is the task's own work alone (``started()``, the same
``INCR``). Every backend of Django Tasks runs the first for each task, so its CPU a
task, beside a worker's in the brokers table, is the part of that worker's cost that
no queue can remove; the rest is the queue's. Each figure is tasks a second on one
thread, with its CPU a task.
"""

from __future__ import annotations

import importlib.util
import socket
from typing import Any

from ..harness import Context, Stopwatch, repeat, skipped

WARM = 200


def _immediate() -> tuple[Any, Any] | str:
    """(Django's ImmediateBackend, a maker of the READY ``TaskResult`` it starts a task
    from), or why the floor cannot be measured here."""
    try:  # Django 6.x, else the django-tasks backport (as the bench project's task)
        from django.tasks.backends.immediate import ImmediateBackend  # type: ignore[import-not-found,unused-ignore]
        from django.tasks.base import TaskResult, TaskResultStatus  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from django_tasks.backends.immediate import ImmediateBackend  # type: ignore[no-redef,unused-ignore]
            from django_tasks.base import TaskResult, TaskResultStatus  # type: ignore[no-redef,unused-ignore]
        except ImportError:
            return "no Tasks framework is installed (Django 6, or the django-tasks backport)"
    if importlib.util.find_spec("redis") is None:
        return "redis is not installed (pip install -e '.[bench]')"
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
    except OSError:
        return "redis does not answer on 127.0.0.1:6379"
    from benchmarks.benchproject.noop.tasks import record_task

    backend = ImmediateBackend("immediate", {"QUEUES": [], "OPTIONS": {}})
    if not hasattr(backend, "_execute_task"):
        return "this Django's ImmediateBackend has no _execute_task"

    def fresh(i: int) -> Any:
        return TaskResult(
            task=record_task,
            id=str(i),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=[None],
            kwargs={},
            backend=backend.alias,
            errors=[],
            worker_ids=[],
        )

    return backend, fresh


def tasks_floor(ctx: Context) -> dict[str, Any]:
    got = _immediate()
    if isinstance(got, str):
        return {"django.tasks_floor": skipped(got), "django.record_only": skipped(got)}
    backend, fresh = got
    from benchmarks.brokers import record

    n = ctx.size("brokers")

    def machinery() -> tuple[float, float]:
        results = [fresh(i) for i in range(n + WARM)]
        for r in results[:WARM]:
            backend._execute_task(r)
        with Stopwatch() as t:
            for r in results[WARM:]:
                backend._execute_task(r)
        return t.result(n)

    def record_alone() -> tuple[float, float]:
        for _ in range(WARM):
            record.started(None)
        with Stopwatch() as t:
            for _ in range(n):
                record.started(None)
        return t.result(n)

    record.reset()
    out = {
        "django.tasks_floor": repeat(ctx, machinery, "tasks/s", n=n),
        "django.record_only": repeat(ctx, record_alone, "tasks/s", n=n),
    }
    record.reset()
    return out
