"""What the task-subscription tests of every surface (Python, HTTP, CLI, settings) share:
the recorder's task they subscribe, tasks that must be refused, and a Tasks setting in
which the recorder's tasks run on a backend that is not django-mqlite's."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from django.test import override_settings

from tests.workerproject.recorder import tasks

# The recorder's tasks resolve as modules already imported (the test project installs
# no app of them), as a project's own tasks resolve from its installed apps.
ON_EVENT = tasks.on_event.module_path
OTHER_QUEUES_TASK = tasks.returns_set.module_path  # of queue "tasks-other"
OUTSIDE = "tests.tasks.outside_apps"  # no installed app's: never imported by a path
OUTSIDE_TASK = f"{OUTSIDE}.job"


def forget_outside_module() -> None:
    sys.modules.pop(OUTSIDE, None)


def outside_imported() -> bool:
    return OUTSIDE in sys.modules


@contextmanager
def tasks_on_another_backend() -> Iterator[None]:
    """The recorder's tasks (backend "default") on Django's ImmediateBackend, with
    django-mqlite's backend under another alias."""
    try:
        import django.tasks  # noqa: F401

        immediate = "django.tasks.backends.immediate.ImmediateBackend"
    except ImportError:
        immediate = "django_tasks.backends.immediate.ImmediateBackend"
    ours = {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["tasks"]}
    with override_settings(TASKS={"default": {"BACKEND": immediate}, "mq": ours}):
        yield
