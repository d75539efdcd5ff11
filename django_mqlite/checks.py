"""System checks, by what they check: the queue databases (refuse databases we do not
support, warn about SQLite settings that make a queue slow or fragile), the ``MQLITE``
setting, its periodic schedules and declared topics, and what ``runworker`` will serve
(a Tasks backend this Django can run, at most one consumer per queue). Ids are stable:
``django_mqlite.E00x`` / ``W00x``, ``E011`` (declared task subscriptions), ``E020`` and
``E021``."""

from __future__ import annotations

import difflib
import sqlite3
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import connections

from .conf import DEFAULTS, build, mqlite_settings
from .tasks.support import INSTALL_HINT, framework_problem, mqlite_task_aliases
from .worker.registry import ConsumerConflictError

SUPPORTED_ENGINES = {
    "django.db.backends.sqlite3": "sqlite",
    "django.db.backends.postgresql": "postgresql",
}
#: Django's backend for MySQL and MariaDB alike: MariaDB 10.6+ only, which only the
#: server can say (``check_mariadb``; docs/configuration.md, "MariaDB").
MYSQL_ENGINE = "django.db.backends.mysql"
MIN_SQLITE = (3, 35, 0)
MIN_MARIADB = (10, 6)
WHY_NOT_MYSQL = (
    "MySQL is not supported: its needs are MariaDB's (SKIP LOCKED claims, no UPDATE ... "
    "RETURNING, no partial indexes), but MySQL 8 cannot be installed where "
    "django-mqlite is tested, so it is refused until it can be tested."
)
#: Keys of ``MQLITE`` that earlier versions read and this one ignores: why, for W004.
OBSOLETE_KEYS = {
    "EXPERIMENTAL_MARIADB": "MariaDB 10.6+ is a supported queue database now, with no "
    "switch; MySQL and older MariaDB are refused whatever it says (check E012)",
}
RECOMMENDED_SQLITE_OPTIONS = (
    '"OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20, '
    '"init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}'
)


#: Every check of this app carries this tag, so ``runworker`` can run just these at
#: start instead of the whole project's checks (which cost more than the rest of its
#: start-up). ``manage.py check`` runs them with all the others, as before.
TAG = "django_mqlite"


def _db() -> tuple[str, dict[str, Any]]:
    alias = mqlite_settings.DATABASE
    return alias, settings.DATABASES.get(alias, {})


@register(TAG)
def check_database(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from .engine.databases import queue_databases

    out = _check_declared_databases()
    if out:
        return out
    for alias in queue_databases():
        out.extend(_check_one_database(alias, settings.DATABASES.get(alias, {})))
    return out


def _check_declared_databases() -> list[CheckMessage]:
    """Each ``"database"`` of a declared queue names an alias of ``DATABASES``."""
    declared = mqlite_settings.QUEUES
    out: list[CheckMessage] = []
    for name, options in declared.items() if isinstance(declared, dict) else ():
        alias = options.get("database") if isinstance(options, dict) else None
        if alias is not None and (not isinstance(alias, str) or alias not in settings.DATABASES):
            out.append(
                Error(
                    f'MQLITE["QUEUES"][{name!r}] names the database {alias!r}, which is not '
                    "in DATABASES.",
                    hint='Set "database" to one of your database aliases, or leave it out '
                    "(the queue then lives on MQLITE['DATABASE']).",
                    id="django_mqlite.E006",
                )
            )
    return out


def _check_one_database(alias: str, conf: dict[str, Any]) -> list[CheckMessage]:
    if not conf:
        return [
            Error(
                f'MQLITE["DATABASE"] names {alias!r}, which is not in DATABASES.',
                hint="Set MQLITE['DATABASE'] to one of your database aliases.",
                id="django_mqlite.E003",
            )
        ]
    engine = conf.get("ENGINE", "")
    if engine == MYSQL_ENGINE:
        return []  # MySQL or MariaDB: only the server can say, check_mariadb asks it
    vendor = SUPPORTED_ENGINES.get(engine)
    if vendor is None and engine.endswith(("postgresql", "postgis", "sqlite3", "spatialite")):
        vendor = "postgresql" if "post" in engine else "sqlite"
    if vendor is None:
        return [
            Error(
                f"django-mqlite does not support the database engine {engine!r} (alias {alias!r}).",
                hint="Use SQLite (embedded), PostgreSQL or MariaDB 10.6+ (scale-out) for the "
                "queue database; point MQLITE['DATABASE'] at such an alias.",
                id="django_mqlite.E001",
            )
        ]
    out: list[CheckMessage] = []
    if vendor == "sqlite":
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            out.append(
                Error(
                    f"SQLite {sqlite3.sqlite_version} is too old: django-mqlite needs 3.35+ "
                    "(UPDATE ... RETURNING).",
                    hint="Upgrade SQLite (for example with a newer Python build).",
                    id="django_mqlite.E002",
                )
            )
        options = conf.get("OPTIONS", {})
        if str(options.get("transaction_mode", "")).upper() != "IMMEDIATE":
            # One warning for a default startproject, with the whole block to paste: it
            # covers WAL too, so the WAL check below stays quiet until this one is fixed.
            out.append(
                Warning(
                    f"SQLite database {alias!r} is not set up for a queue: concurrent "
                    "writers fail with 'database is locked' instead of waiting.",
                    hint=f"Paste into DATABASES[{alias!r}]: {RECOMMENDED_SQLITE_OPTIONS},",
                    id="django_mqlite.W001",
                )
            )
    return out


@register(Tags.database, TAG)
def check_sqlite_wal(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    databases = kwargs.get("databases") or []
    alias, conf = _db()
    if alias not in databases or SUPPORTED_ENGINES.get(conf.get("ENGINE", "")) != "sqlite":
        return []
    if conf.get("NAME") in (":memory:", "") or "mode=memory" in str(conf.get("NAME")):
        return []
    if str(conf.get("OPTIONS", {}).get("transaction_mode", "")).upper() != "IMMEDIATE":
        return []  # W001 already asks for the whole block, WAL included
    with connections[alias].cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        mode = str(cursor.fetchone()[0]).lower()
    if mode != "wal":
        return [
            Warning(
                f"SQLite database {alias!r} is in journal_mode={mode}, not WAL: readers "
                "block the writer and every commit costs more.",
                hint=f"Paste into DATABASES[{alias!r}]: {RECOMMENDED_SQLITE_OPTIONS},",
                id="django_mqlite.W002",
            )
        ]
    return []


@register(Tags.database, TAG)
def check_mariadb(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Each queue database on Django's MySQL backend is MariaDB 10.6 or later (asked of
    the server, so only for the databases a command lets checks touch: ``migrate``,
    ``runworker``, ``check --database``), never MySQL."""
    from .engine.databases import queue_databases

    databases = kwargs.get("databases") or []
    out: list[CheckMessage] = []
    for alias in queue_databases():
        conf = settings.DATABASES.get(alias, {})
        if alias not in databases or conf.get("ENGINE") != MYSQL_ENGINE:
            continue
        conn: Any = connections[alias]
        if not conn.mysql_is_mariadb:
            out.append(
                Error(
                    f"Database {alias!r} is MySQL. {WHY_NOT_MYSQL}",
                    hint="Use MariaDB 10.6+, SQLite or PostgreSQL for the queue database.",
                    id="django_mqlite.E012",
                )
            )
        elif conn.mysql_version < MIN_MARIADB:
            version = ".".join(map(str, conn.mysql_version))
            out.append(
                Error(
                    f"MariaDB {version} is too old for database {alias!r}: django-mqlite "
                    "needs 10.6+ (SKIP LOCKED, INSERT and DELETE ... RETURNING).",
                    hint="Upgrade MariaDB.",
                    id="django_mqlite.E012",
                )
            )
    return out


@register(TAG)
def check_periodic(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``MQLITE["PERIODIC"]`` schedule parses (cron, time zone, target)."""
    from django.core.exceptions import ImproperlyConfigured

    from .tasks.periodic import schedules

    try:
        schedules()
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint="See docs/tasks.md, 'Periodic schedules', for the keys of a schedule.",
                id="django_mqlite.E004",
            )
        ]
    return []


@register(TAG)
def check_setting_keys(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    user = getattr(settings, "MQLITE", None) or {}
    if not isinstance(user, dict):
        return [
            Error(
                "MQLITE must be a dict.",
                hint='For example MQLITE = {"QUEUES": {"orders": {}}}.',
                id="django_mqlite.E005",
            )
        ]
    out: list[CheckMessage] = []
    for key in sorted(set(user) & set(OBSOLETE_KEYS)):
        out.append(
            Warning(
                f"MQLITE[{key!r}] is obsolete and ignored: {OBSOLETE_KEYS[key]}.",
                hint=f"Remove {key!r} from MQLITE.",
                id="django_mqlite.W004",
            )
        )
    for key in sorted(set(user) - set(DEFAULTS) - set(OBSOLETE_KEYS)):
        close = difflib.get_close_matches(str(key), list(DEFAULTS), n=1)
        out.append(
            Warning(
                f"MQLITE has an unknown key {key!r}; it is ignored.",
                hint=f"Did you mean {close[0]!r}?" if close else "See docs/configuration.md.",
                id="django_mqlite.W003",
            )
        )
    return out


@register(TAG)
def check_setting_values(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every number-valued ``MQLITE`` setting converts to the typed view (``conf.build``),
    so a worker does not fail on its first read of it."""
    from django.core.exceptions import ImproperlyConfigured

    user = getattr(settings, "MQLITE", None) or {}
    if not isinstance(user, dict):
        return []  # E005
    try:
        build(user)
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint="Durations are seconds and sizes bytes, as numbers; see "
                "docs/configuration.md.",
                id="django_mqlite.E008",
            )
        ]
    return []


@register(TAG)
def check_middleware(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``MQLITE["MIDDLEWARE"]`` entry imports and can wrap a handler."""
    from django.core.exceptions import ImproperlyConfigured

    from .worker import middleware

    try:
        middleware.load(middleware.paths())
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint='MQLITE["MIDDLEWARE"] lists dotted paths of factory(handler) -> handler '
                'callables, e.g. ["myapp.middleware.tenant"]; see docs/observability.md.',
                id="django_mqlite.E007",
            )
        ]
    return []


@register(TAG)
def check_declared_topics(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``MQLITE["TOPICS"]`` reads (E009), and each declared subscription of a Tasks queue
    is one ``migrate`` can make (E011): a task subscription, whose task passes the
    checks of ``mq.subscribe_task``. Nothing is written; only installed apps' modules
    are imported (the rule of a task path)."""
    from .engine.declared_topics import read
    from .exceptions import InvalidArgumentError

    user = getattr(settings, "MQLITE", None) or {}
    if not isinstance(user, dict):
        return []  # E005
    try:
        declared = read(user.get("TOPICS", DEFAULTS["TOPICS"]))
    except InvalidArgumentError as exc:
        return [
            Error(
                str(exc),
                hint='Declare {"topic": {"subscriptions": {"queue": filter or None}}}, or '
                'for a task {"queue": {"task": "app.tasks.on_event", "filter": ...}}; '
                "see docs/topics.md, 'Declaring topics'.",
                id="django_mqlite.E009",
            )
        ]
    out: list[CheckMessage] = []
    for topic in declared:
        for sub in topic.subscriptions:
            problem = _declared_task_problem(sub.queue, sub.task)
            if problem is not None:
                out.append(
                    Error(
                        f'MQLITE["TOPICS"][{topic.name!r}] subscribes queue {sub.queue!r}: '
                        f"{problem}",
                        hint='A Tasks queue subscribes a task: declare {queue: {"task": '
                        '"app.tasks.on_event", "filter": ...}} with the dotted path of a '
                        "@task of an installed app whose queue_name is that queue and whose "
                        "backend is django-mqlite's; see docs/topics.md, 'Declaring topics'.",
                        id="django_mqlite.E011",
                    )
                )
    return out


def _declared_task_problem(queue: str, task: str | None) -> str | None:
    from .exceptions import InvalidArgumentError
    from .tasks.topics import Delivery, task_of

    if task is None:
        return Delivery().refusal(queue)
    try:
        task_of(task, queue)
    except InvalidArgumentError as exc:
        return str(exc)
    return None


# What runworker will serve (ids E020, E021).


@register()
def check_tasks_framework(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``TASKS`` names django-mqlite's backend on a Django that cannot run it."""
    aliases = mqlite_task_aliases()
    problem = framework_problem() if aliases else None
    if problem is None:
        return []
    return [
        Error(
            f"TASKS[{aliases[0]!r}] uses django-mqlite's backend, but {problem}.",
            hint=f"On Django 5.2: {INSTALL_HINT} (installs the django-tasks backport). "
            "Or upgrade to Django 6.1+.",
            id="django_mqlite.E021",
        )
    ]


@register()
def check_one_consumer_per_queue(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Import what ``runworker`` imports (every app's ``consumers`` and ``tasks`` modules,
    the Tasks backends' queues) and report two handlers registered for one queue."""
    from .worker.discovery import autodiscover

    if mqlite_task_aliases() and framework_problem() is not None:
        return []  # E021 says what is missing; the apps' task modules cannot import yet
    try:
        autodiscover()
    except ConsumerConflictError as exc:
        return [
            Error(
                f"{exc}; runworker would refuse to start.",
                hint="One handler per queue: rename one of the queues, or handle both kinds "
                "of message in one consumer (for example by msg.subject). A Tasks backend's "
                "QUEUES are served by its task runner, so a consumer cannot share them.",
                id="django_mqlite.E020",
            )
        ]
    return []
