"""Test settings. ``MQLITE_TEST_DB=postgres`` runs the same suite on PostgreSQL,
``MQLITE_TEST_DB=mariadb`` on MariaDB."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_CHECKOUT = hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:8]
DB = os.environ.get("MQLITE_TEST_DB", "sqlite")
#: The second database alias, for queues declared on another database
#: (``"database": "queues2"``); tests that touch it say so with ``databases=``.
SECOND = "queues2"


def _postgres(suffix: str) -> dict[str, Any]:
    # One test database per checkout, so parallel checkouts never share one.
    test_name = os.environ.get("MQLITE_TEST_PGNAME", f"test_mqlite_{_CHECKOUT}") + suffix
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "test"),
        "USER": os.environ.get("PGUSER", "postgres"),
        "HOST": os.environ.get("PGHOST", "127.0.0.1"),
        "PORT": os.environ.get("PGPORT", "5432"),
        "PASSWORD": os.environ.get("PGPASSWORD", ""),
        "TEST": {"NAME": test_name},
    }


def _mariadb(suffix: str) -> dict[str, Any]:
    # READ COMMITTED and utf8mb4, as docs/configuration.md asks of a queue database; one
    # test database per checkout, as on PostgreSQL.
    test_name = os.environ.get("MQLITE_TEST_MYNAME", f"test_mqlite_{_CHECKOUT}") + suffix
    return {
        "ENGINE": "django.db.backends.mysql",
        "NAME": os.environ.get("MYSQL_DATABASE", "test"),
        "USER": os.environ.get("MYSQL_USER", "root"),
        "HOST": os.environ.get("MYSQL_HOST", "127.0.0.1"),
        "PORT": os.environ.get("MYSQL_PORT", "3306"),
        "PASSWORD": os.environ.get("MYSQL_PASSWORD", ""),
        "OPTIONS": {"isolation_level": "read committed", "charset": "utf8mb4"},
        "TEST": {"NAME": test_name, "CHARSET": "utf8mb4", "COLLATION": "utf8mb4_bin"},
    }


def _sqlite(suffix: str) -> dict[str, Any]:
    # A file, not :memory:, so worker threads and processes share it (WAL).
    tmp = Path(os.environ.get("MQLITE_TEST_DIR") or tempfile.gettempdir())
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(tmp / f"mqlite-tests{suffix}.sqlite3"),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(tmp / f"mqlite-test{suffix}-{os.getpid()}.sqlite3")},
    }


if DB == "postgres":
    DATABASES = {"default": _postgres(""), SECOND: _postgres("_q2")}
elif DB == "pgbouncer":
    # PostgreSQL through PgBouncer in transaction-pooling mode (.ci/pgbouncer-up), with
    # the settings Django documents for it. The test databases are created on
    # PostgreSQL itself (tests/pgbouncer.py); LISTEN goes there directly too.
    DATABASES = {"default": _postgres("_pgb"), SECOND: _postgres("_pgb_q2")}
    for _db in DATABASES.values():
        _db["PORT"] = os.environ.get("MQLITE_PGBOUNCER_PORT", "6432")
        _db["DISABLE_SERVER_SIDE_CURSORS"] = True
        _db["OPTIONS"] = {"prepare_threshold": None}
elif DB == "sqlite":
    DATABASES = {"default": _sqlite(""), SECOND: _sqlite("-q2")}
elif DB == "mariadb":
    DATABASES = {"default": _mariadb(""), SECOND: _mariadb("_q2")}
else:  # pragma: no cover
    raise RuntimeError(f"MQLITE_TEST_DB must be sqlite, postgres, pgbouncer or mariadb, not {DB!r}")

# A child process started by a test (a real ``runworker``) uses the test databases the
# parent pytest process created: the parent passes their actual NAMEs here.
if os.environ.get("MQLITE_TEST_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["MQLITE_TEST_DB_NAME"]
if os.environ.get("MQLITE_TEST_DB2_NAME"):
    DATABASES[SECOND]["NAME"] = os.environ["MQLITE_TEST_DB2_NAME"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_mqlite",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "static/"
# One worker process per runworker unless a test asks for more (--processes, or
# WORKER_PROCESSES through MQLITE_TEST_OVERRIDES): the tests signal and kill the process
# they started, and call_command("runworker") must not fork the test run.
MQLITE: dict[str, object] = {"QUEUES": {}, "WORKER_PROCESSES": 1}
if DB == "pgbouncer":
    _direct = {"PORT": os.environ.get("PGPORT", "5432")}
    MQLITE["LISTEN"] = {"default": _direct, SECOND: _direct}

# Django Tasks: django.tasks on Django 6.x, the django-tasks backport on 5.2.
import django  # noqa: E402

if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")
TASKS = {
    "default": {
        "BACKEND": "django_mqlite.backends.MQLiteBackend",
        "QUEUES": ["tasks", "tasks-other"],
        "OPTIONS": {"backoff": 0},
    }
}
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
