"""``backend.cancel(id)`` cancels a task that has not started; it reads as FAILED."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.backends import TaskCancelledError
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_cancel_waiting_task(backend: Any, run_worker: Callable[..., Any]) -> None:
    result = tasks.add.enqueue(1, 1)
    kept = tasks.add.enqueue(2, 2)
    assert backend.cancel(result.id) is True
    assert backend.cancel(result.id) is False  # already cancelled
    run_worker()
    result.refresh()
    kept.refresh()
    assert result.status == TaskResultStatus.FAILED and result.attempts == 0
    assert [e.exception_class for e in result.errors] == [TaskCancelledError]
    assert kept.status == TaskResultStatus.SUCCESSFUL
    assert backend.cancel(kept.id) is False  # finished
    assert mq.stats("tasks").totals["rejected"] == 1


def test_cancel_unknown_or_malformed(backend: Any) -> None:
    assert backend.cancel("999999") is False
    assert backend.cancel("nope") is False
