"""A no-op Django Task for the Tasks drain scenarios."""

from __future__ import annotations

try:
    from django.tasks import task  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    from django_tasks import task


@task()
def noop_task() -> None:
    return None
