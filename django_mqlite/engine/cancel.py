"""Cancelling a scheduled message that was never delivered (``mq.cancel_scheduled``)."""

from __future__ import annotations

from django.db import transaction

from . import arguments, databases, lines, tally
from .rows import RELEASED_COLUMNS, ReleasedRow, load_queue


def cancel_scheduled(queue: str, seq: int, *, using: str | None = None) -> bool:
    """Remove a scheduled message that was never delivered, or one waiting for its
    dependencies. False if there was none. A batch's child counts as cancelled
    (``tally``), and what waits for it fails."""
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    arguments.check_seq(seq)
    with transaction.atomic(using=alias):
        q = load_queue(cursor, queue)
        cursor.execute(
            "DELETE FROM mqlite_message WHERE seq = %s AND queue_id = %s "
            "AND state IN ('scheduled', 'waiting') AND delivery_count = 0 "
            f"RETURNING {RELEASED_COLUMNS}",
            [seq, q.id],
        )
        got = cursor.fetchone()
        if got is None:
            return False
        row = ReleasedRow(*got)
        lines.release_lines(cursor, dialect, q.id, [row.order_key])
        tally.count(cursor, dialect, [(row.batch_id, tally.CANCELLED)])
        return True
