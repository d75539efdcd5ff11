"""Settings of the example shop. SQLite by default; ``DATABASE_URL``-free PostgreSQL
variant: set ``EXAMPLE_DB=postgres`` (and PGHOST/PGUSER/PGDATABASE as needed).

Safe to copy: ``DEBUG`` is off unless ``DJANGO_DEBUG=1``; outside ``DEBUG`` it refuses to
start without ``DJANGO_SECRET_KEY``; ``ALLOWED_HOSTS`` comes from
``DJANGO_ALLOWED_HOSTS`` (comma-separated); ``DJANGO_HTTPS=1`` turns on the settings
that need HTTPS (secure cookies, redirect, and HSTS for a year with subdomains and
preload, each loosened only by its own variable: ``DJANGO_HSTS_SECONDS``,
``DJANGO_HSTS_INCLUDE_SUBDOMAINS=0``, ``DJANGO_HSTS_PRELOAD=0``), so
``manage.py check --deploy`` is clean. To try it locally:
``DJANGO_DEBUG=1 python manage.py demo``.
"""

from __future__ import annotations

import os
from pathlib import Path

import django
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Set DJANGO_SECRET_KEY (or DJANGO_DEBUG=1 to try the example locally)."
        )
    SECRET_KEY = "django-insecure-example-for-local-debugging-only"
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")
]
if os.environ.get("DJANGO_HTTPS", "") == "1":
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # Secure by default: a year (what browsers' preload lists ask for), subdomains
    # included, preload allowed. A site that serves some subdomain over plain HTTP, or is
    # not ready to commit for a year, says so with these variables.
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = os.environ.get("DJANGO_HSTS_INCLUDE_SUBDOMAINS", "1") == "1"
    SECURE_HSTS_PRELOAD = os.environ.get("DJANGO_HSTS_PRELOAD", "1") == "1"
    # Behind a TLS-terminating proxy that sets this header (and strips it from clients).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
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
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_mqlite",
    "shop",
]
if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")  # the Tasks backport
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
        # Task queues keep finished results so get_result() can read them.
        "emails": {"keep_results": 86400, "max_delivery_count": 5},
        "maintenance": {"keep_results": 86400},
    },
    # Periodic work, ticked by the running workers (no beat process).
    "PERIODIC": {
        "cleanup-unpaid": {
            "cron": "0 4 * * *",
            "task": "shop.tasks.cleanup_unpaid",
            "kwargs": {"days": 30},
            "timezone": "Europe/Paris",
        },
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

# Django Tasks run on django-mqlite: enqueue is a row in your transaction.
TASKS = {
    "default": {
        "BACKEND": "django_mqlite.backends.MQLiteBackend",
        "QUEUES": ["emails", "maintenance"],
    }
}
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"

# The HTTP API (mounted at /mq/): token auth for programs in any language, session auth
# for the browsable pages. Create a token: manage.py drf_create_token <username>. The
# API's own permissions apply whatever DEFAULT_PERMISSION_CLASSES says: give the user
# "Can send messages to queues" etc. in the admin (see docs/security.md).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
