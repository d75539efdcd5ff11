"""Tasks: ``context.set_progress`` is read back as ``result.progress`` (``get_result`` and
``refresh``); ``result.wait(timeout)`` blocks until the task finished (``TimeoutError``
otherwise); a ``resumable`` task stopped with its worker resumes from its checkpoint on
the next attempt, the interrupted one not counted."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from django_mqlite.consumers import Registry
from django_mqlite.tasks.compat import TaskResultStatus
from django_mqlite.tasks.runner import register_task_queues
from django_mqlite.worker import Worker
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

BOUND_S = 20.0


def test_progress_and_wait(backend: Any, run_worker: Any) -> None:
    result = tasks.reports.enqueue(3)
    with pytest.raises(TimeoutError):
        result.wait(0.05)
    assert result.status == TaskResultStatus.READY and result.progress is None
    t = threading.Thread(target=run_worker)
    t.start()
    try:
        assert result.wait(BOUND_S) is result
    finally:
        t.join(BOUND_S)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3
    assert result.progress == {"step": 3, "of": 3}
    assert backend.get_result(result.id).progress == {"step": 3, "of": 3}


def test_a_resumable_task_resumes_from_its_checkpoint(backend: Any, run_worker: Any) -> None:
    tasks.RESUME_STARTS.clear()
    tasks.CONTROL_STARTED.clear()
    result = tasks.resumes.enqueue(40)
    registry = Registry()
    register_task_queues(registry)
    worker = Worker(["tasks"], install_signals=False, registry=registry, reaper=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert tasks.CONTROL_STARTED.wait(BOUND_S)
    worker.stop()
    thread.join(BOUND_S)
    assert not thread.is_alive() and worker.pool.failures == 0
    result.refresh()
    assert result.status == TaskResultStatus.READY and result.errors == []
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 40
    first, second = tasks.RESUME_STARTS
    assert first == 0 and second >= 5
    assert result.attempts == 1  # max_attempts=1: the interrupted run was not counted
