"""A running task reads RUNNING with its running attempt taken from the locked row (the
worker writes nothing before the task runs)."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db


def test_running_result_shows_worker_and_start(backend: Any) -> None:
    with mq.clock.frozen() as clock:
        result = tasks.add.enqueue(1, 2)
        clock.advance(5)
        (msg,) = mq.receive("tasks", worker_id=77)  # what a worker's claim does
        running = tasks.add.get_result(result.id)
        assert running.status == TaskResultStatus.RUNNING
        assert running.worker_ids == ["77"] and running.attempts == 1
        assert running.started_at == clock.now() == running.last_attempted_at
        assert running.enqueued_at is not None and running.enqueued_at < running.started_at
        assert msg.worker_id == 77


def test_batched_completion_keeps_result_and_attempt(backend: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    other = tasks.add.enqueue(3, 4)
    a, b = mq.receive("tasks", max_messages=2, worker_id=5)
    done: list[int] = []
    completion = mq.Completion(
        result=3,
        attempt={"worker": "5", "started_at": 1_000, "error": None},
        on_completed=lambda: done.append(a.seq),
    )
    from django_mqlite.engine import settle

    ok = settle.complete_batch(
        "tasks", [(a.seq, a.lock_token), (b.seq, b.lock_token)], completions=[completion, None]
    )
    assert ok == [True, True]
    assert done == []  # the engine only stores; the worker calls on_completed after commit
    finished = tasks.add.get_result(result.id)
    assert finished.status == TaskResultStatus.SUCCESSFUL and finished.return_value == 3
    assert finished.worker_ids == ["5"]
    assert tasks.add.get_result(other.id).status == TaskResultStatus.SUCCESSFUL
    with pytest.raises(mq.InvalidArgumentError):
        settle.complete_batch("tasks", [(a.seq, "t" * 32)], completions=[])


def test_a_completion_stores_its_encoded_result_as_given(backend: Any) -> None:
    """``_result_json`` (the Tasks worker's own encoding, made when it checked the value) is
    what the row keeps; ``result`` is not encoded again."""
    result = tasks.add.enqueue(1, 2)
    (msg,) = mq.receive("tasks", worker_id=5)
    from django_mqlite.engine import settle

    completion = mq.Completion(result=None, _result_json='{"a":[1,2]}', attempt=None)
    assert settle.complete_batch("tasks", [(msg.seq, msg.lock_token)], completions=[completion])
    assert tasks.add.get_result(result.id).return_value == {"a": [1, 2]}
