"""A no-op Django Task for the Tasks drain scenarios (when a Tasks framework is present:
``django.tasks`` on Django 6, the ``django-tasks`` backport before)."""

from __future__ import annotations

from typing import Any

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
        """The broker scenario's task: record the start in Redis, as every peer's does."""
        from benchmarks.brokers.record import started

        started(enqueued_at)
