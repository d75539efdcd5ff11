"""The cursor the engine executes its statements on.

Django's SQLite cursor rewrites every statement from ``%s`` to ``?`` placeholders with a
regular expression, on every ``execute``. The engine issues a handful of constant
statements over and over, so on SQLite it executes on the raw ``sqlite3`` cursor with the
rewritten text looked up in a small per-process dict instead. On PostgreSQL it executes
on the driver's cursor (psycopg's, made by Django's ``create_cursor``, so with the
connection's time zone), without the layers of Django's cursor wrapper around each call
(5-16 us of CPU less a Tasks enqueue, measured in docs/benchmark.md). Everything else
Django's cursor does for us is kept: the broken-transaction check, the translation of
driver errors into ``django.db`` exceptions, the thread-sharing check and the
connection health check. When queries are being recorded (``DEBUG``,
``CaptureQueriesContext``), an execute wrapper is installed
(``connection.execute_wrapper``) or ``CursorWrapper.execute`` has been replaced (as
Sentry's Django integration and APM agents do, to see every query), the engine uses
Django's own cursor, so nothing it runs is hidden from them. MariaDB's engine cursor
wraps Django's (``dialects.mariadb``).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import connections
from django.db.backends.utils import CursorWrapper

from .dialects import dialect_for

_FORMAT = re.compile(r"(?<!%)%s")
_QMARK: dict[str, str] = {}
_QMARK_MAX = 1024  # statements differ by batch size (VALUES lists); bound the dict


def qmark(sql: str) -> str:
    """``sql`` with ``%s`` placeholders as ``?`` (and ``%%`` as ``%``), as Django's SQLite
    cursor rewrites it."""
    out = _QMARK.get(sql)
    if out is None:
        if len(_QMARK) >= _QMARK_MAX:
            _QMARK.clear()
        out = _QMARK[sql] = _FORMAT.sub("?", sql).replace("%%", "%")
    return out


class DirectEngineCursor(CursorWrapper):
    """A ``CursorWrapper`` over the driver's cursor that runs each statement as given,
    with Django's broken-transaction check and error translation but not its wrapper
    machinery (only used while nothing records queries or wraps executes)."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        self.db.validate_no_broken_transaction()
        with self.db.wrap_database_errors:
            if params is None:
                return self.cursor.execute(sql)
            return self.cursor.execute(self.text(sql), params)

    @staticmethod
    def text(sql: Any) -> Any:
        """The statement as the driver takes it (``%s`` placeholders: as written)."""
        return sql


class SQLiteEngineCursor(DirectEngineCursor):
    """The direct cursor over the raw ``sqlite3`` cursor, its placeholders rewritten
    once per distinct statement. Only for the engine's own ``%s``-style statements."""

    @staticmethod
    def text(sql: Any) -> Any:
        return qmark(str(sql))


def cursor_for(alias: str) -> CursorWrapper:
    """A cursor for the engine's statements on database ``alias``."""
    db = connections[alias]
    vendor = db.vendor
    if vendor not in _DIRECT or db.queries_logged or db.execute_wrappers or _execute_replaced():
        return dialect_for(alias).engine_cursor(db.cursor())
    db.close_if_health_check_failed()  # what Django's cursor() does, in its order
    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:  # a closed connection fails as Django's cursor does
        if vendor == "postgresql":
            return DirectEngineCursor(db.create_cursor(), db)
        return SQLiteEngineCursor(db.connection.cursor(), db)


#: The vendors whose engine statements run on the driver's cursor directly.
_DIRECT = frozenset({"sqlite", "postgresql"})
#: ``CursorWrapper.execute`` as last looked at, and whether it was replaced.
_looked_at: tuple[Any, bool] = (None, False)


def _execute_replaced() -> bool:
    """Whether ``CursorWrapper.execute`` is not Django's own: a tracer patched the class
    to see every query (Sentry's Django integration, APM agents), directly, with
    ``functools.wraps`` or with ``wrapt`` (both leave ``__wrapped__``)."""
    global _looked_at
    execute = CursorWrapper.__dict__.get("execute")
    seen, replaced = _looked_at
    if execute is not seen:
        replaced = (
            getattr(execute, "__module__", None) != "django.db.backends.utils"
            or getattr(execute, "__qualname__", None) != "CursorWrapper.execute"
            or hasattr(execute, "__wrapped__")
        )
        _looked_at = (execute, replaced)
    return replaced
