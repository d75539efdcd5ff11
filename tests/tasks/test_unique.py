"""Unique tasks: ``@task(unique_key=...)`` and ``task.using(unique_key=, on_conflict=,
unique_while=)``, the Tasks form of ``mq.send(..., unique_key=)``: at most one live (or
one pending) task message per key and queue (the engine's partial unique indexes), the
holder's result for a skipped
enqueue, a replacing enqueue's arguments in the holder; bad options refused when the
task is made, a bad computed key at enqueue with nothing written; ``enqueue_once``
deprecated onto unique keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

import django_mqlite as mq
from django_mqlite.tasks.compat import InvalidTaskError, TaskResultStatus, task_enqueued
from django_mqlite.tasks.front import remote_message
from tests.support.unique_keys import held_twice, live_with
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def enqueued() -> Any:
    """The ids ``task_enqueued`` was sent for, in order."""
    ids: list[str] = []

    def record(sender: Any, task_result: Any, **kwargs: Any) -> None:
        ids.append(task_result.id)

    task_enqueued.connect(record)
    yield ids
    task_enqueued.disconnect(record)


def test_a_second_enqueue_of_a_waiting_key_is_skipped(enqueued: list[str]) -> None:
    first = tasks.refresh_report.enqueue(7, rev=1)
    again = tasks.refresh_report.enqueue(7, rev=2)
    assert again.id == first.id
    assert again.status == TaskResultStatus.READY
    assert again.kwargs == {"rev": 1}  # the holder's call, untouched
    assert enqueued == [first.id]  # a skipped enqueue enqueued nothing
    assert live_with("tasks", "report-7") == [int(first.id)]
    other = tasks.refresh_report.enqueue(8)  # another report, another key
    assert other.id != first.id


def test_a_running_holder_keeps_its_key_and_is_returned_running(
    run_worker: Callable[..., Any],
) -> None:
    first = tasks.refresh_report.enqueue(7, rev=1)
    [running] = mq.receive("tasks")  # a worker has it
    assert running.seq == int(first.id)
    again = tasks.refresh_report.enqueue(7, rev=2)
    assert again.id == first.id and again.status == TaskResultStatus.RUNNING
    running.complete()  # finished: the key is free again
    fresh = tasks.refresh_report.enqueue(7, rev=3)
    assert fresh.id != first.id and fresh.status == TaskResultStatus.READY
    run_worker()
    fresh.refresh()
    assert fresh.status == TaskResultStatus.SUCCESSFUL and fresh.return_value == 3
    assert held_twice() == []


def test_replace_writes_the_later_call_into_the_waiting_holder(
    run_worker: Callable[..., Any], enqueued: list[str]
) -> None:
    first = tasks.rebuild_index.enqueue("first")
    second = tasks.rebuild_index.enqueue("second")
    assert second.id == first.id and second.args == ["second"]
    assert enqueued == [first.id, first.id]  # a replacement changed what will run
    stored = tasks.rebuild_index.get_result(first.id)
    assert stored.args == ["second"] and stored.status == TaskResultStatus.READY
    run_worker()
    stored.refresh()
    assert stored.return_value == "second"


def test_a_replace_of_a_running_holder_raises_and_writes_nothing() -> None:
    first = tasks.rebuild_index.enqueue("first")
    [running] = mq.receive("tasks")
    with pytest.raises(mq.UniqueKeyLockedError):
        tasks.rebuild_index.enqueue("second")
    assert live_with("tasks", "rebuild-index") == [int(first.id)]
    assert running.json()["args"] == ["first"]


def test_using_sets_the_key_and_policy_per_call() -> None:
    keyed = tasks.add.using(unique_key="sum", priority=3)
    first = keyed.enqueue(1, 2)
    assert keyed.enqueue(5, 5).id == first.id
    assert tasks.add.enqueue(1, 2).id != first.id  # the task itself has no key
    replaced = tasks.add.using(unique_key="sum", on_conflict="replace").enqueue(9, 9)
    assert replaced.id == first.id
    assert tasks.add.get_result(first.id).args == [9, 9]
    # using() without unique options leaves the task's own key alone
    assert tasks.refresh_report.using(priority=5).unique_key is tasks.refresh_report.unique_key


def test_a_pending_key_lets_one_wait_while_another_runs(run_worker: Callable[..., Any]) -> None:
    task = tasks.refresh_report.using(unique_while="pending")
    first = task.enqueue(7, rev=1)
    assert task.enqueue(7, rev=2).id == first.id  # waiting: skipped
    [running] = mq.receive("tasks")
    second = task.enqueue(7, rev=3)  # the first runs: one more may wait
    assert second.id != first.id and second.status == TaskResultStatus.READY
    assert task.enqueue(7, rev=4).id == second.id
    running.complete()
    run_worker()
    assert tasks.refresh_report.get_result(second.id).return_value == 3


def test_a_key_function_returning_none_means_no_key() -> None:
    task = tasks.add.using(unique_key=lambda a, b: None if a < 0 else f"add-{a}")
    assert task.enqueue(-1, 0).id != task.enqueue(-1, 0).id
    assert task.enqueue(1, 0).id == task.enqueue(1, 5).id


def test_a_rolled_back_enqueue_leaves_the_key_free() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        tasks.refresh_report.enqueue(7)
        raise RuntimeError("roll back")
    assert live_with("tasks", "report-7") == []
    result = tasks.refresh_report.enqueue(7)
    assert live_with("tasks", "report-7") == [int(result.id)]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"unique_key": "k", "on_conflict": "overwrite"}, "on_conflict must be one of"),
        ({"on_conflict": "skip"}, "on_conflict needs a unique_key"),
        ({"unique_key": "k", "unique_while": "running"}, "unique_while must be one of"),
        ({"unique_while": "pending"}, "unique_while needs a unique_key"),
        ({"unique_key": "k" * 201}, "unique_key"),
        ({"unique_key": ""}, "unique_key"),
        ({"unique_key": 5}, "unique_key"),
    ],
)
def test_bad_unique_options_are_refused_when_the_task_is_made(
    options: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidTaskError, match=says):
        tasks.add.using(**options)


def test_a_bad_computed_key_is_refused_at_enqueue_with_nothing_written() -> None:
    task = tasks.add.using(unique_key=lambda a, b: "k" * (200 + a))
    with pytest.raises(mq.InvalidArgumentError, match="unique_key"):
        task.enqueue(1, 0)
    with pytest.raises(mq.QueueNotFoundError):  # nothing was written, not even the queue
        mq.stats("tasks")
    assert task.enqueue(0, 0).status == TaskResultStatus.READY


def test_enqueue_once_is_deprecated_onto_a_unique_key(backend: Any) -> None:
    with pytest.warns(DeprecationWarning, match="using\\(unique_key=key\\)"):
        first = backend.enqueue_once(tasks.add, [1, 2], {}, key="once-a")
    with pytest.warns(DeprecationWarning):
        assert backend.enqueue_once(tasks.add, [1, 2], {}, key="once-a").id == first.id
    [msg] = mq.receive("tasks")
    msg.complete()
    # A unique key, not a dedup window: once the first has finished, it enqueues again.
    with pytest.warns(DeprecationWarning):
        assert backend.enqueue_once(tasks.add, [1, 2], {}, key="once-a").id != first.id


def test_a_remote_task_call_gets_the_tasks_declared_key(settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "OPEN_TASK_QUEUES": ["tasks"]}
    path = "tests.workerproject.recorder.tasks.refresh_report"
    out = remote_message("tasks", mq.OutMessage({"task": path, "args": [7]}))
    assert (out.unique_key, out.on_conflict) == ("report-7", None)
    own = remote_message("tasks", mq.OutMessage({"task": path, "args": [7]}, unique_key="mine"))
    assert own.unique_key == "mine"  # the sender's key wins
    with pytest.raises(mq.InvalidArgumentError, match="unique_key function failed"):
        remote_message("tasks", mq.OutMessage({"task": path, "kwargs": {"rev": 1}}))
