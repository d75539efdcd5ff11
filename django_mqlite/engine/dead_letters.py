"""Dead-lettering: what follows every burial, whichever path buried the message.

A message becomes ``dead_lettered`` on these paths: ``reject``; ``abandon`` on its last
allowed delivery (a single call or a batch, the worker's failed attempts included); the
reaper's lock expiry on the last delivery and its reclaim of a dead worker's locks on
the last delivery; TTL expiry on a queue with ``dead_letter_on_expire``; ``bury`` (a
cancelled task); and a dependency that failed (``dependencies``). Each path's own
guarded statement sets the state and the reason and returns the rows it buried; then,
in the same transaction, it calls ``tally.buried``, which runs ``buried`` here, the one
function that decides what a burial entails for the queue:

- the line the message leaves is released (its group's next message becomes claimable);
- the queue counts it: ``dead_lettered`` and its cause (``exhausted``, ``rejected`` or
  ``expired``), so ``dead_lettered == exhausted + rejected + TTL dead-letters`` holds;
- (a child of a batch counts there as failed: the caller's ``tally.count``, as for
  every terminal transition; it may finish the batch and enqueue its callbacks);
- when the queue names a ``forward_dead_letters_to`` that exists, the message moves
  there at once as an active message (delivery count reset), counted as redriven on
  the source and enqueued on the target, and it keeps where it came from and the
  deliveries it had (``forwarded_from``, ``forwarded_deliveries``: what SQS shows as
  ``DeadLetterQueueSourceArn`` and a receive count that keeps counting). A target that
  no longer exists leaves it here. A forwarded child leaves its batch (counted as
  failed there); a redrive (``move_rows``) puts a dead child back in its batch (the
  redrive counts it there as reopened).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from django.db.backends.utils import CursorWrapper

from . import batches, events, lines, totals
from .clock import now_ms
from .dialects import Dialect
from .rows import MOVED_COLUMNS, QUEUE_COLUMNS, MovedRow, QueueRow
from .types import Ordering

#: What made a message a dead letter, as the lifetime counter that counts it.
CAUSES = ("exhausted", "rejected", "expired")
#: The reason of a message buried on its last allowed delivery (abandon or lease expiry).
EXHAUSTED_REASON = "MaxDeliveryCountExceeded"


class Buried(NamedTuple):
    """A row a statement has just dead-lettered: its queue, seq, line and batch."""

    queue_id: int
    seq: int
    order_key: str | None
    batch_id: int | None = None


def buried(
    cursor: CursorWrapper,
    dialect: Dialect,
    rows: Sequence[Buried],
    cause: str,
    *,
    source: QueueRow | None = None,
) -> dict[int, str]:
    """Release, count and forward rows just dead-lettered for ``cause`` (see the module
    docstring). ``source``, when given, is the queue every row belongs to (it saves
    reading it again). Returns ``{seq: target queue name}`` for the forwarded ones."""
    assert cause in CAUSES
    if not rows:
        return {}
    if events.listening(events.message_dead_lettered):
        events.dead_lettered(cursor, [r.seq for r in rows])
    lines.release_by_queue(cursor, dialect, [(r.queue_id, r.order_key) for r in rows])
    per_queue: dict[int, list[int]] = {}
    for r in rows:
        per_queue.setdefault(r.queue_id, []).append(r.seq)
    for queue_id, seqs in per_queue.items():
        totals.bump_totals(cursor, dialect, queue_id, dead_lettered=len(seqs), **{cause: len(seqs)})
    sources = _forwarding_sources(cursor, sorted(per_queue), source)
    out: dict[int, str] = {}
    for q in sources:
        target = _target(cursor, q)
        if target is not None:
            moved = move_rows(cursor, dialect, q, target, sorted(per_queue[q.id]), forward=True)
            for m in moved:
                out[m.seq] = target.name
    return out


def _forwarding_sources(
    cursor: CursorWrapper, queue_ids: list[int], source: QueueRow | None
) -> list[QueueRow]:
    if source is not None:
        assert queue_ids == [source.id]
        return [source] if source.forward_dead_letters_to is not None else []
    cursor.execute(
        f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE forward_dead_letters_to "
        f"IS NOT NULL AND id IN ({batches.placeholders(len(queue_ids))})",
        queue_ids,
    )
    return [QueueRow(*row) for row in cursor.fetchall()]


def _target(cursor: CursorWrapper, source: QueueRow) -> QueueRow | None:
    cursor.execute(
        f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s",
        [source.forward_dead_letters_to],
    )
    row = cursor.fetchone()
    return None if row is None else QueueRow(*row)


def move_rows(
    cursor: CursorWrapper,
    dialect: Dialect,
    source: QueueRow,
    target: QueueRow,
    seqs: list[int],
    *,
    forward: bool = False,
) -> list[MovedRow]:
    """Make these dead letters of ``source`` active messages of ``target`` (which may be
    ``source``): delivery count reset, back in their lines. Redrive and forwarding both
    move rows with this; a forward (``forward``) records the source and adds the
    deliveries made there to ``forwarded_deliveries``, a redrive clears both. A moved
    message holds no unique key, live or pending, any more (another message may hold it
    by now, and two moved rows may share one), nor a cancel request (``running``).
    Returns the rows moved."""
    now = now_ms()
    strict = target.ordering == Ordering.STRICT_FIFO
    expires = None if target.default_ttl_ms is None else now + target.default_ttl_ms
    cursor.execute(
        "UPDATE mqlite_message SET state = 'active', queue_id = %s, delivery_count = 0, "
        "visible_at = %s, expires_at = %s, dead_letter_reason = NULL, "
        "dead_letter_description = NULL, dead_lettered_at = NULL, unique_key = NULL, "
        "pending_key = NULL, cancel_requested_at = NULL, "
        + (
            "forwarded_from = %s, "
            "forwarded_deliveries = COALESCE(forwarded_deliveries, 0) + delivery_count, "
            "batch_id = NULL, "
            if forward
            else "forwarded_from = NULL, forwarded_deliveries = NULL, "
        )
        + f"order_key = {'%s' if strict else 'group_id'}, "
        f"blocked = {'1' if strict else 'CASE WHEN group_id IS NULL THEN 0 ELSE 1 END'} "
        "WHERE queue_id = %s AND state = 'dead_lettered' "
        f"AND seq IN ({batches.placeholders(len(seqs))}) "
        f"RETURNING {MOVED_COLUMNS}",
        [
            *(target.id, now, expires),
            *([source.name] if forward else []),
            *([""] if strict else []),
            *(source.id, *seqs),
        ],
    )
    rows = [MovedRow(*r) for r in cursor.fetchall()]
    # Moved rows rejoin their lines blocked; the line's head is then re-established.
    lines.release_lines(cursor, dialect, target.id, [r.order_key for r in rows])
    if rows:
        totals.bump_totals(cursor, dialect, source.id, redriven=len(rows))
        if target.id != source.id:
            totals.bump_totals(cursor, dialect, target.id, enqueued=len(rows))
        if events.listening(events.message_redriven):
            moved = {"queue": source.name, "to_queue": target.name, "using": cursor.db.alias}
            events.after_commit(
                cursor.db.alias,
                events.message_redriven,
                [{**moved, "seq": r.seq} for r in rows],
            )
    return rows
