"""Database faults a test can inject: break one thread's connection, terminate the
backends of this test's database (PostgreSQL), hold SQLite's write lock from a foreign
process.

A broken connection is what a worker thread sees after a server restart or a
``pg_terminate_backend``: on PostgreSQL the backend really is terminated (from another
connection, waiting until it is gone); on SQLite, which has no server, the thread's raw
``sqlite3`` connection is closed under Django's feet (through PgBouncer too, which owns the server
connections), so its next query fails the way a lost connection does.
"""

from __future__ import annotations

import os
import time

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper


def break_connection(alias: str = "default") -> None:
    """Break this thread's connection to ``alias``; its next query fails."""
    conn = connections[alias]
    conn.ensure_connection()
    break_wrapper(conn)


def break_wrapper(wrapper: BaseDatabaseWrapper) -> None:
    """Break a connection, this thread's or one another thread opened and is not using
    (a termination of every session, a server restart); its next query fails."""
    raw = wrapper.connection
    if raw is None:
        return
    if wrapper.vendor != "postgresql" or os.environ.get("MQLITE_TEST_DB") == "pgbouncer":
        # No server to lose (SQLite), or none this connection owns (PgBouncer pools the
        # server connections): the client's end is closed instead (SQLite's connections
        # are opened with check_same_thread=False).
        raw.close()
        return
    _terminate(wrapper, raw.info.backend_pid)


def _terminate(wrapper: BaseDatabaseWrapper, pid: int) -> None:
    """Terminate backend ``pid`` from another connection and wait until it is gone."""
    import psycopg

    with psycopg.connect(**wrapper.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
            if time.monotonic() > deadline:
                raise AssertionError(f"backend {pid} still there 10 s after its termination")
            time.sleep(0.01)


def terminate_backends(params: dict[str, object], spare: str = "mqlite-test-parent") -> int:
    """Terminate every session on the test database but this one and those whose
    ``application_name`` is ``spare``; returns how many."""
    import psycopg

    with psycopg.connect(**params, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name IS DISTINCT FROM %s",
            [spare],
        ).fetchall()
    return len(rows)
