"""``backend.cancel(id)`` of a RUNNING task: the request reaches the task through its
worker's lease renewal (``context.cancel_requested``); a task that stops reads FAILED with
a ``TaskCancelledError`` (no retry), and an ``async def`` task is cancelled."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.backends import TaskCancelledError
from django_mqlite.consumers import Registry
from django_mqlite.tasks.compat import TaskResultStatus
from django_mqlite.tasks.runner import register_task_queues
from django_mqlite.worker import Worker
from tests.support.concurrency import retrying
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

BOUND_S = 20.0


@pytest.fixture
def serving(backend: Any) -> Iterator[Worker]:
    """A worker over the task queues in a thread, with a short lease (renewed every
    0.5 s), stopped at the end."""
    backend.ensure_queue("tasks")
    mq.update_queue("tasks", lock_duration=1)
    tasks.CONTROL_STARTED.clear()
    registry = Registry()
    register_task_queues(registry)
    worker = Worker(["tasks"], install_signals=False, registry=registry, reaper=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    yield worker
    worker.stop()
    thread.join(BOUND_S)
    assert not thread.is_alive()


def _finished(result: Any) -> Any:
    deadline = time.monotonic() + BOUND_S
    while True:
        retrying(result.refresh)
        if result.is_finished:
            return result
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("task", ["until_cancelled", "sleeps_async"])
def test_cancel_a_running_task(backend: Any, serving: Worker, task: str) -> None:
    if task == "until_cancelled":
        result = tasks.until_cancelled.enqueue(100_000)
    else:
        result = tasks.sleeps_async.enqueue(BOUND_S)
    assert tasks.CONTROL_STARTED.wait(BOUND_S)
    assert retrying(lambda: backend.cancel(result.id)) is True
    assert retrying(lambda: backend.cancel(result.id)) is False  # asked already
    _finished(result)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].exception_class is TaskCancelledError
    assert result.attempts == 1  # not retried
    assert backend.cancel(result.id) is False  # finished
    assert serving.pool.failures == 0
