"""Connection health for the worker's threads: the worker's version of what Django's
request cycle does around each request (``close_old_connections``).

The rule. Every thread of a worker that touches the database (handler threads, the main
loop that claims, renews and flushes, the heartbeat, the reaper, the periodic ticker)
calls ``refresh()`` at the start of each unit of work (a message, a tick, a pass). For
each connection the thread has opened:

- a connection on which an error other than ``DataError``/``IntegrityError`` occurred
  (Django's ``errors_occurred``: a terminated backend, a restart, a network cut) is
  checked with one ``SELECT 1`` (``usable``); a broken one is closed, and the next
  query opens a fresh one. A working one is kept;
- a connection left with autocommit changed is closed, as Django does;
- a connection older than a positive ``CONN_MAX_AGE`` is closed; ``None`` keeps it;
- with ``CONN_HEALTH_CHECKS`` the first query of the unit checks the connection first
  (Django's own health check, re-armed here once per unit, as per request);
- once any thread of the process has found a connection lost (or the main loop or a
  background pass failed on a database error: ``suspect_all``), every thread checks each
  of its connections with one ``SELECT 1`` at its next unit, then goes back to checking
  nothing. A server restart or a ``pg_terminate_backend`` of every session breaks the
  idle threads' connections too, and without this the first query of each idle handler
  thread's next message failed: one wasted attempt per thread (the fault suite's canary
  round saw eight after a termination).

Unlike Django's request cycle, ``CONN_MAX_AGE = 0`` (the default) does not close a
worker's connection after each message: a worker thread is one long-lived unit for
Django's purpose, and a connection per message cost a busy worker more than its work
(consumers fell thousands of messages behind). A worker thread keeps its connection
across messages and discards it only when it is unusable or past a positive max age, and
closes it when the thread ends.

Retrying after a lost connection. ``retry_lost`` runs a step again, once, on a fresh
connection when it failed because the connection was lost. It is used only where a
repeat is safe: a settlement (an exact replay of one that did commit succeeds through
its receipt), a release (fenced on the token) and the Tasks runner's reads of its own
row. A handler's own work is never retried here: its failure is an attempt like any
other, retried by the queue with backoff.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, DataError, IntegrityError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger("django_mqlite.worker")

T = TypeVar("T")

#: How long ``retry_lost`` keeps trying, and its first and longest wait between tries.
RETRY_PATIENCE_S = 15.0
RETRY_MIN_S = 0.05
RETRY_MAX_S = 1.0


UNUSABLE = "unusable after a database error"

#: Bumped whenever a connection of this process is found lost; a thread that has not
#: seen the current value checks its connections at its next ``refresh``.
_suspicions = itertools.count(1)
_suspicion = 0
_seen = threading.local()


def suspect_all() -> None:
    """A connection of this process was lost (or may have been): every thread checks
    its own connections at its next ``refresh``."""
    global _suspicion
    _suspicion = next(_suspicions)


def refresh() -> int:
    """Apply the rule above to this thread's open connections; returns how many it
    closed. Costs no query unless an error occurred, a connection of the process was
    found lost since this thread's last refresh, or health checks are on."""
    suspicion = _suspicion
    probe = getattr(_seen, "suspicion", None) != suspicion
    closed = 0
    for conn in connections.all(initialized_only=True):
        if _refresh(conn, probe):
            closed += 1
    _seen.suspicion = suspicion
    return closed


def _refresh(conn: BaseDatabaseWrapper, probe: bool = False) -> bool:
    if conn.connection is None or conn.in_atomic_block:
        return False
    conn.health_check_done = False  # type: ignore[attr-defined]  # re-armed per unit
    reason = _why_close(conn)
    if reason is None and probe and not usable(conn):
        reason = "found broken after another connection of this worker was lost"
    if reason is None:
        return False
    if reason == UNUSABLE:
        suspect_all()  # the first thread to find out tells the others
    logger.info("database connection %r closed (%s); reopening on next use", conn.alias, reason)
    discard(conn)
    return True


def _why_close(conn: BaseDatabaseWrapper) -> str | None:
    if conn.get_autocommit() != conn.settings_dict["AUTOCOMMIT"]:
        return "autocommit left changed"
    if conn.errors_occurred:
        if not usable(conn):
            return UNUSABLE
        conn.errors_occurred = False
        conn.health_check_done = True  # type: ignore[attr-defined]
    max_age = conn.settings_dict["CONN_MAX_AGE"]
    if max_age and conn.close_at is not None and time.monotonic() >= conn.close_at:
        return f"older than CONN_MAX_AGE={max_age}"
    return None


def usable(conn: BaseDatabaseWrapper) -> bool:
    """Whether ``conn`` answers a ``SELECT 1`` on its driver connection.

    Django's ``is_usable()`` is that on PostgreSQL, but always True on SQLite, whose
    connection can still be unusable (closed under Django's feet); the probe is the same
    one statement on every database."""
    raw = conn.connection
    if raw is None:
        return False
    try:
        cursor = raw.cursor()
        try:
            cursor.execute("SELECT 1")
        finally:
            cursor.close()
    except Exception:
        return False
    return True


def discard(conn: BaseDatabaseWrapper) -> None:
    """Close ``conn``; a broken one may fail to close, which changes nothing."""
    try:
        conn.close()
    except DatabaseError:
        conn.connection = None


def is_lost(exc: BaseException, using: str, before: object = None) -> bool:
    """Whether ``exc`` means the connection of ``using`` was lost (it is then discarded).

    A database error other than ``DataError``/``IntegrityError`` (the errors Django
    itself treats as possibly fatal to a connection) after which the connection the step
    ran on (``before``, the driver connection, when the caller knows it) is gone,
    replaced, or no longer answers: a terminated backend, a server restart, a closed
    socket. SQLite's "database is locked" leaves a usable connection and is not a lost
    one.
    """
    if not isinstance(exc, DatabaseError) or isinstance(exc, DataError | IntegrityError):
        return False
    conn = connections[using]
    if conn.in_atomic_block:
        return False  # the enclosing block decides; a retry here would be half of it
    raw = conn.connection
    if raw is not None and before is not None and raw is not before:
        suspect_all()
        return True  # Django dropped the broken one on the way out (an atomic block)
    if raw is not None and usable(conn):
        return False
    discard(conn)
    suspect_all()
    return True


def retry_lost(
    step: Callable[[], T], using: str, what: str, *, patience_s: float = RETRY_PATIENCE_S
) -> T:
    """Run ``step``; while it fails on a lost connection, run it again on a fresh one
    (50 ms doubling to 1 s apart, for up to ``patience_s``: a server restart takes a few
    seconds). Only for steps that are safe to repeat (see the module docstring)."""
    deadline = time.monotonic() + patience_s
    wait_s = RETRY_MIN_S
    while True:
        before = connections[using].connection
        try:
            return step()
        except DatabaseError as exc:
            if not is_lost(exc, using, before) or time.monotonic() + wait_s > deadline:
                raise
            logger.warning("%s: database connection lost (%s); retrying", what, exc)
        time.sleep(wait_s)
        wait_s = min(wait_s * 2, RETRY_MAX_S)
