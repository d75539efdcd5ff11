"""Django Tasks in batches: tasks enqueued inside ``with mq.batch(...)`` are its
children, and ``tasks.batches.callback`` makes a task call the batch's callback, run by
the worker like any task once the last child has finished."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.batches import callback
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_tasks_join_the_batch_and_the_callback_task_runs_last(
    run_worker: Callable[..., Any],
) -> None:
    with mq.batch(
        on_success=callback(tasks.remember, "all added"),
        on_failure=callback(tasks.remember, "something failed"),
    ) as b:
        results = [tasks.add.enqueue(i, i) for i in range(5)]
    info = mq.get_batch(b.id)
    assert (info.total, info.state) == (5, "running")
    run_worker()
    for r in results:
        r.refresh()
        assert r.status == TaskResultStatus.SUCCESSFUL
    info = mq.get_batch(b.id)
    assert (info.state, info.completed) == ("finished", 5)
    assert set(info.callbacks) == {"on_success"}
    run_worker()  # the callback task, enqueued by the last completion
    done = tasks.remember.get_result(str(info.callbacks["on_success"]))
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == "all added"
    assert sorted(mq.batch_results(b.id).values()) == [0, 2, 4, 6, 8]


def test_a_failing_task_fires_the_failure_callback(run_worker: Callable[..., Any]) -> None:
    with mq.batch(
        on_success=callback(tasks.remember, "all added"),
        on_failure=callback(tasks.remember, "something failed"),
    ) as b:
        tasks.add.enqueue(1, 1)
        tasks.always_fails.enqueue(7)
    for _ in range(5):  # the failing task's retries come back after their backoff
        run_worker()
        if mq.get_batch(b.id).state == "finished":
            break
    info = mq.get_batch(b.id)
    assert (info.completed, info.failed) == (1, 1)
    assert set(info.callbacks) == {"on_failure"}


def test_callback_arguments_that_are_not_json_are_refused_with_nothing_written() -> None:
    with pytest.raises(TypeError, match="JSON"):  # as enqueue refuses them
        callback(tasks.remember, object())
    with pytest.raises(mq.InvalidArgumentError), mq.batch() as b:
        pass
    with pytest.raises(mq.BatchNotFoundError):  # the empty batch was rolled back
        mq.get_batch(b.id)
