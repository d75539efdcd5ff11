"""Helpers for envelope tests: what the Tasks backend would write, signed with the
project's key (or any other), and the worker that serves chosen queues."""

from __future__ import annotations

import sys
from typing import Any

from django_mqlite.consumers import Registry
from django_mqlite.tasks import signing
from django_mqlite.tasks.runner import give_up, run_task, timeout_for
from django_mqlite.worker import Worker
from tests.support.inprocess import burst

ADD = "tests.workerproject.recorder.tasks.add"
REMEMBER = "tests.workerproject.recorder.tasks.remember"
OUTSIDE = "tests.tasks.outside_apps"


def signed(
    task: str = ADD,
    args: Any = (1, 2),
    kwargs: Any = None,
    *,
    queue: str = "tasks",
    backend: Any = "default",
    priority: int = 0,
    timeout: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """An envelope signed with the current SECRET_KEY, as the backend signs it."""
    body = {
        "task": task,
        "args": list(args) if isinstance(args, tuple) else args,
        "kwargs": {} if kwargs is None else kwargs,
        "backend": backend,
        "queue": queue,
        **extra,
    }
    return signing.seal(body, timeout=timeout, priority=priority)


def drain(*queues: str) -> Worker:
    """Run ``run_task`` on ``queues`` (task queues or not) until nothing is claimable."""
    registry = Registry()
    for queue in queues:
        registry.register(queue, run_task, timeout_for=timeout_for, give_up=give_up)
    return burst(registry)


def forget_outside_module() -> None:
    sys.modules.pop(OUTSIDE, None)
