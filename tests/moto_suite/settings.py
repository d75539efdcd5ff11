"""The project the moto suite runs against: the SQS endpoint at the site root (moto's
server mode sends every client there), moto's reset URLs, moto's fake credentials
(``FOOBARKEY``/``FOOBARSECRET``) and its default account. ``MOTO_MQLITE_DB`` is
``sqlite`` or ``postgres``; ``MOTO_MQLITE_NAME`` the database (a file for SQLite)."""

from __future__ import annotations

import os

SECRET_KEY = "moto-suite-only-not-secret"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS = ["*"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "tests.moto_suite.urls"
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django_mqlite"]
MIDDLEWARE: list[str] = []

_NAME = os.environ.get("MOTO_MQLITE_NAME", "moto-mqlite.sqlite3")
if os.environ.get("MOTO_MQLITE_DB", "sqlite") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _NAME,
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "PASSWORD": os.environ.get("PGPASSWORD", ""),
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _NAME,
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

MQLITE = {
    "SQS": {
        "CREDENTIALS": {"FOOBARKEY": "FOOBARSECRET"},
        "ACCOUNT_ID": "123456789012",
        "REGION": "us-east-1",
    }
}
