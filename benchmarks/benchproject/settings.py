"""Settings of the benchmark project. The database comes from the environment:

- ``BENCH_DB``: ``sqlite`` (default), ``postgres`` or ``mariadb``;
- ``BENCH_SQLITE_PATH``: the SQLite file (WAL, ``BEGIN IMMEDIATE``, ``synchronous=NORMAL``);
- ``BENCH_PG_NAME`` / ``PGHOST`` / ``PGUSER`` / ``PGPASSWORD`` / ``PGPORT``: PostgreSQL;
- ``BENCH_MY_NAME`` / ``MYSQL_HOST`` / ``MYSQL_USER`` / ``MYSQL_PWD`` / ``MYSQL_TCP_PORT``:
  MariaDB (default ``mqlite_bench`` as root on 127.0.0.1:3306, as the test settings);
- ``BENCH_PG_ASYNC_COMMIT=1``: PostgreSQL sessions at ``synchronous_commit=off``;
- ``BENCH_NO_CHECKPOINT=1``: SQLite connections never auto-checkpoint, so the WAL's
  growth is every byte the run wrote (the write-amplification scenario).
"""

from __future__ import annotations

import os
import tempfile
from importlib.util import find_spec
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
elif DB == "mariadb":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": os.environ.get("BENCH_MY_NAME", "mqlite_bench"),
            "USER": os.environ.get("MYSQL_USER", "root"),
            "HOST": os.environ.get("MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("MYSQL_TCP_PORT", "3306"),
            "PASSWORD": os.environ.get("MYSQL_PWD", ""),
            "CONN_MAX_AGE": None,  # as on PostgreSQL: db_worker closes old connections
            # As docs/configuration.md sets MariaDB up: READ COMMITTED (Django's default
            # for this backend, said anyway) and utf8mb4.
            "OPTIONS": {"isolation_level": "read committed", "charset": "utf8mb4"},
        }
    }
elif DB == "sqlite":
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
else:
    raise ValueError(f"BENCH_DB={DB!r}: sqlite, postgres or mariadb")

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_mqlite",
    "benchmarks.benchproject.noop",
]
import django  # noqa: E402

_BACKPORT = ["django_tasks"] if django.VERSION < (6, 0) else []  # Django 6.x: django.tasks
_MQLITE = {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["default"]}
_TASKS_DB = {"BACKEND": "django_tasks_db.DatabaseBackend"}
# django-ox as its README configures it; "ox" is the alias ox_worker --backend ox names.
_OX = {"BACKEND": "django_ox.backend.OxBackend"}
HAS_TASKS_DB = find_spec("django_tasks_db") is not None  # (found, not imported: an
HAS_OX = find_spec("django_ox") is not None  # import here would cost every process)

# BENCH_SYSTEM: a worker process of one system runs in a project that has only that
# system installed, as a project using it would (a peer's worker does not import
# django-mqlite, nor ours the peers). The harness itself (BENCH_SYSTEM unset) installs
# every system: it migrates the one database they share and enqueues through each.
SYSTEM = os.environ.get("BENCH_SYSTEM", "")
if SYSTEM == "mqlite":
    INSTALLED_APPS += _BACKPORT
    TASKS = {"default": _MQLITE, "mqlite": _MQLITE}
elif SYSTEM == "tasks_db":
    INSTALLED_APPS = [a for a in INSTALLED_APPS if a != "django_mqlite"]
    INSTALLED_APPS += [*_BACKPORT, "django_tasks_db"]
    TASKS = {"default": _TASKS_DB}
elif SYSTEM == "ox":
    INSTALLED_APPS = [a for a in INSTALLED_APPS if a != "django_mqlite"]
    INSTALLED_APPS += [*_BACKPORT, "django_ox"]
    TASKS = {"default": _OX, "ox": _OX}
elif SYSTEM:
    raise ValueError(f"BENCH_SYSTEM={SYSTEM!r}: mqlite, tasks_db or ox")
else:
    INSTALLED_APPS += _BACKPORT
    if HAS_TASKS_DB:  # the peer is an optional bench dependency
        INSTALLED_APPS += ["django_tasks_db"]
        TASKS = {"default": _TASKS_DB}
    else:  # the peer is not installed (CI's smoke run): a stand-in default
        _tasks = "django_tasks" if _BACKPORT else "django.tasks"
        TASKS = {"default": {"BACKEND": f"{_tasks}.backends.dummy.DummyBackend"}}
    TASKS["mqlite"] = _MQLITE
    if HAS_OX:  # django-ox (Python 3.12+), measured in the defaults table when installed
        INSTALLED_APPS += ["django_ox"]
        TASKS["ox"] = _OX

MQLITE: dict[str, object] = {"QUEUES": {"bench": {}}}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
