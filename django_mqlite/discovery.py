"""Finding the work a worker serves: the ``consumers`` and ``tasks`` modules of every
installed app (as the admin finds ``admin`` modules), then the task runner registered for
the queues of every django-mqlite Tasks backend.

This module sits above both the consumer registry and the Tasks integration, so neither
needs the other: the runner registers itself into the registry, never the reverse.
"""

from __future__ import annotations

from django.utils.module_loading import autodiscover_modules

from .consumers import registry


def autodiscover() -> None:
    """Import every installed app's ``consumers`` and ``tasks`` modules and register the
    task runner for each queue a django-mqlite Tasks backend serves."""
    autodiscover_modules("consumers", "tasks")
    try:
        from .tasks.runner import register_task_queues
    except ImportError:  # neither django.tasks nor the django-tasks backport
        return
    register_task_queues(registry)
