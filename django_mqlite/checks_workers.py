"""System checks on what ``runworker`` will serve: a Tasks backend this Django can run,
and at most one consumer per queue. Ids are stable: ``django_mqlite.E020`` and ``E021``."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register

from .consumers import ConsumerConflictError
from .tasks.support import INSTALL_HINT, framework_problem, mqlite_task_aliases


@register()
def check_tasks_framework(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``TASKS`` names django-mqlite's backend on a Django that cannot run it."""
    aliases = mqlite_task_aliases()
    problem = framework_problem() if aliases else None
    if problem is None:
        return []
    return [
        Error(
            f"TASKS[{aliases[0]!r}] uses django-mqlite's backend, but {problem}.",
            hint=f"On Django 5.2: {INSTALL_HINT} (installs the django-tasks backport). "
            "Or upgrade to Django 6.1+.",
            id="django_mqlite.E021",
        )
    ]


@register()
def check_one_consumer_per_queue(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Import what ``runworker`` imports (every app's ``consumers`` and ``tasks`` modules,
    the Tasks backends' queues) and report two handlers registered for one queue."""
    from .worker.discovery import autodiscover

    if mqlite_task_aliases() and framework_problem() is not None:
        return []  # E021 says what is missing; the apps' task modules cannot import yet
    try:
        autodiscover()
    except ConsumerConflictError as exc:
        return [
            Error(
                f"{exc}; runworker would refuse to start.",
                hint="One handler per queue: rename one of the queues, or handle both kinds "
                "of message in one consumer (for example by msg.subject). A Tasks backend's "
                "QUEUES are served by its task runner, so a consumer cannot share them.",
                id="django_mqlite.E020",
            )
        ]
    return []
