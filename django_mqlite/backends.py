"""The documented ``TASKS`` path, ``django_mqlite.backends.MQLiteBackend``; the Django
Tasks integration lives in :mod:`django_mqlite.tasks`."""

from .tasks.backend import MQLiteBackend, MQLiteTask, TaskCancelledError, TaskDeadLetteredError

__all__ = ["MQLiteBackend", "MQLiteTask", "TaskCancelledError", "TaskDeadLetteredError"]
