"""``run_after`` defers a task: READY and untouched until then."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_run_after(run_worker: Callable[..., Any], clock: mq.clock.FrozenClock) -> None:
    later = clock.now() + dt.timedelta(minutes=5)
    result = tasks.add.using(run_after=later).enqueue(1, 2)
    assert mq.peek("tasks")[0].state == "scheduled"
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.READY and result.attempts == 0
    clock.advance(301)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3
    assert result.started_at is not None and result.started_at >= later
