"""Looking without touching: ``peek`` and ``stats``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..exceptions import InvalidArgumentError
from . import arguments, databases, send_one
from .clock import now_ms
from .rows import QUEUE_COLUMNS, MessageRow, QueueRow, columns, load_queue, message_fields
from .types import TOTAL_NAMES, Peeked, QueueStats, State, ms_or_none


@dataclass(slots=True)
class PeekRow(MessageRow):
    """A row ``peek`` reads: the message's columns and where it stands."""

    state: str
    visible_at: int | None
    expires_at: int | None
    dead_letter_reason: str | None
    dead_letter_description: str | None
    last_error: str | None
    progress: Any
    checkpoint: Any
    cancel_requested_at: int | None


_PEEK_COLUMNS = columns(PeekRow)


def peek(
    queue: str,
    *,
    state: str | None = None,
    limit: int = 32,
    after_seq: int = 0,
    using: str | None = None,
) -> list[Peeked]:
    """Messages in seq order, without locking them or counting a delivery."""
    arguments.check_int(limit, "limit", 1, arguments.MAX_PEEK)
    arguments.check_int(after_seq, "after_seq", 0, 2**63 - 1)
    if state is not None:
        try:
            state = State(state).value
        except ValueError:
            raise InvalidArgumentError(
                f"state must be one of {', '.join(s.value for s in State)}"
            ) from None
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    q = load_queue(cursor, queue)
    where = "queue_id = %s AND seq > %s"
    params: list[Any] = [q.id, after_seq]
    hint = ""
    if state is not None:
        where += " AND state = %s"
        params.append(state)
        # (queue, state, seq) gives the rows in seq order: no other index may be
        # weighed better (MariaDB's state-led ones would sort).
        hint = dialect.index_hint("mqlite_msg_state")
    cursor.execute(
        f"SELECT {_PEEK_COLUMNS} FROM mqlite_message {hint} WHERE {where} ORDER BY seq LIMIT %s",
        [*params, limit],
    )
    out = []
    for row in cursor.fetchall():
        r = PeekRow(*row)
        out.append(
            Peeked(
                **message_fields(q.name, r, dialect),
                state=State(r.state),
                visible_at=ms_or_none(r.visible_at),
                expires_at=ms_or_none(r.expires_at),
                locked_until=ms_or_none(r.locked_until),
                dead_letter_reason=r.dead_letter_reason,
                dead_letter_description=r.dead_letter_description,
                last_error=r.last_error,
                progress=dialect.load_json(r.progress),
                checkpoint=dialect.load_json(r.checkpoint),
                cancel_requested_at=ms_or_none(r.cancel_requested_at),
            )
        )
    return out


def stats(queue: str | None = None, *, using: str | None = None) -> Any:
    """``QueueStats`` of one queue, or a dict of them by name when ``queue`` is None
    (without ``using``: the queues of every queue database, see ``databases.listed_on``)."""
    if queue is not None:
        cursor, _ = databases.ctx(databases.alias_of(using, queue))
        return _stats_one(cursor, load_queue(cursor, queue))
    found: dict[str, QueueStats] = {}
    for alias, shown in databases.listed_on(using):
        cursor, _ = databases.ctx(alias)
        cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue ORDER BY name")
        for q in [QueueRow(*r) for r in cursor.fetchall()]:
            if shown(q.name):
                found[q.name] = _stats_one(cursor, q)
    return dict(sorted(found.items()))


def _stats_one(cursor: Any, q: QueueRow) -> QueueStats:
    counts = {s.value: 0 for s in State}
    cursor.execute(
        "SELECT state, count(*) FROM mqlite_message WHERE queue_id = %s GROUP BY state", [q.id]
    )
    for st, n in cursor.fetchall():
        counts[st] = int(n)
    # The active row with the lowest seq is (close to) the one waiting longest.
    cursor.execute(
        "SELECT visible_at FROM mqlite_message WHERE queue_id = %s AND state = 'active' "
        "ORDER BY seq LIMIT 1",
        [q.id],
    )
    row = cursor.fetchone()
    oldest = None if row is None else max(0.0, (now_ms() - row[0]) / 1000)
    send_one.flush_deferred_counts(cursor.db.alias)  # this transaction's own sends
    sums = ", ".join(f"COALESCE(SUM({n}), 0)" for n in TOTAL_NAMES)
    cursor.execute(f"SELECT {sums} FROM mqlite_totals WHERE queue_id = %s", [q.id])
    totals = dict(zip(TOTAL_NAMES, (int(v) for v in cursor.fetchone()), strict=True))
    public = q.public()
    return QueueStats(
        queue=q.name,
        counts=counts,
        oldest_active_age=oldest,
        totals=totals,
        paused=public.paused,
        rate_limit=public.rate_limit,
        max_in_flight=public.max_in_flight,
    )
