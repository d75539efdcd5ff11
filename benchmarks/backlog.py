"""Building a backlog fast.

``fill`` goes through the public API (``send_batch`` of 256): the realistic path, used
up to about 100k messages. ``fill_direct`` writes the rows with one ``INSERT ... SELECT``
from a recursive CTE (SQLite) or ``generate_series`` (PostgreSQL): the 1M backlogs would
otherwise take minutes to build. The rows it writes are exactly what ``send`` writes for
an unordered, immediately visible message (see ``docs/how-it-works.md``): ``state =
'active'``, ``blocked = 0``, ``order_key``/``group_id``/``expires_at`` NULL,
``delivery_count = 0``; the queue's ``enqueued`` counter is not bumped.
"""

from __future__ import annotations

import django_mqlite as mq

BODY = b"x" * 256
_SQLITE = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s) "
    "INSERT INTO mqlite_message (queue_id, state, priority, visible_at, enqueued_at, body, "
    "blocked, delivery_count) SELECT %s, 'active', 0, %s, %s, zeroblob(256), 0, 0 FROM n"
)
_POSTGRES = (
    "INSERT INTO mqlite_message (queue_id, state, priority, visible_at, enqueued_at, body, "
    "blocked, delivery_count) SELECT %s, 'active', 0, %s, %s, "
    "decode(repeat('78', 256), 'hex'), 0, 0 FROM generate_series(1, %s)"
)


def fill(queue: str, n: int, batch: int = 256) -> None:
    """Send ``n`` 256-byte messages through ``send_batch``."""
    for start in range(0, n, batch):
        k = min(batch, n - start)
        mq.send_batch(queue, [mq.OutMessage(BODY) for _ in range(k)])


def fill_direct(queue: str, n: int) -> None:
    """Insert ``n`` claimable 256-byte messages with one statement per 200k rows."""
    from django.db import connection, transaction

    from django_mqlite.engine.clock import now_ms

    qid = _queue_id(queue)
    now = now_ms()
    with connection.cursor() as c:
        for start in range(0, n, 200_000):
            k = min(200_000, n - start)
            with transaction.atomic():
                if connection.vendor == "sqlite":
                    c.execute(_SQLITE, [k, qid, now, now])
                else:
                    c.execute(_POSTGRES, [qid, now, now, k])
        c.execute("ANALYZE mqlite_message")


def _queue_id(queue: str) -> int:
    from django.db import connection

    if not _exists(queue):
        mq.create_queue(queue)
    with connection.cursor() as c:
        c.execute("SELECT id FROM mqlite_queue WHERE name = %s", [queue])
        return int(c.fetchone()[0])


def _exists(queue: str) -> bool:
    try:
        mq.get_queue(queue)
    except mq.QueueNotFoundError:
        return False
    return True
