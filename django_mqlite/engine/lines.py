"""Ordered lines: the messages of a group (or of a whole strict-FIFO queue) wait in one
line, and only its earliest live message is unblocked (claimable).

``order_key_for`` says which line a new message joins; ``lock_lines`` serializes the
writers of a line; ``release_lines`` unblocks a line's earliest live message after the
line changed. Live means one of ``LIVE_SQL``'s states: a live message holds its line."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from . import wakeup
from .dialects import Dialect
from .rows import QueueRow
from .types import Ordering

LIVE_SQL = "('active', 'locked', 'deferred', 'scheduled', 'waiting')"


def order_key_for(queue: QueueRow, group_id: str | None) -> str | None:
    """The line a new message waits in: its group, the whole queue, or none."""
    if queue.ordering == Ordering.STRICT_FIFO:
        return ""
    return group_id


def lock_lines(cursor: CursorWrapper, dialect: Dialect, queue_id: int, keys: Iterable[str]) -> None:
    """Serialize writers of the same lines (sorted, so two writers never deadlock).

    On databases with concurrent writers, "is there an earlier live message?" (asked by
    a send) and "who is the line's next message?" (asked when a head leaves) must not run
    side by side, or each could miss the other's uncommitted row and leave a line with
    no claimable head. Where writes are serialized anyway this is a no-op.
    """
    dialect.lock_keys(cursor, [f"mqlite:{queue_id}:{key}" for key in keys])


# Unblock a line's earliest live message, unless the line already has an unblocked one.
# Idempotent: safe to run for any line after any change to it. ``blocked = 1`` (not a
# bare ``blocked``) so both lookups are equality seeks on mqlite_msg_line.
def release_sql(dialect: Dialect) -> str:
    line = f"FROM mqlite_message {dialect.index_hint('mqlite_msg_line')}"
    return (
        "UPDATE mqlite_message SET blocked = 0 WHERE seq = ("
        f" SELECT seq {line}"
        f" WHERE queue_id = %s AND order_key = %s AND state IN {LIVE_SQL} AND blocked = 1"
        " ORDER BY seq LIMIT 1"
        ") AND NOT EXISTS ("
        f" SELECT 1 {line}"
        f" WHERE queue_id = %s AND order_key = %s AND state IN {LIVE_SQL} AND blocked = 0"
        ")"
    )


def release_lines(
    cursor: CursorWrapper, dialect: Dialect, queue_id: int, keys: Iterable[str | None]
) -> int:
    """After a line changed (a message left it, or rejoined it blocked), make sure its
    earliest live message is claimable; returns how many became claimable. When any
    did, the queue's consumers are woken as a send wakes them (``wake``): nothing else
    would tell an idle worker that the next message of a group can run now."""
    todo = sorted({k for k in keys if k is not None})
    if not todo:
        return 0
    lock_lines(cursor, dialect, queue_id, todo)
    unblocked = 0
    for key in todo:
        cursor.execute(release_sql(dialect), [queue_id, key, queue_id, key])
        unblocked += max(0, cursor.rowcount)
    if unblocked:
        wake(cursor, dialect, queue_id)
    return unblocked


def wake(cursor: CursorWrapper, dialect: Dialect, queue_id: int) -> None:
    """Wake the consumers of queue ``queue_id`` once this transaction commits: NOTIFY
    where the database has it (never for a rollback), and this process's waiters."""
    cursor.execute("SELECT name FROM mqlite_queue WHERE id = %s", [queue_id])
    row = cursor.fetchone()
    if row is None:
        return
    name = str(row[0])
    notify = dialect.notify_sql()
    if notify is not None:
        cursor.execute(notify, [name])
    transaction.on_commit(lambda: wakeup.notify(name), using=cursor.db.alias)


def release_by_queue(
    cursor: CursorWrapper, dialect: Dialect, pairs: Iterable[tuple[int, str | None]]
) -> None:
    by_queue: dict[int, set[str]] = {}
    for queue_id, key in pairs:
        if key is not None:
            by_queue.setdefault(queue_id, set()).add(key)
    for queue_id, keys in by_queue.items():
        release_lines(cursor, dialect, queue_id, keys)
