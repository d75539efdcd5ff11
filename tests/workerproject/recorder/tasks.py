"""Tasks of the worker test project (module paths are the same in pytest and in the
``runworker`` children). ``tests/tasks`` drives them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task

#: In-process runs append here (priority order, signals).
RAN: list[Any] = []


def _log(event: str, **extra: Any) -> None:
    path = os.environ.get("MQLITE_TEST_LOG")
    if not path:
        return
    line = json.dumps({"event": event, "pid": os.getpid(), **extra}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@task(queue_name="tasks")
def add(a: int, b: int) -> int:
    _log("add", a=a, b=b)
    return a + b


@task(queue_name="tasks", max_attempts=3, backoff=0)
def always_fails(n: int) -> None:
    raise ValueError(f"boom {n}")


@task(queue_name="tasks", takes_context=True, max_attempts=3, backoff=0)
def flaky(context: Any, succeed_on: int) -> int:
    if context.attempt < succeed_on:
        raise RuntimeError(f"not yet (attempt {context.attempt})")
    return int(context.attempt)


@task(queue_name="tasks")
async def async_mul(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a * b


@task(queue_name="tasks", priority=0)
def remember(tag: str) -> str:
    RAN.append(tag)
    return tag


@task(queue_name="tasks", timeout=0.3, max_attempts=1)
def too_slow(seconds: float) -> None:
    time.sleep(seconds)


@task(queue_name="tasks-other")
def returns_set() -> Any:
    return {1, 2}


@task(queue_name="tasks", max_attempts=1)
def returns_mixed_keys() -> Any:
    return {1: "a", "b": 2}  # json.dumps takes it; canonical (sorted) JSON cannot


@task(queue_name="tasks", max_attempts=2, backoff=0)
def calls_sys_exit(code: int) -> None:
    _log("calls_sys_exit", code=code)
    sys.exit(code)


@task(queue_name="tasks", max_attempts=1)
def raises_keyboard_interrupt() -> None:
    _log("raises_keyboard_interrupt")
    raise KeyboardInterrupt("raised by the task itself")


@task(queue_name="tasks", takes_context=True, max_attempts=3, backoff=0)
def loses_its_connection(context: Any, succeed_on: int) -> int:
    """Loses its thread's database connection (a terminated backend on PostgreSQL) and
    then queries, on every attempt before ``succeed_on``."""
    from django.contrib.auth.models import User

    from tests.support.dbfaults import break_connection

    if context.attempt < succeed_on:
        break_connection()
    return User.objects.count() + int(context.attempt)


@task(queue_name="tasks", max_attempts=3, backoff=0)
def chaos_task(i: int) -> int:
    """The fault suite's task: a query on its thread's connection, then a little work."""
    from django.contrib.auth.models import User

    time.sleep(0.01)
    return User.objects.count() + i


@task(queue_name="tasks")
def on_event(event: dict[str, Any]) -> Any:
    """Subscribed to topics in tests/tasks/test_topics.py."""
    RAN.append(event)
    return event


#: Calls of ``snoozes`` by key (in-process runs).
SNOOZE_CALLS: dict[str, int] = {}


@task(queue_name="tasks", takes_context=True, max_attempts=1)
def snoozes(context: Any, key: str, times: int, seconds: float = 0) -> int:
    """Snooze ``times`` times (``mq.Snooze(seconds)``), then return the attempt number:
    a snooze uses up no attempt, so it stays 1."""
    import django_mqlite as mq

    SNOOZE_CALLS[key] = SNOOZE_CALLS.get(key, 0) + 1
    if SNOOZE_CALLS[key] <= times:
        raise mq.Snooze(seconds)
    return int(context.attempt)


@task(queue_name="tasks", unique_key=lambda report_id, **_: f"report-{report_id}")
def refresh_report(report_id: int, rev: int = 0) -> int:
    """A unique task: one live refresh per report (its key from the arguments)."""
    return rev


@task(queue_name="tasks", unique_key="rebuild-index", on_conflict="replace")
def rebuild_index(note: str) -> str:
    """A unique task with a fixed key that a later enqueue replaces while it waits."""
    return note


#: Set by the task-control tasks below once they run (in-process runs).
CONTROL_STARTED = __import__("threading").Event()


@task(queue_name="tasks", takes_context=True, max_attempts=3, backoff=0)
def until_cancelled(context: Any, steps: int) -> int:
    """Report progress each step until a cancel request reaches it, then stop."""
    CONTROL_STARTED.set()
    for step in range(steps):
        context.set_progress({"step": step})
        if context.cancel_requested:
            raise RuntimeError(f"stopped at step {step}")
        time.sleep(0.01)
    return steps


@task(queue_name="tasks", max_attempts=3, backoff=0)
async def sleeps_async(seconds: float) -> None:
    CONTROL_STARTED.set()
    await asyncio.sleep(seconds)


@task(queue_name="tasks", takes_context=True)
def reports(context: Any, steps: int) -> int:
    for step in range(steps):
        context.set_progress({"step": step + 1, "of": steps})
    return steps


#: Where ``resumes`` started, by attempt (in-process runs).
RESUME_STARTS: list[int] = []


@task(queue_name="tasks", takes_context=True, resumable=True, max_attempts=1)
def resumes(context: Any, until: int) -> int:
    """Count from the last checkpoint to ``until``; stops (raises) when its worker stops."""
    start = context.last_checkpoint or 0
    RESUME_STARTS.append(start)
    for step in range(start, until):
        context.checkpoint(step)
        if step >= 5:
            CONTROL_STARTED.set()
        if context.stop_requested:
            raise RuntimeError("stopping")
        time.sleep(0.005)
    return until
