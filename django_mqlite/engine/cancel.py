"""Cancelling a scheduled message that was never delivered (``mq.cancel_scheduled``)."""

from __future__ import annotations

from django.db import transaction

from . import arguments, databases, lines, tally
from .rows import load_queue


def cancel_scheduled(queue: str, seq: int, *, using: str | None = None) -> bool:
    """Remove a scheduled message that was never delivered. False if there was none.
    A batch's child counts as cancelled (``tally``)."""
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    arguments.check_seq(seq)
    with transaction.atomic(using=alias):
        q = load_queue(cursor, queue)
        cursor.execute(
            "DELETE FROM mqlite_message WHERE seq = %s AND queue_id = %s "
            "AND state = 'scheduled' AND delivery_count = 0 RETURNING order_key, batch_id",
            [seq, q.id],
        )
        row = cursor.fetchone()
        if row is None:
            return False
        lines.release_lines(cursor, dialect, q.id, [row[0]])
        tally.count(cursor, dialect, [(row[1], tally.CANCELLED)])
        return True
