"""The cursor the engine executes its statements on.

Django's SQLite cursor rewrites every statement from ``%s`` to ``?`` placeholders with a
regular expression, on every ``execute``. The engine issues a handful of constant
statements over and over, so on SQLite it executes on the raw ``sqlite3`` cursor with the
rewritten text looked up in a small per-process dict instead. Everything else Django's
cursor does for us is kept: the broken-transaction check, the translation of driver
errors into ``django.db`` exceptions, and the thread-sharing check. When queries are
being recorded (``DEBUG``, ``CaptureQueriesContext``) or an execute wrapper is installed
(``connection.execute_wrapper``), the engine uses Django's own cursor, so nothing it runs
is hidden from them.
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


class SQLiteEngineCursor(CursorWrapper):
    """A ``CursorWrapper`` over the raw ``sqlite3`` cursor that rewrites placeholders
    once per distinct statement. Only for the engine's own ``%s``-style statements."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        self.db.validate_no_broken_transaction()
        with self.db.wrap_database_errors:
            if params is None:
                return self.cursor.execute(sql)
            return self.cursor.execute(qmark(str(sql)), params)


def cursor_for(alias: str) -> CursorWrapper:
    """A cursor for the engine's statements on database ``alias``."""
    db = connections[alias]
    if db.vendor != "sqlite" or db.queries_logged or db.execute_wrappers:
        return dialect_for(alias).engine_cursor(db.cursor())
    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:  # a closed connection fails as Django's cursor does
        raw = db.connection.cursor()
    return SQLiteEngineCursor(raw, db)
