"""The ``MQLITE`` setting, resolved over defaults.

``mqlite_settings.RECEIPT_TTL`` etc. read the current value; the cache is dropped when
``MQLITE`` changes (``override_settings`` in tests included).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

DEFAULTS: dict[str, Any] = {
    # Database alias holding the queue tables.
    "DATABASE": "default",
    # Queues created/updated by migrate and at worker start: {name: {option: value}}.
    "QUEUES": {},
    # Topics created by migrate: {name: {"subscriptions": {queue: filter or None}}}.
    "TOPICS": {},
    # Seconds a settlement receipt / receive attempt can replay.
    "RECEIPT_TTL": 1800,
    # Largest accepted body, in bytes.
    "MAX_BODY_BYTES": 1024 * 1024,
    # Global DLQ retention defaults (per-queue 0/None inherits; <0 is unbounded).
    "DLQ_MAX_AGE": None,
    "DLQ_MAX_COUNT": None,
    "DLQ_MAX_BYTES": None,
    # Rows a maintenance statement touches at most, so no pass holds the writer for long.
    "REAP_CHUNK": 1000,
    # Seconds between reaper passes inside a worker / runreaper.
    "REAP_INTERVAL": 1.0,
    # Seconds after which a silent worker's locks are reclaimed.
    "WORKER_STALE_AFTER": 15.0,
    # Seconds between worker heartbeats.
    "HEARTBEAT_INTERVAL": 5.0,
    # Largest tolerated difference between a worker host's clock and the database's, in
    # seconds; None: a quarter of the shortest lock_duration of the queues it serves.
    "MAX_CLOCK_SKEW": None,
    # Seconds a stopped or silent worker's row is kept (for the admin) before pruning.
    "WORKER_RETENTION": 86400.0,
    # Seconds the per-minute history (``mq.history``) is kept; 0 turns sampling off.
    "HISTORY_RETENTION": 7 * 86400,
    # Consumer retries: delay = min(CAP, BASE * 2 ** (attempt - 1)) seconds, half of it
    # fixed and half random jitter.
    "RETRY_BACKOFF_BASE": 1.0,
    "RETRY_BACKOFF_CAP": 300.0,
    # HTTP API: DRF class paths; None means the project's REST_FRAMEWORK defaults.
    "API_AUTHENTICATION_CLASSES": None,
    "API_PERMISSION_CLASSES": None,
    "API_MAX_REQUEST_BYTES": 16 * 1024 * 1024,
    "API_MAX_BATCH": 256,
    # Largest response body the API builds, in bytes: peek and receive stop adding
    # messages before it (at least one message is always returned).
    "API_MAX_RESPONSE_BYTES": 8 * 1024 * 1024,
    # Tasks queues that accept sends from the HTTP API (and other remote surfaces).
    "OPEN_TASK_QUEUES": [],
    # LISTEN connections by database alias: {alias: {settings overriding DATABASES[alias]}}
    # (e.g. {"PORT": 5432} to reach PostgreSQL itself behind PgBouncer), or False: no LISTEN.
    "LISTEN": {},
    # Server-side prepared statements for the send on PostgreSQL (engine/prepared.py):
    # None: on, unless the alias sets DISABLE_SERVER_SIDE_CURSORS (transaction pooling);
    # True/False: on/off for every PostgreSQL alias.
    "PREPARED_STATEMENTS": None,
    # Periodic schedules: {name: {"cron": "*/5 * * * *", "task": "path" | "queue": ..., ...}}.
    "PERIODIC": {},
    # Dotted paths of handler middleware, ``factory(handler) -> handler``, the first the
    # outermost, wrapping every consumer and task call (worker/middleware.py).
    "MIDDLEWARE": [],
    # OpenTelemetry tracing (the ``[otel]`` extra, django_mqlite/otel): None turns it on
    # when opentelemetry-api is installed, False never imports it, True requires it.
    "TRACING": None,
    # Also a span for each worker claim and settlement (children of the consumer spans).
    "TRACING_CLAIMS_AND_SETTLES": False,
    # SQS-compatible endpoint: {"CREDENTIALS": {key id: secret | {"secret", "user"}},
    # "ACCOUNT_ID", "REGION", "MAX_CLOCK_SKEW"}; no credentials, no access.
    "SQS": {},
}


class MQLiteSettings:
    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"unknown MQLITE setting {name!r}")
        if name not in self._cache:
            user = getattr(settings, "MQLITE", {}) or {}
            self._cache[name] = user.get(name, DEFAULTS[name])
        return self._cache[name]

    def reload(self) -> None:
        self._cache.clear()


mqlite_settings = MQLiteSettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "MQLITE":
        mqlite_settings.reload()


setting_changed.connect(_reload)
