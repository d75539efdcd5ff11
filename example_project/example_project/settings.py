"""Settings of the example shop. SQLite by default; ``DATABASE_URL``-free PostgreSQL
variant: set ``EXAMPLE_DB=postgres`` (and PGHOST/PGUSER/PGDATABASE as needed)."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-change-me")
DEBUG = True
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("EXAMPLE_DB") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("PGDATABASE", "postgres"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
        }
    }
else:
    # The recommended SQLite setup for a queue: WAL, BEGIN IMMEDIATE, a busy timeout.
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("EXAMPLE_DB_PATH", BASE_DIR / "db.sqlite3"),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_mqlite",
    "shop",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "example_project.urls"
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

MQLITE = {
    "QUEUES": {
        "payments": {"max_delivery_count": 3, "lock_duration": 30},
        "reports": {"lock_duration": 600},
        "emails": {},
    },
    # Demo speed: retries after ~0.2 s, 0.4 s, ... and a killed worker's locks are
    # reclaimed after 2 s of silence. Production defaults are 1 s backoff, 5 s
    # heartbeats and 15 s staleness.
    "RETRY_BACKOFF_BASE": 0.2,
    "RETRY_BACKOFF_CAP": 2.0,
    "HEARTBEAT_INTERVAL": 0.5,
    "WORKER_STALE_AFTER": 2.0,
    "REAP_INTERVAL": 0.25,
}
