"""Counting the transactions a process commits on a database, from every thread: what
the idle-cost tests pin (an idle worker's transactions a second, a trickle's per task).

A transaction is what PostgreSQL's ``pg_stat_database.xact_commit`` would count for the
process: each commit of an ``atomic`` block, and each statement run in autocommit mode
(outside any block, every statement is a transaction of its own, a read as well; on
SQLite a read in autocommit mode commits nothing and is not counted). Statements on the
engine's own cursor (``engine/cursor.py``, which skips Django's cursor wrapper) count
as Django's do. Only Django's connections are counted; the LISTEN connection and the
SQLite commit watcher hold connections of their own that commit nothing (LISTEN and
``PRAGMA data_version``; the watcher's checkpoint writes no transaction).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from django_mqlite.engine.cursor import DirectEngineCursor


class Transactions:
    """The running count of ``alias``'s transactions, by thread name; ``total()`` sums
    them, leaving out the threads ``skip`` names (a test's producer)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.by_thread: Counter[str] = Counter()
        self.statements: Counter[str] = Counter()
        self._lock = threading.Lock()

    def note(self, db: Any, sql: str | None) -> None:
        if db.alias != self.alias:
            return
        name = threading.current_thread().name
        with self._lock:
            self.by_thread[name] += 1
            if sql is not None:
                self.statements[" ".join(sql.split()[:3])] += 1

    def total(self, skip: tuple[str, ...] = ()) -> int:
        with self._lock:
            return sum(n for name, n in self.by_thread.items() if name not in skip)

    def snapshot(self) -> dict[str, Any]:
        """The total, by thread and by statement, read together."""
        with self._lock:
            by_thread = dict(self.by_thread)
            return {
                "total": sum(by_thread.values()),
                "by_thread": by_thread,
                "statements": dict(self.statements),
            }

    def restart(self) -> None:
        """Count from zero, in a forked child (whose copy of the lock may have been held
        by one of the parent's threads at the fork: a new one)."""
        self._lock = threading.Lock()
        self.by_thread = Counter()
        self.statements = Counter()


@contextmanager
def counting(alias: str = "default") -> Iterator[Transactions]:
    """Count ``alias``'s transactions committed by this process while the block runs."""
    counted = Transactions(alias)
    commit: Callable[..., Any] = BaseDatabaseWrapper.commit
    execute: Callable[..., Any] = CursorWrapper._execute
    direct: Callable[..., Any] = DirectEngineCursor.execute
    executemany: Callable[..., Any] = CursorWrapper._executemany

    def counted_commit(self: BaseDatabaseWrapper) -> Any:
        out = commit(self)
        counted.note(self, None)
        return out

    def autocommitted(self: CursorWrapper, sql: Any, *args: Any) -> None:
        # SQLite's ``BEGIN IMMEDIATE`` opens a block (Django runs it in autocommit mode):
        # the block counts at its commit.
        text = str(sql)
        if self.db.get_autocommit() and not self.db.in_atomic_block and text[:5] != "BEGIN":
            counted.note(self.db, text)

    def counted_execute(self: CursorWrapper, sql: Any, *args: Any) -> Any:
        out = execute(self, sql, *args)
        autocommitted(self, sql)
        return out

    def counted_direct(self: DirectEngineCursor, sql: Any, *args: Any) -> Any:
        # The engine's own cursor (engine/cursor.py) skips ``CursorWrapper._execute``:
        # PostgreSQL's one-statement claim runs on it in autocommit mode.
        out = direct(self, sql, *args)
        if self.db.vendor != "sqlite" or str(sql).lstrip()[:6].upper() != "SELECT":
            autocommitted(self, sql)  # (SQLite's read in autocommit mode commits nothing)
        return out

    def counted_executemany(self: CursorWrapper, sql: Any, *args: Any) -> Any:
        out = executemany(self, sql, *args)
        autocommitted(self, sql)
        return out

    BaseDatabaseWrapper.commit = counted_commit  # type: ignore[method-assign]
    CursorWrapper._execute = counted_execute  # type: ignore[method-assign]
    DirectEngineCursor.execute = counted_direct  # type: ignore[method-assign]
    CursorWrapper._executemany = counted_executemany  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        BaseDatabaseWrapper.commit = commit  # type: ignore[method-assign]
        CursorWrapper._execute = execute  # type: ignore[method-assign]
        DirectEngineCursor.execute = direct  # type: ignore[method-assign]
        CursorWrapper._executemany = executemany  # type: ignore[method-assign]
