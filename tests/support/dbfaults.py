"""Database faults a test can inject: break one thread's connection, terminate the
sessions of this test's database (PostgreSQL, MariaDB), hold SQLite's write lock from a
foreign process.

A broken connection is what a worker thread sees after a server restart or a
``pg_terminate_backend``: on a server database the session really is ended (from another
connection, waiting until it is gone: ``pg_terminate_backend`` on PostgreSQL, ``KILL
CONNECTION`` on MariaDB); on SQLite, which has no server, the thread's raw ``sqlite3``
connection is closed under Django's feet (through PgBouncer too, which owns the server
connections), so its next query fails the way a lost connection does.

How a session is ended, how a row is held from another connection and how a waiter is
seen differ per database: each is written once, here.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

#: Sessions ``terminate_backends`` spares on MariaDB, which cannot name a session (see
#: ``spare``): their connection ids.
_spared: set[int] = set()


def break_connection(alias: str = "default") -> None:
    """Break this thread's connection to ``alias``; its next query fails."""
    conn = connections[alias]
    conn.ensure_connection()
    break_wrapper(conn)


def break_wrapper(wrapper: BaseDatabaseWrapper, session: int | None = None) -> None:
    """Break a connection, this thread's or one another thread opened (a termination of
    every session, a server restart); its next query fails. For another thread's
    connection pass the ``session`` that ``session_of`` read on that thread: the thread
    may be in a query now, and a MariaDB connection must not be touched from two threads
    at once (mysqlclient refuses)."""
    raw = wrapper.connection
    if raw is None:
        return
    server = _SERVERS.get(wrapper.vendor)
    if server is None or os.environ.get("MQLITE_TEST_DB") == "pgbouncer":
        # No server to lose (SQLite), or none this connection owns (PgBouncer pools the
        # server connections): the client's end is closed instead (SQLite's connections
        # are opened with check_same_thread=False).
        raw.close()
        return
    server.end_session(wrapper, server.session(wrapper) if session is None else session)


def session_of(wrapper: BaseDatabaseWrapper) -> int | None:
    """The server session of ``wrapper``'s open connection (None without a server), read
    on the thread that owns it, e.g. in a ``connection_created`` receiver."""
    server = _SERVERS.get(wrapper.vendor)
    if server is None or wrapper.connection is None:
        return None
    return server.session(wrapper)


def spare(wrapper: BaseDatabaseWrapper) -> None:
    """Keep this connection's session out of ``terminate_backends`` (the test's own)."""
    server = _SERVERS.get(wrapper.vendor)
    if server is not None:
        wrapper.ensure_connection()
        server.spare(wrapper)


def has_sessions(wrapper: BaseDatabaseWrapper) -> bool:
    """Whether ``wrapper``'s database is a server whose sessions can be ended."""
    return wrapper.vendor in _SERVERS


def terminate_backends(wrapper: BaseDatabaseWrapper) -> int:
    """End every session on ``wrapper``'s database but its own and those ``spare``
    kept; returns how many."""
    return _SERVERS[wrapper.vendor].terminate_all(wrapper)


# -- PostgreSQL ------------------------------------------------------------------------------

PARENT = "mqlite-test-parent"


def _pg_session(wrapper: BaseDatabaseWrapper) -> int:
    return int(wrapper.connection.info.backend_pid)


def _pg_end_session(wrapper: BaseDatabaseWrapper, pid: int) -> None:
    import psycopg

    with psycopg.connect(**wrapper.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
            if time.monotonic() > deadline:
                raise AssertionError(f"backend {pid} still there 10 s after its termination")
            time.sleep(0.01)


def _pg_spare(wrapper: BaseDatabaseWrapper) -> None:
    with wrapper.cursor() as cursor:
        cursor.execute(f"SET application_name = '{PARENT}'")


def _pg_terminate_all(wrapper: BaseDatabaseWrapper) -> int:
    import psycopg

    with psycopg.connect(**wrapper.get_connection_params(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name IS DISTINCT FROM %s",
            [PARENT],
        ).fetchall()
    return len(rows)


# -- MariaDB -----------------------------------------------------------------------------------


def _my_connect(wrapper: BaseDatabaseWrapper) -> Any:
    import MySQLdb

    params = dict(wrapper.get_connection_params())
    params.pop("isolation_level", None)
    conn = MySQLdb.connect(**params)
    conn.autocommit(True)
    return conn


def _my_kill(other: Any, ids: list[int]) -> None:
    cursor = other.cursor()
    for session in ids:
        try:
            cursor.execute("KILL CONNECTION %s", [session])
        except Exception as exc:  # gone already (1094: unknown thread id)
            if getattr(exc, "args", (None,))[0] != 1094:
                raise
    deadline = time.monotonic() + 10
    while ids:
        marks = ", ".join(["%s"] * len(ids))
        cursor.execute(f"SELECT id FROM information_schema.PROCESSLIST WHERE id IN ({marks})", ids)
        if not cursor.fetchall():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"sessions {ids} still there 10 s after KILL")
        time.sleep(0.01)


def _my_session(wrapper: BaseDatabaseWrapper) -> int:
    return int(wrapper.connection.thread_id())


def _my_end_session(wrapper: BaseDatabaseWrapper, session: int) -> None:
    other = _my_connect(wrapper)
    try:
        _my_kill(other, [session])
    finally:
        other.close()


def _my_spare(wrapper: BaseDatabaseWrapper) -> None:
    _spared.add(_my_session(wrapper))


def _my_terminate_all(wrapper: BaseDatabaseWrapper) -> int:
    other = _my_connect(wrapper)
    try:
        cursor = other.cursor()
        cursor.execute(
            "SELECT id FROM information_schema.PROCESSLIST "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        ids = [int(r[0]) for r in cursor.fetchall() if int(r[0]) not in _spared]
        _my_kill(other, ids)
    finally:
        other.close()
    return len(ids)


class _Server:
    def __init__(
        self,
        session: Callable[[BaseDatabaseWrapper], int],
        end_session: Callable[[BaseDatabaseWrapper, int], None],
        spare: Callable[[BaseDatabaseWrapper], None],
        terminate_all: Callable[[BaseDatabaseWrapper], int],
    ) -> None:
        self.session = session
        self.end_session = end_session
        self.spare = spare
        self.terminate_all = terminate_all


_SERVERS = {
    "postgresql": _Server(_pg_session, _pg_end_session, _pg_spare, _pg_terminate_all),
    "mysql": _Server(_my_session, _my_end_session, _my_spare, _my_terminate_all),
}


# -- a row lock held from another connection ---------------------------------------------------


@contextmanager
def message_locked(wrapper: BaseDatabaseWrapper, seq: int) -> Iterator[None]:
    """Hold what a settlement of message ``seq`` must wait for, from another connection:
    the row's lock on a server database, the write lock on SQLite."""
    if wrapper.vendor == "sqlite":
        conn = sqlite3.connect(str(wrapper.settings_dict["NAME"]), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    if wrapper.vendor == "postgresql":
        import psycopg

        with psycopg.connect(**wrapper.get_connection_params()) as pg:
            pg.execute("SELECT 1 FROM mqlite_message WHERE seq = %s FOR UPDATE", [seq])
            yield
            pg.rollback()
        return
    my = _my_connect(wrapper)
    try:
        my.autocommit(False)
        my.cursor().execute("SELECT 1 FROM mqlite_message WHERE seq = %s FOR UPDATE", [seq])
        yield
        my.rollback()
    finally:
        my.close()


def settlement_waiting(wrapper: BaseDatabaseWrapper) -> bool | None:
    """Whether a statement that writes ``mqlite_message`` waits for a row lock (None
    where the database cannot tell: SQLite)."""
    if wrapper.vendor == "sqlite":
        return None
    with wrapper.cursor() as cursor:
        if wrapper.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query ~ '^(DELETE|UPDATE) mqlite_message|"
                "^WITH v|^(DELETE FROM|UPDATE) mqlite_message'"
            )
        else:
            # The MariaDB engine cursor locks a settlement's rows first (SELECT ... FOR
            # UPDATE): any transaction waiting for a lock is the settlement.
            cursor.execute(
                "SELECT count(*) FROM information_schema.INNODB_TRX t "
                "JOIN information_schema.PROCESSLIST p ON p.id = t.trx_mysql_thread_id "
                "WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()"
            )
        return bool(cursor.fetchone()[0])


def another_transaction_open(wrapper: BaseDatabaseWrapper) -> bool:
    """Whether another connection to ``wrapper``'s database is inside a transaction
    (SQLite: holds the write lock)."""
    if wrapper.vendor == "sqlite":
        probe = sqlite3.connect(wrapper.settings_dict["NAME"], timeout=0.1)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
    with wrapper.cursor() as cursor:
        if wrapper.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
                " OR (state = 'active' AND datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend')"
            )
        else:
            cursor.execute(
                "SELECT count(*) FROM information_schema.INNODB_TRX t "
                "JOIN information_schema.PROCESSLIST p ON p.id = t.trx_mysql_thread_id "
                "WHERE p.db = DATABASE() AND p.id <> CONNECTION_ID() "
                "AND (t.trx_rows_locked > 0 OR t.trx_rows_modified > 0)"
            )
        return bool(cursor.fetchone()[0])
