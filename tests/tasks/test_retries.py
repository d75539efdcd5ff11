"""A failing task is retried per its policy, then FAILED with every attempt's error;
``takes_context`` sees the attempt number."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_failure_retries_then_fails_with_every_error(run_worker: Callable[..., Any]) -> None:
    result = tasks.always_fails.enqueue(7)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 3
    assert [e.exception_class_path for e in result.errors] == ["builtins.ValueError"] * 3
    assert all("boom 7" in e.traceback for e in result.errors)
    assert result.errors[0].exception_class is ValueError
    assert result.finished_at is not None
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value
    [dead] = mq.peek("tasks", state="dead_lettered")
    assert dead.dead_letter_reason == "TaskFailed"
    assert "attempt 3 of 3" in (dead.dead_letter_description or "")


def test_context_attempt_and_success_after_retry(run_worker: Callable[..., Any]) -> None:
    result = tasks.flaky.enqueue(2)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 2
    assert result.attempts == 2
    assert [e.exception_class_path for e in result.errors] == ["builtins.RuntimeError"]


def test_return_value_must_be_json(run_worker: Callable[..., Any]) -> None:
    result = tasks.returns_set.enqueue()
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].exception_class_path == "builtins.TypeError"


def test_a_value_canonical_json_cannot_sort_fails_only_its_task(
    run_worker: Callable[..., Any],
) -> None:
    """Keys of mixed types encode with json.dumps but not sorted: the task fails, and
    the completions batched with it still go through (the completion once raised in
    the worker's loop, and the whole batch ran again)."""
    bad = tasks.returns_mixed_keys.enqueue()
    good = [tasks.add.enqueue(i, 1) for i in range(5)]
    worker = run_worker()
    bad.refresh()
    assert bad.status == TaskResultStatus.FAILED
    assert bad.errors[-1].exception_class_path == "builtins.TypeError"
    assert [tasks.add.get_result(r.id).return_value for r in good] == [1, 2, 3, 4, 5]
    assert worker.claimed == 6  # each once


def test_backoff_from_options_parks_the_retry(run_worker: Callable[..., Any]) -> None:
    from django_mqlite.backends import MQLiteBackend

    backend = MQLiteBackend("x", {"QUEUES": ["tasks"], "OPTIONS": {"backoff": 30}})
    assert backend.policy(tasks.add) == (1, 30, None)
    assert backend.policy(tasks.always_fails) == (3, 0, None)
    assert backend.policy(tasks.too_slow) == (1, 30, 0.3)
