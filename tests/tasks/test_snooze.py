"""A task that raises ``mq.Snooze`` is given back without using up an attempt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_snoozing_task_keeps_its_attempts(run_worker: Callable[..., Any]) -> None:
    """max_attempts=1, three snoozes: still attempt 1 when it finally runs, no error."""
    result = tasks.snoozes.enqueue("keeps", 3)
    run_worker()
    result.refresh()
    assert tasks.SNOOZE_CALLS["keeps"] == 4
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 1
    assert result.errors == []


def test_a_snoozed_task_waits_ready(run_worker: Callable[..., Any]) -> None:
    result = tasks.snoozes.enqueue("waits", 1, 60)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.READY
    [parked] = mq.peek("tasks", state="scheduled")
    assert parked.delivery_count == 0


def test_a_bad_snooze_fails_the_attempt(run_worker: Callable[..., Any]) -> None:
    result = tasks.snoozes.enqueue("bad", 1, -1)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["django_mqlite.exceptions.Snooze"]
