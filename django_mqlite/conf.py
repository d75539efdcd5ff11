"""The ``MQLITE`` setting, resolved over defaults, in two views.

``current()`` is the typed view every engine, worker, API and SQS path reads: one
frozen ``Settings`` with units in its names (``receipt_ttl_ms``, ``reap_interval_s``),
each conversion written once, here. It is built on first read and dropped when
``MQLITE`` changes (``override_settings`` in tests included), so a read is a global
lookup, no dict walk.

``mqlite_settings.X`` is the raw view: the user's value as given, or its default. The
system checks validate raw input with it; a value the typed view cannot convert raises
``ImproperlyConfigured`` there, which check ``django_mqlite.E008`` reports.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
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
    # runworker's processes without --processes: None is one per core; on a database
    # with one writer at a time (SQLite) two per core, at most 4, one on a single core;
    # read at start-up (worker/prefork.py).
    "WORKER_PROCESSES": None,
    # Seconds between worker heartbeats.
    "HEARTBEAT_INTERVAL": 5.0,
    # Largest tolerated difference between a worker host's clock and the database's, in
    # seconds; None: a quarter of the shortest lock_duration of the queues it serves.
    "MAX_CLOCK_SKEW": None,
    # Seconds a stopped or silent worker's row is kept (for the admin) before pruning.
    "WORKER_RETENTION": 86400.0,
    # Seconds the per-minute history (``mq.history``) is kept; 0 turns sampling off.
    "HISTORY_RETENTION": 7 * 86400,
    # Seconds a finished batch (``mq.batch``, and a message's own node) is kept after
    # it finished, for ``mq.get_batch`` and the admin; None keeps them forever.
    "BATCH_RETENTION": 7 * 86400,
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
    """The raw view: ``mqlite_settings.RECEIPT_TTL`` is the value as the user wrote it."""

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


@dataclass(frozen=True, slots=True)
class Settings:
    """``MQLITE`` as the code reads it: converted, with units in the names.

    Durations a statement compares with epoch-ms columns are ``_ms`` ints; those a
    thread sleeps or a log line shows are ``_s`` floats. Settings read only at start-up
    and validated where they are read (``PERIODIC``, ``MIDDLEWARE``, ``TRACING``, the
    API's DRF class lists) stay on the raw view.
    """

    database: str
    #: ``MQLITE["QUEUES"]`` / ``["TOPICS"]`` / ``["SQS"]`` / ``["LISTEN"]`` as given
    #: ({} when unset); malformed entries are the system checks' to report.
    queues: Mapping[str, Any]
    topics: Mapping[str, Any]
    sqs: Mapping[str, Any]
    listen: Mapping[str, Any]
    receipt_ttl_ms: int
    max_body_bytes: int
    #: Global DLQ retention defaults (None: unbounded unless the queue bounds it).
    dlq_max_age_ms: int | None
    dlq_max_count: int | None
    dlq_max_bytes: int | None
    reap_chunk: int
    reap_interval_s: float
    worker_stale_after_s: float
    worker_stale_after_ms: int
    heartbeat_interval_s: float
    max_clock_skew_s: float | None
    worker_retention_ms: int
    history_retention_ms: int
    #: None: finished batches are kept forever.
    batch_retention_ms: int | None
    retry_backoff_base_s: float
    retry_backoff_cap_s: float
    api_max_request_bytes: int
    api_max_batch: int
    api_max_response_bytes: int
    open_task_queues: frozenset[str]
    prepared_statements: bool | None
    tracing_claims_and_settles: bool


def _number(raw: Mapping[str, Any], name: str) -> float:
    value = raw.get(name, DEFAULTS[name])
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ImproperlyConfigured(f'MQLITE["{name}"] must be a number, not {value!r}')
    return number


def _ms(raw: Mapping[str, Any], name: str) -> int:
    return int(_number(raw, name) * 1000)


def _optional(raw: Mapping[str, Any], name: str, scale: int) -> int | None:
    if raw.get(name, DEFAULTS[name]) is None:
        return None
    return round(_number(raw, name) * scale)


def _mapping(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = raw.get(name, DEFAULTS[name])
    return value if isinstance(value, Mapping) else {}


def build(raw: Mapping[str, Any]) -> Settings:
    """The typed view of ``raw`` (the user's ``MQLITE``); ``ImproperlyConfigured`` for a
    value that is not what its setting takes."""
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured("MQLITE must be a dict")

    def get(name: str) -> Any:
        return raw.get(name, DEFAULTS[name])

    skew = get("MAX_CLOCK_SKEW")
    prepared = get("PREPARED_STATEMENTS")
    return Settings(
        database=str(get("DATABASE")),
        queues=_mapping(raw, "QUEUES"),
        topics=_mapping(raw, "TOPICS"),
        sqs=_mapping(raw, "SQS"),
        listen=_mapping(raw, "LISTEN"),
        receipt_ttl_ms=_ms(raw, "RECEIPT_TTL"),
        max_body_bytes=int(_number(raw, "MAX_BODY_BYTES")),
        dlq_max_age_ms=_optional(raw, "DLQ_MAX_AGE", 1000),
        dlq_max_count=_optional(raw, "DLQ_MAX_COUNT", 1),
        dlq_max_bytes=_optional(raw, "DLQ_MAX_BYTES", 1),
        reap_chunk=int(_number(raw, "REAP_CHUNK")),
        reap_interval_s=_number(raw, "REAP_INTERVAL"),
        worker_stale_after_s=_number(raw, "WORKER_STALE_AFTER"),
        worker_stale_after_ms=_ms(raw, "WORKER_STALE_AFTER"),
        heartbeat_interval_s=_number(raw, "HEARTBEAT_INTERVAL"),
        max_clock_skew_s=None if skew is None else _number(raw, "MAX_CLOCK_SKEW"),
        worker_retention_ms=_ms(raw, "WORKER_RETENTION"),
        history_retention_ms=max(0, round(_number(raw, "HISTORY_RETENTION") * 1000)),
        batch_retention_ms=_optional(raw, "BATCH_RETENTION", 1000),
        retry_backoff_base_s=_number(raw, "RETRY_BACKOFF_BASE"),
        retry_backoff_cap_s=_number(raw, "RETRY_BACKOFF_CAP"),
        api_max_request_bytes=int(_number(raw, "API_MAX_REQUEST_BYTES")),
        api_max_batch=int(_number(raw, "API_MAX_BATCH")),
        api_max_response_bytes=int(_number(raw, "API_MAX_RESPONSE_BYTES")),
        open_task_queues=frozenset(get("OPEN_TASK_QUEUES") or ()),
        prepared_statements=None if prepared is None else bool(prepared),
        tracing_claims_and_settles=bool(get("TRACING_CLAIMS_AND_SETTLES")),
    )


_current: Settings | None = None
#: Bumped by each change of ``MQLITE``: a build that began before one is not kept.
_generation = 0
_lock = threading.Lock()


def current() -> Settings:
    """The typed ``MQLITE``, built on first read."""
    built = _current
    if built is None:
        built = _rebuild()
    return built


def _rebuild() -> Settings:
    global _current
    began = _generation
    built = build(getattr(settings, "MQLITE", None) or {})
    with _lock:
        # A change of MQLITE while this read the old value would otherwise be undone
        # until the next change (a worker thread reading during override_settings).
        if began == _generation:
            _current = built
    return built


def _reload(*, setting: str, **kwargs: Any) -> None:
    global _current, _generation
    if setting == "MQLITE":
        with _lock:
            _generation += 1
            _current = None
        mqlite_settings.reload()


setting_changed.connect(_reload)
