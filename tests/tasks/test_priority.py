"""Higher priority runs first; equal priorities run in enqueue order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_priority_order(run_worker: Callable[..., Any]) -> None:
    tasks.RAN.clear()
    for tag, priority in [("low", -10), ("mid-1", 0), ("high", 50), ("mid-2", 0), ("top", 100)]:
        tasks.remember.using(priority=priority).enqueue(tag)
    run_worker(concurrency=1)
    assert tasks.RAN == ["top", "high", "mid-1", "mid-2", "low"]
