"""enqueue -> a real ``runworker --burst`` process -> SUCCESSFUL with the return value."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_then_runworker_succeeds(workers: Any) -> None:
    result = tasks.add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY
    assert result.id.isdigit() and result.enqueued_at is not None
    assert mq.get_queue("tasks").keep_results  # created on demand, keeping results

    code, _out, err = workers.finish(workers.start("--burst", "--queue", "tasks"))
    assert code == 0, err

    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.attempts == 1 and result.errors == []
    assert len(result.worker_ids) == 1 and result.worker_ids[0]
    assert result.started_at and result.finished_at and result.last_attempted_at
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert [e["pid"] for e in workers.events("add")] != []
    again = tasks.add.get_result(result.id)
    assert again.return_value == 5 and again.args == [2, 3]
