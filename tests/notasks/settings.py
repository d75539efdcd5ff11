"""The test settings without Tasks: no ``django_tasks`` app and no ``TASKS`` setting,
as a project that installed django-mqlite without ``[tasks]`` has them."""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS, MQLITE

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "django_tasks"]
del TASKS  # noqa: F821
MQLITE = {  # the database's own settings (PgBouncer's LISTEN) kept
    **MQLITE,
    "QUEUES": {"declared": {}},
    "SQS": {"CREDENTIALS": {"AKIDTEST": "test-secret"}},
}

if os.environ.get("MQLITE_NOTASKS_NAMED") == "1":  # TASKS names our backend all the same
    TASKS = {"default": {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["jobs"]}}
