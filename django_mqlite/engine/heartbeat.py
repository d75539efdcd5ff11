"""A worker's heartbeat as the engine stamps it: a claim or a renewal by a worker is
proof of life, written in the same transaction (``touch_worker``)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

#: The stamp: parameters now, the worker's id, now. The one-statement claim on PostgreSQL
#: (``claim._claim_one``) runs it as one of its parts.
TOUCH = "UPDATE mqlite_worker SET last_seen = %s WHERE id = %s AND last_seen < %s"


def touch_worker(cursor: CursorWrapper, worker_id: int, now: int) -> None:
    """A claim or a renewal is proof of life: stamp the worker's heartbeat in the same
    transaction (never moving it back). Otherwise a worker that resumes after a pause
    longer than WORKER_STALE_AFTER (SIGSTOP, a VM freeze, a long wait for SQLite's write
    lock) and claims or renews before its heartbeat thread writes would have those fresh
    leases reclaimed as a dead worker's, and handed to another worker while it still
    runs them under a live lease."""
    cursor.execute(TOUCH, [now, worker_id, now])
