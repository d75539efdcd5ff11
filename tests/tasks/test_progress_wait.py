"""Tasks: ``context.set_progress`` is read back as ``result.progress`` (``get_result`` and
``refresh``); ``result.wait(timeout)`` blocks until the task finished (``TimeoutError``
otherwise); a ``resumable`` task stopped with its worker resumes from its checkpoint on
the next attempt, the interrupted one not counted."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from django_mqlite.consumers import Registry
from django_mqlite.tasks.compat import TaskResultStatus
from django_mqlite.tasks.runner import register_task_queues
from django_mqlite.worker import Worker
from tests.support.features import requires
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


@requires("wake_ups")
def test_wait_wakes_at_the_task_s_completion(
    backend: Any, run_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``result.wait`` sleeps until the worker's completion flush says the task finished
    (``engine.finished``): with the waiter's safety poll a minute away and the
    in-process wake-up off, only the way another process hears of it (NOTIFY, the
    commit watcher) can wake it in time."""
    from django_mqlite.engine import finished, waiting

    monkeypatch.setattr(finished, "wake_here", lambda key: None)
    monkeypatch.setattr(waiting, "WAIT_SAFETY_POLL_S", 60.0)
    source = waiting._wake_source("default")
    assert source is not None and source.wait(10)
    result = tasks.reports.enqueue(2)
    woke: list[float] = []
    waiter = threading.Thread(target=lambda: woke.append(result.wait(BOUND_S) and time.monotonic()))
    waiter.start()
    time.sleep(0.3)
    run_worker()
    done = time.monotonic()
    waiter.join(BOUND_S)
    assert woke and woke[0] - done < 1.0
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 2


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
