"""A task with a real backoff, for drains that reach retries by advancing the clock."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task


@task(queue_name="tasks", max_attempts=2, backoff=30)
def fails_with_backoff(n: int) -> None:
    raise LookupError(f"no order {n}")
