"""Test settings. ``MQLITE_TEST_DB=postgres`` runs the same suite on PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_CHECKOUT = hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:8]
DB = os.environ.get("MQLITE_TEST_DB", "sqlite")
if DB == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("PGDATABASE", "test"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "PASSWORD": os.environ.get("PGPASSWORD", ""),
            # One test database per checkout, so parallel checkouts never share one.
            "TEST": {"NAME": os.environ.get("MQLITE_TEST_PGNAME", f"test_mqlite_{_CHECKOUT}")},
        }
    }
elif DB == "sqlite":
    # A file, not :memory:, so worker threads and processes share it (WAL).
    _dir = os.environ.get("MQLITE_TEST_DIR") or tempfile.gettempdir()
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(Path(_dir) / "mqlite-tests.sqlite3"),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {
                "NAME": str(Path(_dir) / f"mqlite-test-{os.getpid()}.sqlite3"),
            },
        }
    }
else:  # pragma: no cover
    raise RuntimeError(f"MQLITE_TEST_DB must be sqlite or postgres, not {DB!r}")

# A child process started by a test (a real ``runworker``) uses the test database the
# parent pytest process created: the parent passes its actual NAME here.
if os.environ.get("MQLITE_TEST_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["MQLITE_TEST_DB_NAME"]

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
MQLITE: dict[str, object] = {"QUEUES": {}}

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
