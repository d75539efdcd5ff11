"""Finding the work a worker serves: the ``consumers`` and ``tasks`` modules of every
installed app (as the admin finds ``admin`` modules), then the task runner registered for
the queues of every django-mqlite Tasks backend.

This module sits above both the consumer registry and the Tasks integration, so neither
needs the other: the runner registers itself into the registry, never the reverse.
"""

from __future__ import annotations

from django.utils.module_loading import autodiscover_modules, module_has_submodule

from ..consumers import registry


def autodiscover() -> None:
    """Import every installed app's ``consumers`` and ``tasks`` modules and register the
    task runner for each queue a django-mqlite Tasks backend serves."""
    autodiscover_modules("consumers", "tasks")
    try:
        from ..tasks.runner import register_task_queues
    except ImportError:  # neither django.tasks nor the django-tasks backport
        return
    register_task_queues(registry)


def nothing_to_serve() -> str:
    """Why ``runworker`` found no work: what it looked for and what it would have served."""
    from django.apps import apps

    from ..tasks.support import INSTALL_HINT, framework_problem, mqlite_task_aliases

    installed = list(apps.get_app_configs())
    found = [
        f"{app.name}.{module}"
        for app in installed
        for module in ("consumers", "tasks")
        if app.name != "django_mqlite" and module_has_submodule(app.module, module)
    ]
    lines = [
        "nothing to serve: no consumer is registered and no Tasks queue is configured.",
        f"Looked in the consumers and tasks modules of {len(installed)} "
        f"installed apps (found: {', '.join(found) or 'none'}).",
    ]
    aliases = mqlite_task_aliases()
    problem = framework_problem() if aliases else None
    if problem is not None:
        lines.append(
            f"TASKS[{aliases[0]!r}] uses django-mqlite's backend, but {problem}; "
            f"on Django 5.2: {INSTALL_HINT}."
        )
    elif not aliases:
        lines.append(
            'TASKS has no backend "django_mqlite.backends.MQLiteBackend", so no task '
            "queue is served."
        )
    lines.append(
        'Register a handler with @mq.consumer("queue") in an app\'s consumers.py, or '
        "point TASKS at django_mqlite.backends.MQLiteBackend (docs/tasks.md)."
    )
    return "\n".join(lines)
