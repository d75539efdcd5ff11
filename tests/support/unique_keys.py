"""What the unique-key tests read straight from the table: the live holders of a key, and
any key held twice (the invariant the partial unique index enforces)."""

from __future__ import annotations

from django.db import connection

_LIVE = "('active', 'locked', 'deferred', 'scheduled')"


def live_with(queue: str, key: str) -> list[int]:
    """The seqs of ``queue``'s live messages holding ``key``, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.seq FROM mqlite_message m JOIN mqlite_queue q ON q.id = m.queue_id "
            f"WHERE q.name = %s AND m.unique_key = %s AND m.state IN {_LIVE} ORDER BY m.seq",
            [queue, key],
        )
        return [row[0] for row in cursor.fetchall()]


def held_twice() -> list[tuple[str, int]]:
    """Every (key, count) held by more than one live message of a queue."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT unique_key, count(*) FROM mqlite_message WHERE unique_key IS NOT NULL "
            f"AND state IN {_LIVE} GROUP BY queue_id, unique_key HAVING count(*) > 1"
        )
        return list(cursor.fetchall())
