from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from django_mqlite.consumers import Registry
from django_mqlite.tasks.compat import task_backends
from django_mqlite.tasks.runner import register_task_queues
from django_mqlite.worker import Worker
from tests.support.inprocess import burst


@pytest.fixture
def backend() -> Any:
    return task_backends["default"]


@pytest.fixture
def run_worker() -> Callable[..., Worker]:
    """Run an in-process worker over the task queues until nothing is claimable."""

    def run(queues: Sequence[str] = (), **options: Any) -> Worker:
        registry = Registry()
        register_task_queues(registry)
        return burst(registry, *queues, **options)

    return run
