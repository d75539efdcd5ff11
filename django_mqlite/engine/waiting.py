"""Waiting for a message to finish (``mq.wait``, a task result's ``wait()``): read its
row, then sleep until a settlement that finished a message of its queue says so
(``finished``), with a slow safety poll; never a busy loop.
"""

from __future__ import annotations

import datetime as dt
import threading
import time

from django.db import connections

from ..exceptions import InvalidArgumentError
from . import arguments, databases, finished, listen, wakeup
from .rows import load_queue

#: The states a message ends in (where it is kept), and the answer for one no longer
#: there (completed on a queue that keeps no results, purged, expired, or unknown).
FINAL_STATES = ("completed", "dead_lettered")
REMOVED = "removed"
#: Where no wake-up can come (MariaDB, an in-memory SQLite database, a listener that
#: hears nothing), the wait's polls back off from the first to the largest delay.
WAIT_FIRST_S = 0.01
WAIT_MAX_S = 0.5
#: Where wake-ups come (``finished``): how long a waiter sleeps at most between reads
#: of its row, should a wake-up go missing or the message finish another way.
WAIT_SAFETY_POLL_S = 2.0


def wait(
    queue: str, seq: int, timeout: float | dt.timedelta, *, using: str | None = None
) -> str | None:
    """Wait up to ``timeout`` (seconds or a timedelta) for message ``seq`` to finish
    (``mq.wait``): its final state name (``"completed"``, ``"dead_lettered"``, or
    ``"removed"`` when the row is gone: completed where no results are kept, purged,
    expired, or never there), or None when it is still live at the timeout.

    It reads the row by its key, then sleeps until woken (``finished``: on PostgreSQL
    the NOTIFY of the settlement that finished a message of the queue, heard by this
    process's shared listener; on SQLite a commit to the database, seen by this
    process's shared commit watcher), at most ``WAIT_SAFETY_POLL_S`` between reads.
    Where no wake-up can come it reads with a back-off from 10 ms to 0.5 s. Never a
    busy loop. Outside a transaction only: a transaction's snapshot would never see the
    settlement (``InvalidArgumentError``)."""
    arguments.check_seq(seq)
    timeout_s = arguments.duration_ms(timeout, "timeout") / 1000
    alias = databases.alias_of(using, queue)
    if connections[alias].in_atomic_block:
        raise InvalidArgumentError("wait() inside a transaction would never see the settlement")
    cursor, _ = databases.ctx(alias)
    queue_id = load_queue(cursor, queue).id
    deadline = time.monotonic() + timeout_s
    woken = _wake_source(alias)
    keys = [finished.done_key(queue), *([listen.commit_key(alias)] if woken else [])]
    delay = WAIT_FIRST_S
    while True:
        # The generations before the read: a settlement that commits after it wakes us.
        since = wakeup.generations(keys)
        cursor, _ = databases.ctx(alias)
        cursor.execute(
            "SELECT state FROM mqlite_message WHERE seq = %s AND queue_id = %s", [seq, queue_id]
        )
        row = cursor.fetchone()
        if row is None:
            return REMOVED
        if row[0] in FINAL_STATES:
            return str(row[0])
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if woken is not None and woken.is_set():
            wakeup.wait_any(since, min(WAIT_SAFETY_POLL_S, remaining))
        else:
            wakeup.wait_any(since, min(delay, remaining))
            delay = min(delay * 2, WAIT_MAX_S)


def _wake_source(alias: str) -> threading.Event | None:
    """What tells a waiter on database ``alias`` of settlements, started on first use:
    the event that is set while it works (the shared listener's LISTEN, or the shared
    commit watcher's watch), or None where there is none."""
    if listen.ensure_listener(alias):
        listener = listen.shared_listener(alias)
        return None if listener is None else listener.listening
    watcher = listen.ensure_watcher(alias)
    return None if watcher is None else watcher.watching
