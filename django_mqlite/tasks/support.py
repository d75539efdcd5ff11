"""Which Django versions the Tasks backend runs on, and what is missing when it cannot.

The backend needs a Tasks framework that passes ``@task(max_attempts=..., backoff=...,
timeout=...)`` through to the backend's task class: ``django.tasks`` on Django 6.1+, or
the ``django-tasks`` backport on Django 5.2. Django 6.0's ``django.tasks`` takes no extra
``@task`` keywords, so it is not supported. Used by the system checks and by
``runworker`` to say why it serves no task, and by every surface that asks which queues
are Tasks queues; imports nothing of the framework unless ``TASKS`` names our backend and
this Django can run it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import django
from django.conf import settings

INSTALL_HINT = 'pip install "django-mqlite[tasks]"'


def mqlite_task_aliases() -> list[str]:
    """Aliases of ``TASKS`` whose ``BACKEND`` is one of django-mqlite's."""
    tasks = getattr(settings, "TASKS", None) or {}
    if not isinstance(tasks, dict):
        return []
    return [
        alias
        for alias, conf in tasks.items()
        if isinstance(conf, dict) and str(conf.get("BACKEND", "")).startswith("django_mqlite.")
    ]


def mqlite_task_queues() -> set[str]:
    """The ``QUEUES`` of those aliases, read from the settings (nothing imported)."""
    tasks = getattr(settings, "TASKS", None) or {}
    out: set[str] = set()
    for alias in mqlite_task_aliases():
        queues = tasks[alias].get("QUEUES") or []
        if isinstance(queues, list | tuple | set | frozenset):
            out.update(q for q in queues if isinstance(q, str))
    return out


def framework_problem() -> str | None:
    """Why this Django cannot run django-mqlite's Tasks backend, or None when it can."""
    version = django.VERSION[:2]
    if version >= (6, 1):
        return None
    if version >= (6, 0):
        return (
            f"Django {django.get_version()}'s django.tasks cannot pass @task options "
            "(max_attempts, backoff, timeout) to a backend; django-mqlite's Tasks backend "
            "needs Django 6.1 or newer, or Django 5.2 with the django-tasks backport"
        )
    if importlib.util.find_spec("django_tasks") is None:
        return (
            f"Django {django.get_version()} has no Tasks framework and the django-tasks "
            f"backport is not installed ({INSTALL_HINT})"
        )
    return None


def nothing_to_serve() -> str:
    """Why ``runworker`` found no work: what it looked for and what it would have served."""
    from django.apps import apps
    from django.utils.module_loading import module_has_submodule

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


def configured_backends() -> list[Any]:
    """The configured Tasks backends that are ours, loaded; ``[]``, importing nothing,
    when ``TASKS`` names none of them or this Django cannot run them (E021 says why).

    Every caller outside the Tasks integration asks here, so a project without a Tasks
    framework (Django 5.2 without the backport) never imports one."""
    if not mqlite_task_aliases() or framework_problem() is not None:
        return []
    from . import runner

    return list(runner.mqlite_backends())


def task_queue_names() -> set[str]:
    """The queues a Tasks backend of this app serves. When ``TASKS`` names one but the
    framework cannot load, the queues its settings list: they stay closed to remote
    sends as configured rather than open because nothing could read them."""
    if not mqlite_task_aliases():
        return set()
    if framework_problem() is not None:
        return mqlite_task_queues()
    return {name for backend in configured_backends() for name in backend.queues}
