"""Django Tasks in chains: ``tasks.chains.step`` makes task calls steps; the worker runs
each after the previous one completed, with its return value as the first argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.chains import step
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_task_gets_the_previous_return_value(run_worker: Callable[..., Any]) -> None:
    seq = step(tasks.add, 1, 2).then(step(tasks.add, 10)).then(step(tasks.add, 100)).send()
    first = tasks.add.get_result(str(seq))
    run_worker()
    run_worker()
    run_worker()
    first.refresh()
    assert (first.status, first.return_value) == (TaskResultStatus.SUCCESSFUL, 3)
    last = [p for p in mq.peek(tasks.add.queue_name, state="completed")]
    assert sorted(tasks.add.get_result(str(p.seq)).return_value for p in last) == [3, 13, 113]
    third = max(last, key=lambda p: p.seq)
    assert tasks.add.get_result(str(third.seq)).args == [13, 100]


def test_a_failing_task_stops_the_chain(run_worker: Callable[..., Any]) -> None:
    seq = step(tasks.always_fails, 1).then(step(tasks.remember)).send()
    for _ in range(5):
        run_worker()
        if tasks.always_fails.get_result(str(seq)).status == TaskResultStatus.FAILED:
            break
    assert tasks.always_fails.get_result(str(seq)).status == TaskResultStatus.FAILED
    left = mq.peek(tasks.remember.queue_name, limit=100)
    assert not [p for p in left if "remember" in (p.subject or "")]


def test_arguments_that_are_not_json_are_refused_with_nothing_written() -> None:
    with pytest.raises(TypeError):
        step(tasks.add, 1, 2).then(step(tasks.add, object())).send()
    assert mq.peek(tasks.add.queue_name) == []
