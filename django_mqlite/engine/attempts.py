"""Receive attempts: a receive that names an ``attempt_id`` records the batch it claimed,
and a repeat of the same attempt within ``RECEIPT_TTL`` returns that batch again (the
same messages, the same lock tokens, no delivery counted), as long as their leases hold.

An attempt id belongs to its caller. The record is keyed on the queue and on a digest of
the caller's scope and the id, never on the id alone: the HTTP API passes the calling
user, the SQS endpoint the access key and its user, and a Python call without
``attempt_scope`` has a namespace of its own. Another caller repeating the same id gets a
fresh claim of its own, never the first caller's messages or lock tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.db.backends.utils import CursorWrapper

from ..conf import current
from . import batches
from .received import Received
from .rows import MESSAGE_COLUMNS, MessageRow, QueueRow

#: The scope of an attempt id given from Python without ``attempt_scope``.
PYTHON_SCOPE = "python"
MAX_SCOPE_LEN = 512


def key(scope: str | None, attempt_id: str) -> str:
    """What the attempt is recorded under: private to ``scope`` (64 hex characters)."""
    who = PYTHON_SCOPE if scope is None else f"scope:{scope}"
    return hashlib.sha256(f"{who}\x00{attempt_id}".encode()).hexdigest()


def record(
    cursor: CursorWrapper, q: QueueRow, attempt_key: str, got: list[Received], now: int
) -> None:
    items = [[m.seq, m.lock_token] for m in got]
    cursor.execute(
        "INSERT INTO mqlite_attempt (queue_id, attempt_id, items, expires_at) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (queue_id, attempt_id) DO UPDATE SET "
        "items = excluded.items, expires_at = excluded.expires_at",
        [q.id, attempt_key, json.dumps(items), now + current().receipt_ttl_ms],
    )


def replay(
    cursor: CursorWrapper,
    q: QueueRow,
    attempt_key: str,
    now: int,
    to_received: Callable[[MessageRow], Received],
) -> list[Received] | None:
    """The batch an earlier call with this attempt claimed, if it is still recorded
    (only the messages still locked under the recorded tokens)."""
    cursor.execute(
        "SELECT items FROM mqlite_attempt WHERE queue_id = %s AND attempt_id = %s "
        "AND expires_at > %s",
        [q.id, attempt_key, now],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    items = json.loads(row[0])
    if not items:
        return []
    by_seq = {seq: token for seq, token in items}
    cursor.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM mqlite_message WHERE queue_id = %s "
        "AND state = 'locked' "  # a returned row keeps its token (``reclaim_sql``)
        f"AND seq IN ({batches.placeholders(len(by_seq))})",
        [q.id, *by_seq],
    )
    out = []
    for r in cursor.fetchall():
        m = to_received(MessageRow(*r))
        if m.lock_token is not None and m.lock_token == by_seq.get(m.seq):
            out.append(m)
    out.sort(key=lambda m: (-m.priority, m.seq))
    return out
