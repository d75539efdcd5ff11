"""Async task functions run; a task past its ``timeout`` fails with TimeoutError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_async_task(run_worker: Callable[..., Any]) -> None:
    result = tasks.async_mul.enqueue(6, 7)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42


def test_aenqueue_and_aget_result() -> None:
    async def go() -> Any:
        result = await tasks.add.aenqueue(1, 1)
        return await tasks.add.aget_result(result.id)

    # async_to_sync runs the thread-sensitive DB calls on this thread and connection.
    again = async_to_sync(go)()
    assert again.status == TaskResultStatus.READY and again.args == [1, 1]


def test_timeout_counts_as_a_failed_attempt(run_worker: Callable[..., Any]) -> None:
    result = tasks.too_slow.enqueue(1.5)
    run_worker(shutdown_timeout_s=0.1)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["builtins.TimeoutError"]
    assert "timeout of 0.3s" in result.errors[0].traceback
