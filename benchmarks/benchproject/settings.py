"""Settings of the benchmark project. The database comes from the environment:

- ``BENCH_DB``: ``sqlite`` (default) or ``postgres``;
- ``BENCH_SQLITE_PATH``: the SQLite file (WAL, ``BEGIN IMMEDIATE``, ``synchronous=NORMAL``);
- ``BENCH_PG_NAME`` / ``PGHOST`` / ``PGUSER`` / ``PGPASSWORD`` / ``PGPORT``: PostgreSQL;
- ``BENCH_PG_ASYNC_COMMIT=1``: PostgreSQL sessions at ``synchronous_commit=off``;
- ``BENCH_NO_CHECKPOINT=1``: SQLite connections never auto-checkpoint, so the WAL's
  growth is every byte the run wrote (the write-amplification scenario).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SECRET_KEY = "benchmarks-only-not-secret"  # noqa: S105 - a local benchmark project
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

DB = os.environ.get("BENCH_DB", "sqlite")
if DB == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("BENCH_PG_NAME", "mqlite_bench"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "PASSWORD": os.environ.get("PGPASSWORD", ""),
            # Persistent connections: db_worker calls close_old_connections() twice per
            # task, which with Django's default of 0 reconnects for every task.
            "CONN_MAX_AGE": None,
        }
    }
    if os.environ.get("BENCH_PG_ASYNC_COMMIT") == "1":
        DATABASES["default"]["OPTIONS"] = {"options": "-c synchronous_commit=off"}
else:
    _pragmas = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    if os.environ.get("BENCH_NO_CHECKPOINT") == "1":
        _pragmas += " PRAGMA wal_autocheckpoint=0;"
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get(
                "BENCH_SQLITE_PATH", str(Path(tempfile.gettempdir()) / "mqlite-bench.sqlite3")
            ),
            "CONN_MAX_AGE": None,
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": _pragmas,
            },
        }
    }

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_mqlite",
    "benchmarks.benchproject.noop",
]
import django  # noqa: E402

try:  # the django-tasks-db peer is an optional bench dependency
    import django_tasks_db  # noqa: F401

    # The backport is an app on Django 5.2; Django 6.x has django.tasks built in.
    INSTALLED_APPS += (
        ["django_tasks", "django_tasks_db"] if django.VERSION < (6, 0) else ["django_tasks_db"]
    )
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
except ImportError:  # the peer is not installed (CI's smoke run): a stand-in default
    if django.VERSION < (6, 0):
        INSTALLED_APPS += ["django_tasks"]
        _dummy = "django_tasks.backends.dummy.DummyBackend"
    else:
        _dummy = "django.tasks.backends.dummy.DummyBackend"
    TASKS = {"default": {"BACKEND": _dummy}}
if (Path(__file__).resolve().parents[2] / "django_mqlite" / "backends.py").exists():
    # After the Tasks backend is merged (checked by file: see peers.has_mqlite_backend).
    TASKS["mqlite"] = {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["default"]}

try:  # django-ox (Python 3.12+), measured in the defaults table when installed
    import django_ox  # noqa: F401

    # As its README configures it, under the alias "ox" (ox_worker --backend ox):
    # "default" is django-tasks-db here. Its migrations run with everyone's.
    INSTALLED_APPS += ["django_ox"]
    TASKS["ox"] = {"BACKEND": "django_ox.backend.OxBackend"}
except ImportError:
    pass

MQLITE: dict[str, object] = {"QUEUES": {"bench": {}}}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
