"""A no-op Django Task for the Tasks drain scenarios (when a Tasks framework is present:
``django.tasks`` on Django 6, the ``django-tasks`` backport before)."""

from __future__ import annotations

from typing import Any

from benchmarks.brokers.record import started

task: Any
try:
    from django.tasks import task  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    try:
        from django_tasks import task  # type: ignore[no-redef,unused-ignore]
    except ImportError:  # no Tasks framework: only the peer scenarios need one
        task = None

if task is not None:

    @task()
    def noop_task() -> None:
        return None

    @task()
    def record_task(enqueued_at: float | None = None) -> None:
        """The broker scenario's task: record the start in Redis, as every peer's does
        (``started`` is imported with this module, as the peers' app modules import
        it: imported here, a worker process's first task paid the import before its
        clock started)."""
        started(enqueued_at)
