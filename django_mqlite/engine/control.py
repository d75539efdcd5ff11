"""Pausing and resuming a queue.

A paused queue still accepts sends; no claim hands out its messages (``receive`` and
``receive_deferred`` return nothing, so workers pass over it and long-polls keep
waiting). Leases already held are untouched: they are settled, renewed or expire as
usual. The flag is read by the claim in its own transaction, so a claim that starts
after ``pause_queue`` returns takes nothing.
"""

from __future__ import annotations

from django.db import transaction

from ..exceptions import QueueNotFoundError
from . import arguments, databases, wakeup
from .rows import load_queue
from .types import Queue


def pause_queue(name: str, *, using: str | None = None) -> Queue:
    """Stop handing out messages of queue ``name``. Idempotent."""
    return _set_paused(name, True, using)


def resume_queue(name: str, *, using: str | None = None) -> Queue:
    """Hand out messages of queue ``name`` again, and wake its waiting consumers."""
    return _set_paused(name, False, using)


def _set_paused(name: str, paused: bool, using: str | None) -> Queue:
    arguments.check_queue_name(name)
    alias = databases.alias_of(using, name)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        cursor.execute("UPDATE mqlite_queue SET paused = %s WHERE name = %s", [paused, name])
        if cursor.rowcount == 0:
            raise QueueNotFoundError(f"queue {name!r} does not exist")
        if not paused:
            notify = dialect.notify_sql()
            if notify is not None:
                cursor.execute(notify, [name])
            transaction.on_commit(lambda: wakeup.notify(name), using=alias)
        return load_queue(cursor, name).public()
