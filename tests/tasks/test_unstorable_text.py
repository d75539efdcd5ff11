"""A task whose result or error holds text PostgreSQL's ``jsonb`` cannot store (a NUL,
a lone surrogate) still settles: the result fails that task with a clear error, an
exception's message is recorded with U+FFFD; the worker never hangs on a lease."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_result_holding_a_nul_fails_the_task_and_settles(run_worker: Any) -> None:
    result = tasks.remember.enqueue("a\x00b")
    run_worker(queues=["tasks"])
    result.refresh()
    assert result.status == "FAILED"
    assert "NUL" in result.errors[-1].traceback
    assert [p.state for p in mq.peek("tasks", limit=100)] in ([], ["dead_lettered"])
