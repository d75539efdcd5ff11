"""Unique keys: at most one live, or one pending, message per queue and key.

A send with ``unique_key`` holds the key while its message is in the key's window,
chosen per send by ``unique_while``:

- ``"live"`` (the default): active, scheduled, locked or deferred. A completed or
  dead-lettered message frees the key; a running one still holds it.
- ``"pending"``: active or scheduled and never claimed. The first claim frees the key,
  so a new message may be sent while the previous one runs ("refresh once more after
  this run"), and never two wait side by side.

The database enforces each window with a partial unique index (models.Message):
``mqlite_msg_unique`` over ``unique_key`` for live keys, ``mqlite_msg_pending`` over
``pending_key`` for pending keys: separate columns, so the two modes are separate key
spaces (use one mode per key). The send is one ``INSERT … ON CONFLICT (queue_id, <column>)
WHERE <the index's predicate> DO NOTHING``: a send whose key is held writes nothing and
returns the holder's seq (``on_conflict="skip"``), read by a second statement only then.
A send racing the holder's commit waits for it on PostgreSQL (the index decides, not a
read); SQLite has one writer. Sends without a key run the statements they always did
(``send``).

The pending window is written so that no other transition can bring a row back into it
while another holds the key: the claim counts a delivery (``delivery_count = 0`` no longer
holds), a snooze that gives the delivery back counts itself (``snooze_count = 0`` no longer
holds), and the two transitions that can reset the count to 0 without either, a release of
claimed-but-unstarted messages and a redrive, clear ``pending_key``. The claim statement
itself is the same as for any message.

``on_conflict="replace"`` and ``"debounce"``: when the insert found the key held, one
guarded UPDATE writes the send's content (body, content type, subject, properties,
correlation id, reply-to, priority, expiry) into the holder, only if it is ``active`` or
``scheduled``; ``debounce`` also moves its visible time to the send's (now + delay). The
holder keeps its seq, message id, group and place in its line, and the send returns its
seq. A live holder a consumer has (``locked`` or ``deferred``) is not changed: the send
raises ``UniqueKeyLockedError`` and a batch writes nothing. (A pending holder is never
one a consumer has.) The index still decides who holds the key; the UPDATE only ever
touches the one row that does.

A send of several keys takes them in sorted order before it writes any (PostgreSQL:
one transaction-scoped lock per key), then inserts in the order given, so seqs keep the
batch's order. Taking them in the order given, two batches with shared keys in
opposite orders would each hold a key the other waits for (an insert waits on the
other's uncommitted index entry, a replace on its row lock): a deadlock. A send of one
key takes no lock: one key cannot close a cycle within the send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..exceptions import UniqueKeyLockedError
from . import lines
from .dialects import Dialect
from .prepare import Row
from .rows import QueueRow

#: The windows a key can be held in (``OutMessage.unique_while``).
WINDOWS = ("live", "pending")


@dataclass(frozen=True)
class KeySpace:
    """One window's column, index predicate and statements."""

    column: str
    #: The index's predicate, term for term as Django renders the constraint's
    #: condition: SQLite takes a partial index as a conflict target only then.
    predicate: str
    #: The namespace of the transaction-scoped locks of a send of several keys.
    lock_prefix: str

    def conflict(self) -> str:
        return f"ON CONFLICT (queue_id, {self.column}) WHERE {self.predicate} DO NOTHING"

    def holder(self) -> str:
        return (
            f"SELECT seq, state FROM mqlite_message WHERE queue_id = %s AND {self.column} = %s "
            f"AND {self.predicate}"
        )

    # -- name: replace_unique -------------------------------------------------------------
    # The holder's content becomes the send's, only while no consumer holds it (active or
    # scheduled). Parameters: body, content_type, subject, properties, correlation_id,
    # reply_to, priority, expires_at, (debounce: visible time, visible time, now), queue
    # id, key.
    def replace(self, json_param: str, debounce: bool) -> str:
        moved = _DEBOUNCE if debounce else ""
        return (
            "UPDATE mqlite_message SET body = %s, content_type = %s, subject = %s, "
            f"properties = {json_param}, correlation_id = %s, reply_to = %s, priority = %s, "
            f"expires_at = %s{moved} "
            f"WHERE queue_id = %s AND {self.column} = %s AND {self.predicate} "
            "AND state IN ('active', 'scheduled') RETURNING seq"
        )


_DEBOUNCE = ", visible_at = %s, state = CASE WHEN %s > %s THEN 'scheduled' ELSE 'active' END"

# -- name: send_unique ----------------------------------------------------------------------
SPACES = {
    "live": KeySpace(
        column="unique_key",
        predicate=f"state IN {lines.LIVE_SQL} AND unique_key IS NOT NULL",
        lock_prefix="mqlite-unique",
    ),
    "pending": KeySpace(
        column="pending_key",
        predicate=(
            "delivery_count = 0 AND pending_key IS NOT NULL AND snooze_count = 0 "
            "AND state IN ('active', 'scheduled')"
        ),
        lock_prefix="mqlite-pending",
    ),
}
#: The holder's states a replacing send may not change: a consumer holds the message.
HELD = ("locked", "deferred")
#: A holder can finish (or be claimed) between the skipped insert and the read of its
#: seq (PostgreSQL); the send then tries again, this many times in all.
UNIQUE_ATTEMPTS = 20


def lock_keys(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row]) -> None:
    """Lock the unique keys of ``rows`` in sorted order (see the module docstring), when
    there are two or more and writers run side by side."""
    names = sorted(
        {
            f"{SPACES[r.unique_while].lock_prefix}:{q.id}:{r.unique_key}"
            for r in rows
            if r.unique_key is not None
        }
    )
    if len(names) < 2:
        return
    # Their own namespaces: a line's lock (``lines.lock_lines``) is "mqlite:<queue>:<key>".
    dialect.lock_keys(cursor, names)


def insert(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    r: Row,
    row_sql: tuple[str, str, list[Any]],
    now: int,
) -> bool:
    """Insert ``r`` unless a message holds its key in its window; True when it was
    inserted. Otherwise ``r.seq`` is the holder's, and ``replace``/``debounce`` wrote
    ``r``'s content into it by one guarded UPDATE (only an ``active`` or ``scheduled``
    holder: one a consumer holds raises ``UniqueKeyLockedError``). The holder may finish
    or move between two statements; each attempt asks the database again. ``row_sql``
    is the send's (columns, VALUES tuple, parameters) for ``r``, to which the key's
    column is added."""
    columns, values, params = row_sql
    space = SPACES[r.unique_while]
    sql = (
        f"INSERT INTO mqlite_message ({columns}, {space.column}) VALUES {values[:-1]}, %s) "
        f"{space.conflict()} RETURNING seq"
    )
    for _ in range(UNIQUE_ATTEMPTS):
        cursor.execute(sql, [*params, r.unique_key])
        got = cursor.fetchone()
        if got is not None:
            r.seq = int(got[0])
            return True
        if r.on_conflict != "skip":
            got = _replace(cursor, dialect, space, q, r, now)
            if got is not None:
                r.seq = got
                return False
        cursor.execute(space.holder(), [q.id, r.unique_key])
        holder = cursor.fetchone()
        if holder is None:
            continue  # it finished since the insert: try again
        r.seq = int(holder[0])
        if r.on_conflict == "skip":
            return False
        if holder[1] in HELD:
            raise UniqueKeyLockedError(
                f"unique_key {r.unique_key!r} on {q.name!r} is held by message {r.seq}, "
                f"which a consumer holds ({holder[1]}); nothing was written"
            )
    raise RuntimeError(f"unique_key {r.unique_key!r}: no insert and no holder")


def _replace(
    cursor: CursorWrapper, dialect: Dialect, space: KeySpace, q: QueueRow, r: Row, now: int
) -> int | None:
    """Write ``r``'s content into the holder of its key, if no consumer holds it;
    ``debounce`` also moves the holder's visible time to ``r``'s. The holder keeps its
    seq, message id, group and place in its line. Returns its seq, or None."""
    debounce = r.on_conflict == "debounce"
    cursor.execute(
        space.replace(dialect.json_param(), debounce),
        [
            r.body,
            r.content_type,
            r.subject,
            r.properties,
            r.correlation_id,
            r.reply_to,
            r.priority,
            r.expires_at,
            *([r.visible_at, r.visible_at, now] if debounce else []),
            q.id,
            r.unique_key,
        ],
    )
    got = cursor.fetchone()
    return None if got is None else int(got[0])
