"""One import point for Django's Tasks framework: ``django.tasks`` (Django 6.0+) or the
``django-tasks`` backport (Django 5.2).

The two expose the same classes under the same names, except the exceptions the
backport spells with an ``Error`` suffix. Everything else in django-mqlite imports the
framework from here, so there is one code path for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # django-stubs types django.tasks; the backport mirrors it
    from django.tasks import (
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskError
    from django.tasks.exceptions import InvalidTask as InvalidTaskError
    from django.tasks.exceptions import TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started

    SOURCE = "django.tasks"
else:
    try:
        from django.tasks import (
            DEFAULT_TASK_QUEUE_NAME,
            Task,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            task_backends,
        )
        from django.tasks.backends.base import (
            BaseTaskBackend,
        )
        from django.tasks.base import TaskError
        from django.tasks.exceptions import (
            InvalidTask as InvalidTaskError,
        )
        from django.tasks.exceptions import (
            TaskResultDoesNotExist,
        )
        from django.tasks.signals import (
            task_enqueued,
            task_finished,
            task_started,
        )

        SOURCE = "django.tasks"
    except ImportError:
        from django_tasks import (
            DEFAULT_TASK_QUEUE_NAME,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            task_backends,
        )
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import Task, TaskError
        from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist
        from django_tasks.signals import task_enqueued, task_finished, task_started

        SOURCE = "django_tasks"


# The framework's own JSON normalisation (tuples to lists, bytes to text; TypeError or
# ValueError for anything else), wherever it lives. Resolved once: a failing import in
# the hot path costs a filesystem search on every call.
try:
    from django.utils.json import normalize_json as _normalize
except ImportError:
    from django_tasks.utils import normalize_json as _normalize


def normalize_json(value: Any) -> Any:
    """Tuples to lists, bytes to text; raises TypeError/ValueError for anything that is
    not JSON."""
    return _normalize(value)


__all__ = [
    "DEFAULT_TASK_QUEUE_NAME",
    "SOURCE",
    "BaseTaskBackend",
    "InvalidTaskError",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
