"""Operating on dead letters (and other parked rows): ``redrive`` and ``purge``.

Both work in bounded chunks, each its own short transaction, so a large DLQ never holds
the writer for long; a crash midway leaves every message either moved or untouched.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import current
from ..exceptions import InvalidArgumentError
from . import arguments, batches, databases, lines, tally, totals
from .clock import now_ms
from .dead_letters import Buried, move_rows
from .dialects import Dialect
from .rows import RELEASED_COLUMNS, ReleasedRow, load_queue
from .types import LIVE_STATES, State

LIVE = tuple(s.value for s in LIVE_STATES)


def _check_seqs(seqs: object) -> list[int] | None:
    if seqs is None:
        return None
    if not isinstance(seqs, list | tuple | set):
        raise InvalidArgumentError("seqs must be a list of integers")
    return sorted({arguments.check_seq(s) for s in seqs})


def redrive(
    queue: str,
    *,
    seqs: Sequence[int] | None = None,
    to_queue: str | None = None,
    limit: int | None = None,
    using: str | None = None,
) -> int:
    """Move dead letters back to active (in place, or into ``to_queue``), delivery count
    reset to 0, oldest first. Returns how many moved."""
    wanted = _check_seqs(seqs)
    if limit is not None:
        arguments.check_int(limit, "limit", 1, 2**62)
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    source = load_queue(cursor, queue)
    if to_queue is not None:
        databases.alias_of(alias, to_queue)  # both queues must live on one database
    target = source if to_queue is None else load_queue(cursor, to_queue)
    moved = 0
    last = 0
    chunk = current().reap_chunk
    while limit is None or moved < limit:
        take = chunk if limit is None else min(chunk, limit - moved)
        with transaction.atomic(using=alias):
            picked = _pick(cursor, source.id, "dead_lettered", wanted, last, take, None)
            if not picked:
                break
            last = picked[-1]
            rows = move_rows(cursor, dialect, source, target, picked)
            tally.count(cursor, dialect, [(r.batch_id, tally.REOPENED) for r in rows])
            moved += len(rows)
    return moved


def _pick(
    cursor: CursorWrapper,
    queue_id: int,
    state: str,
    wanted: list[int] | None,
    after: int,
    take: int,
    older_than_ms: int | None,
) -> list[int]:
    where = "queue_id = %s AND state = %s AND seq > %s"
    params: list[Any] = [queue_id, state, after]
    if wanted is not None:
        batch = [s for s in wanted if s > after][:take]
        if not batch:
            return []
        where += f" AND seq IN ({batches.placeholders(len(batch))})"
        params += batch
    if older_than_ms is not None:
        stamp = "dead_lettered_at" if state == "dead_lettered" else "enqueued_at"
        where += f" AND {stamp} <= %s"
        params.append(older_than_ms)
    cursor.execute(
        f"SELECT seq FROM mqlite_message WHERE {where} ORDER BY seq LIMIT %s", [*params, take]
    )
    return [r[0] for r in cursor.fetchall()]


PURGEABLE = tuple(s.value for s in State if s is not State.LOCKED)


def purge(
    queue: str,
    *,
    state: str = "dead_lettered",
    older_than: float | dt.timedelta | None = None,
    limit: int | None = None,
    seqs: Sequence[int] | None = None,
    using: str | None = None,
) -> int:
    """Remove messages in ``state`` (dead letters by default; never locked ones),
    optionally only those older than ``older_than`` seconds. Returns how many."""
    if state not in PURGEABLE:
        raise InvalidArgumentError(f"state must be one of {', '.join(PURGEABLE)}")
    return _purge(queue, state, older_than, limit, seqs, using)


def purge_everything(queue: str, *, using: str | None = None) -> int:
    """Remove every message of ``queue``, in flight ones too (SQS's PurgeQueue): whoever
    holds one finds its lease lost when it settles (``LockLostError``), and the message
    never returns. Returns how many."""
    return sum(_purge(queue, state, None, None, None, using) for state in (*PURGEABLE, "locked"))


def _purge(
    queue: str,
    state: str,
    older_than: float | dt.timedelta | None,
    limit: int | None,
    seqs: Sequence[int] | None,
    using: str | None,
) -> int:
    cutoff = (
        None if older_than is None else now_ms() - arguments.duration_ms(older_than, "older_than")
    )
    wanted = _check_seqs(seqs)
    if limit is not None:
        arguments.check_int(limit, "limit", 1, 2**62)
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    q = load_queue(cursor, queue)
    removed = 0
    last = 0
    chunk = current().reap_chunk
    while limit is None or removed < limit:
        take = chunk if limit is None else min(chunk, limit - removed)
        with transaction.atomic(using=alias):
            picked = _pick(cursor, q.id, state, wanted, last, take, cutoff)
            if not picked:
                break
            last = picked[-1]
            removed += delete_rows(cursor, dialect, q.id, state, picked, "purged")
    return removed


def delete_rows(
    cursor: CursorWrapper, dialect: Dialect, queue_id: int, state: str, seqs: list[int], total: str
) -> int:
    """Delete these rows if they are still in ``state``; count them under ``total``.
    A batch's child removed while live (waiting or in flight) counts as cancelled
    there; dead letters and kept results were counted when they ended."""
    cursor.execute(
        f"DELETE FROM mqlite_message WHERE queue_id = %s AND state = %s "
        f"AND seq IN ({batches.placeholders(len(seqs))}) RETURNING {RELEASED_COLUMNS}",
        [queue_id, state, *seqs],
    )
    rows = [ReleasedRow(*r) for r in cursor.fetchall()]
    lines.release_lines(cursor, dialect, queue_id, [r.order_key for r in rows])
    if state in LIVE:
        tally.count(cursor, dialect, [(r.batch_id, tally.CANCELLED) for r in rows])
    if rows and total:
        totals.bump_totals(cursor, dialect, queue_id, **{total: len(rows)})
    return len(rows)


def bury(
    queue: str, seq: int, reason: str, description: str = "", *, using: str | None = None
) -> bool:
    """Dead-letter a message that is waiting for delivery (active, scheduled, deferred
    or waiting for its dependencies; never a locked one) with ``reason``, so a
    cancellation stays on record.

    Counted as a rejection. False when the message is not waiting (running, settled,
    gone, or on another queue).
    """
    arguments.check_seq(seq)
    if not isinstance(reason, str) or not reason or len(reason) > 128:
        raise InvalidArgumentError("reason must be a non-empty string of at most 128")
    alias = databases.alias_of(using, queue)
    with transaction.atomic(using=alias):
        cursor, dialect = databases.ctx(alias)
        q = load_queue(cursor, queue)
        now = now_ms()
        cursor.execute(
            "UPDATE mqlite_message SET state = 'dead_lettered', dead_letter_reason = %s, "
            "dead_letter_description = %s, dead_lettered_at = %s "
            "WHERE seq = %s AND queue_id = %s "
            "AND state IN ('active', 'scheduled', 'deferred', 'waiting') "
            f"RETURNING {RELEASED_COLUMNS}",
            [reason, description[:4096], now, seq, q.id],
        )
        got = cursor.fetchone()
        if got is None:
            return False
        row = ReleasedRow(*got)
        dead = [Buried(q.id, seq, row.order_key, row.batch_id)]
        tally.buried(cursor, dialect, dead, "rejected", source=q)
        return True
