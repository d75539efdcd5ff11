"""Tasks that wait for others: ``task.using(depends_on=[...]).enqueue(...)`` translated
to ``mq.send(..., depends_on=...)`` (``tasks/dependencies.py``): a task result or its id
names the task's message; the engine's rules decide the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.batches import callback
from django_mqlite.tasks.chains import step
from django_mqlite.tasks.compat import InvalidTaskError, TaskResultStatus
from tests.settings import SECOND
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def task_queue(backend: Any) -> None:
    backend.ensure_queue("tasks")


def state(seq: str) -> str:
    (found,) = [p for p in mq.peek("tasks", limit=100) if p.seq == int(seq)]
    return found.state


def test_a_task_waits_for_a_task_result_and_runs_after_it(
    run_worker: Callable[..., Any],
) -> None:
    first = tasks.add.enqueue(1, 2)
    second = tasks.add.using(depends_on=[first]).enqueue(3, 4)
    assert state(second.id) == "waiting"
    assert tasks.add.get_result(second.id).status == TaskResultStatus.READY
    [m] = mq.receive("tasks")  # only the first is claimable
    assert m.seq == int(first.id)
    m.abandon()
    run_worker()
    second.refresh()
    assert second.status == TaskResultStatus.SUCCESSFUL and second.return_value == 7


def test_a_result_id_and_a_batch_are_dependencies_too(run_worker: Callable[..., Any]) -> None:
    first = tasks.add.enqueue(1, 1)
    with mq.batch() as b:
        tasks.add.enqueue(2, 2)
    waiting = tasks.add.using(depends_on=[first.id, b]).enqueue(5, 5)
    assert state(waiting.id) == "waiting"
    run_worker()
    waiting.refresh()
    assert waiting.return_value == 10


def test_a_failed_dependency_fails_the_task(run_worker: Callable[..., Any]) -> None:
    doomed = tasks.always_fails.enqueue(1)
    after = tasks.add.using(depends_on=[doomed]).enqueue(1, 1)
    run_worker()
    after.refresh()
    assert after.status == TaskResultStatus.FAILED
    (dead,) = [p for p in mq.peek("tasks", state="dead_lettered") if p.seq == int(after.id)]
    assert dead.dead_letter_reason == "DependencyFailed"


@pytest.mark.parametrize("bad", ["nope", "0", "12@", 10**12])
def test_a_bad_dependency_is_refused_with_nothing_written(bad: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        tasks.add.using(depends_on=[bad]).enqueue(1, 1)
    assert mq.peek("tasks") == []


def test_depends_on_must_be_a_list() -> None:
    with pytest.raises(InvalidTaskError):
        tasks.add.using(depends_on="1")


def test_a_result_id_on_another_database_is_a_cross_database_error() -> None:
    first = tasks.add.enqueue(1, 1)
    with pytest.raises(mq.CrossDatabaseError):
        tasks.add.using(depends_on=[f"{first.id}@{SECOND}"]).enqueue(1, 1)
    assert [p.seq for p in mq.peek("tasks")] == [int(first.id)]


def test_a_callback_or_a_later_step_takes_no_dependency() -> None:
    first = tasks.add.enqueue(1, 1)
    waiting = tasks.add.using(depends_on=[first])
    with pytest.raises(mq.InvalidArgumentError), mq.batch(on_success=callback(waiting, 1, 1)):
        pass
    with pytest.raises(mq.InvalidArgumentError):
        step(tasks.add, 1, 1).then(step(waiting, 2)).send()
    assert [p.seq for p in mq.peek("tasks")] == [int(first.id)]
