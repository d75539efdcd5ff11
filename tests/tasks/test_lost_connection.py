"""A task whose database connection is lost while it runs (a terminated backend, a
restart) still has its attempt recorded and ends in the right state: the failure
bookkeeping runs on a fresh connection (``django_mqlite/worker/db_health.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_that_loses_its_connection_every_time_fails_after_max_attempts(
    run_worker: Callable[..., Any],
) -> None:
    result = tasks.loses_its_connection.enqueue(99)
    worker = run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 3 and worker.claimed == 3
    assert len(result.errors) == 3
    assert all(e.exception_class_path.startswith("django.db.") for e in result.errors)
    [dead] = mq.peek("tasks", state="dead_lettered")
    assert dead.dead_letter_reason == "TaskFailed"
    assert "attempt 3 of 3" in (dead.dead_letter_description or "")


def test_a_task_that_lost_its_connection_once_succeeds_on_its_retry(
    run_worker: Callable[..., Any],
) -> None:
    result = tasks.loses_its_connection.enqueue(2)
    worker = run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 2 and result.attempts == 2 and worker.claimed == 2
    assert [e.exception_class_path.startswith("django.db.") for e in result.errors] == [True]
