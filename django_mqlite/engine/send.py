"""Producing: ``send``, ``send_batch`` (and ``enqueue_in``, the general path for the
engine's own sends).

A send is an INSERT in the caller's transaction when one is open (the outbox): nothing
is claimable until it commits, and a rollback leaves nothing behind.

Unique keys (``unique_key``, ``on_conflict``, ``unique_while``): a keyed message is
inserted by its own statement, which the key's partial unique index arbitrates; the
rule, its windows and its conflict policies are ``unique``'s. Sends without a key run
the statements they always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..exceptions import DedupConflictError, InvalidArgumentError
from . import (
    arguments,
    batches,
    databases,
    dependencies,
    events,
    lines,
    retry,
    send_one,
    totals,
    tracing,
    unique,
)
from .admission import admit
from .clock import now_ms
from .dialects import Dialect
from .prepare import Row, for_queue
from .rows import QueueRow, load_queue
from .types import OutMessage

INSERT_CHUNK = 200

_INSERT_COLUMNS = (
    "queue_id, state, priority, visible_at, expires_at, enqueued_at, body, message_id, "
    "group_id, order_key, blocked, subject, properties, correlation_id, reply_to, "
    "content_type, delivery_count"
)


# Whether a line already has a live message, asked for a line's first row in a batch.
# Written as an ordered LIMIT 1 in mqlite_msg_line's order so that both planners seek
# that index instead of weighing a scan that stops at the first match (which is O(n)
# when the line is empty and the queue is not).
def _blocked_sql(dialect: Dialect) -> str:
    return (
        f"CASE WHEN (SELECT seq FROM mqlite_message {dialect.index_hint('mqlite_msg_line')}"
        f" WHERE queue_id = %s AND order_key = %s AND state IN {lines.LIVE_SQL}"
        " ORDER BY queue_id, order_key, blocked, seq LIMIT 1) IS NULL THEN 0 ELSE 1 END"
    )


def send(queue: str, body: Any, *, using: str | None = None, **options: Any) -> int:
    """Send one message; returns its seq (the original seq for a deduplicated resend).

    The common case is one statement (``send_one``); the general path below handles
    dedup, ordered lines and every error with the same results."""
    return send_reported(queue, body, using=using, **options)[0]


def send_stamped(
    queue: str, body: Any, *, using: str | None = None, **options: Any
) -> tuple[int, int]:
    """``send``, also returning the enqueue time the row stores (epoch ms; for a
    deduplicated resend, the original's), so a caller can report exactly what was
    stored without reading it back (the Tasks backend's results)."""
    seq, enqueued_ms, _ = send_reported(queue, body, using=using, **options)
    return seq, enqueued_ms


def send_reported(
    queue: str, body: Any, *, using: str | None = None, **options: Any
) -> tuple[int, int, bool]:
    """``send_stamped``, also saying whether this send inserted a row: False when it
    collapsed into an earlier message (producer dedup) or found its unique key held
    (the seq is the holder's, which ``replace``/``debounce`` wrote into)."""
    msg = OutMessage(body, **options)
    if tracing.hook is not None:
        return tracing.hook.send(
            queue, [msg], lambda ms: _send_stamped(queue, ms[0], using), lambda r: [r[0]]
        )
    return _send_stamped(queue, msg, using)


def _send_stamped(queue: str, msg: OutMessage, using: str | None) -> tuple[int, int, bool]:
    alias = databases.alias_of(using, queue)
    arguments.check_queue_name(queue)
    now = now_ms()
    row = admit(msg, now)
    if msg.depends_on is None and send_one.eligible(row):
        seq = send_one.try_send(alias, queue, row, now)
        if seq is not None:
            return seq, now, True
    inserted: list[int] = []
    seq = _send(queue, [msg], using=using, single=True, now=now, inserted=inserted)[0]
    if seq in inserted:
        return seq, now, True
    return seq, _enqueued_at(alias, seq, now), False


def _enqueued_at(alias: str, seq: int, default: int) -> int:
    """The stored enqueue time of ``seq`` (a resend may have collapsed into an older
    message), or ``default`` when the original is gone."""
    cursor, _ = databases.ctx(alias)
    cursor.execute("SELECT enqueued_at FROM mqlite_message WHERE seq = %s", [seq])
    found = cursor.fetchone()
    return default if found is None else int(found[0])


def send_batch(
    queue: str, messages: Sequence[OutMessage], *, using: str | None = None
) -> list[int]:
    """Send many messages in one transaction. A dedup-conflict slot returns seq 0."""
    if not isinstance(messages, list | tuple):
        raise InvalidArgumentError("messages must be a list of OutMessage")
    for m in messages:
        if not isinstance(m, OutMessage):
            raise InvalidArgumentError("messages must be a list of OutMessage")
    if tracing.hook is not None and messages:
        return tracing.hook.send(
            queue, messages, lambda ms: _send(queue, ms, using=using, single=False), list
        )
    return _send(queue, messages, using=using, single=False)


def _send(
    queue: str,
    messages: Sequence[OutMessage],
    *,
    using: str | None,
    single: bool,
    now: int | None = None,
    inserted: list[int] | None = None,
) -> list[int]:
    """The general send: dedup, ordered lines, batches. ``now`` is the enqueue time
    (default: the clock's); ``inserted`` receives the seqs of the rows it wrote (the
    others collapsed into earlier messages). A transaction of its own runs again when
    the database gives it up (``retry``)."""
    alias = databases.alias_of(using, queue)

    def attempt() -> list[int]:
        wrote: list[int] = []
        seqs = _send_once(alias, queue, messages, single=single, now=now, inserted=wrote)
        if inserted is not None:
            inserted.extend(wrote)
        return seqs

    return retry.retried(alias, attempt)


def _send_once(
    alias: str,
    queue: str,
    messages: Sequence[OutMessage],
    *,
    single: bool,
    now: int | None,
    inserted: list[int],
) -> list[int]:
    cursor, dialect = databases.ctx(alias)
    refs = [None if m.depends_on is None else dependencies.check(m.depends_on) for m in messages]
    with transaction.atomic(using=alias):
        q = load_queue(cursor, queue)
        now = now_ms() if now is None else now
        rows = [for_queue(admit(m, now), q) for m in messages]
        if not rows:
            return []
        waits = {
            id(r): dependencies.resolve(cursor, dialect, alias, ref)
            for r, ref in zip(rows, refs, strict=True)
            if ref is not None
        }
        claims: dict[int, int] = {}
        first: dict[str, Row] = {}  # each dedup key's first message in this batch
        repeats: list[Row] = []  # the later ones, in batch order
        for r in rows:
            if r.dedup_key is not None and first.setdefault(r.dedup_key, r) is not r:
                repeats.append(r)
        owners: dict[str, Row] = {}  # dedup keys this batch inserts, by key
        # Keys are taken in sorted order: two batches sharing keys in opposite orders
        # would otherwise each hold one and wait for the other's (a deadlock on
        # PostgreSQL, where the index entries of uncommitted inserts are locked).
        for key in sorted(first):
            r = first[key]
            claims[id(r)] = _claim_dedup(cursor, q, r, now, single)
            if claims[id(r)] == 0:
                owners[key] = r
        copies: list[tuple[Row, Row]] = []  # (repeat, original) within this batch
        for r in repeats:
            owner = owners.get(str(r.dedup_key))
            if owner is None:  # the key was already held: judged against that message
                claims[id(r)] = _claim_dedup(cursor, q, r, now, single)
            elif owner.body_hash == r.body_hash:
                claims[id(r)] = -2
                copies.append((r, owner))
            else:
                claims[id(r)] = -1
        fresh = [r for r in rows if claims.get(id(r), 0) == 0]
        _mark_lines(cursor, dialect, q, fresh)
        if any(r.unique_key is not None for r in fresh):
            fresh = _insert_each(cursor, dialect, q, fresh, now)
        else:
            _insert(cursor, dialect, q, fresh, now)
        inserted.extend(r.seq for r in fresh)
        for r in fresh:
            if id(r) in waits:
                dependencies.wait(cursor, r.seq, waits[id(r)])
        for key, r in owners.items():
            cursor.execute(
                "UPDATE mqlite_dedup SET seq = %s WHERE queue_id = %s AND dedup_key = %s",
                [r.seq, q.id, key],
            )
        for r in rows:
            if claims.get(id(r), 0) not in (0, -2):
                r.seq = max(claims[id(r)], 0)
        for repeat, original in copies:
            repeat.seq = original.seq
        if fresh:
            if not dialect.counts_enqueued:
                totals.bump_totals(cursor, dialect, q.id, enqueued=len(fresh))
            wake(cursor, dialect, [q.name])
            if events.listening(events.message_sent):
                events.sent(alias, q.name, [r.seq for r in fresh])
        return [r.seq for r in rows]


def _claim_dedup(cursor: CursorWrapper, q: QueueRow, r: Row, now: int, single: bool) -> int:
    """Take the dedup key for this send. 0: the key is ours, insert the message;
    >0: a duplicate of that seq; -1: a conflict in a batch (the slot returns seq 0)."""
    cursor.execute(
        "INSERT INTO mqlite_dedup (queue_id, dedup_key, body_hash, seq, expires_at) "
        "VALUES (%s, %s, %s, 0, %s) "
        "ON CONFLICT (queue_id, dedup_key) DO UPDATE SET body_hash = excluded.body_hash, "
        "seq = 0, expires_at = excluded.expires_at WHERE mqlite_dedup.expires_at <= %s "
        "RETURNING id",
        [q.id, r.dedup_key, r.body_hash, now + q.dedup_window_ms, now],
    )
    if cursor.fetchone() is not None:
        return 0
    cursor.execute(
        "SELECT body_hash, seq FROM mqlite_dedup WHERE queue_id = %s AND dedup_key = %s",
        [q.id, r.dedup_key],
    )
    body_hash, seq = cursor.fetchone()
    if body_hash == r.body_hash and seq > 0:
        return int(seq)
    if single:
        raise DedupConflictError(
            f"message_id {r.message_id!r} was sent to {q.name!r} with a different body"
        )
    return -1


def _mark_lines(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row]) -> None:
    seen: set[str] = set()
    for r in rows:
        if r.order_key is not None:
            r.first_in_line = r.order_key not in seen
            seen.add(r.order_key)
    lines.lock_lines(cursor, dialect, q.id, seen)


def _insert(
    cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row], now: int
) -> None:
    for chunk in batches.chunks(rows, INSERT_CHUNK):
        values: list[str] = []
        params: list[Any] = []
        for r in chunk:
            values.append(_values_sql(dialect, q, r, now, params))
        cursor.execute(
            f"INSERT INTO mqlite_message ({_INSERT_COLUMNS}) VALUES {', '.join(values)} "
            "RETURNING seq",
            params,
        )
        # Sequence values are drawn in VALUES order; RETURNING order is not promised.
        seqs = sorted(row[0] for row in cursor.fetchall())
        for r, seq in zip(chunk, seqs, strict=True):
            r.seq = seq


def wake(cursor: CursorWrapper, dialect: Dialect, queues: Sequence[str]) -> None:
    """Wake the consumers of ``queues`` once this transaction commits (NOTIFY where the
    database has it, and this process's waiters): messages became claimable."""
    alias = cursor.db.alias
    notify = dialect.notify_sql()
    for name in queues:
        if not send_one.wake_pending(alias, name):
            if notify is not None:
                # Delivered by the database at commit, never for a rolled-back send.
                cursor.execute(notify, [name])
            send_one.on_commit_wake(alias, name)


def enqueue_in(alias: str, queue: str, msg: OutMessage, inserted: list[int] | None = None) -> int:
    """Send ``msg`` on database ``alias`` by the general path (admission, dedup, lines),
    joining the transaction open there: how the engine enqueues a message of its own
    (a batch's callback) inside the statement's transaction that calls for it. Raises
    as ``send`` does, having written nothing."""
    return _send(queue, [msg], using=alias, single=True, inserted=inserted)[0]


def _values_sql(dialect: Dialect, q: QueueRow, r: Row, now: int, params: list[Any]) -> str:
    """The VALUES tuple of ``r`` in ``_INSERT_COLUMNS`` order; its parameters are
    appended to ``params``."""
    if r.order_key is None:
        blocked_sql = "0"
    elif r.first_in_line:
        blocked_sql = _blocked_sql(dialect)
    else:
        blocked_sql = "1"
    state = "scheduled" if r.visible_at > now else "active"
    params += [
        q.id,
        state,
        r.priority,
        r.visible_at,
        r.expires_at,
        now,
        r.body,
        r.message_id,
        r.group_id,
        r.order_key,
    ]
    if r.order_key is not None and r.first_in_line:
        params += [q.id, r.order_key]
    params += [r.subject, r.properties, r.correlation_id, r.reply_to, r.content_type]
    return (
        f"(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {blocked_sql}, %s, "
        f"{dialect.json_param()}, %s, %s, %s, 0)"
    )


def _insert_each(
    cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row], now: int
) -> list[Row]:
    """Insert ``rows`` one statement each, in order (a batch that holds a unique key):
    a row whose key another message holds takes that message's seq, having written
    nothing (``skip``) or its content into the holder (``replace``, ``debounce``).
    Returns the rows inserted. Each row asks whether its line has a live message, since
    an earlier row of its line in this batch may not have been inserted."""
    unique.lock_keys(cursor, dialect, q, rows)
    written: list[Row] = []
    for r in rows:
        r.first_in_line = True
        params: list[Any] = []
        values = _values_sql(dialect, q, r, now, params)
        if r.unique_key is None:
            cursor.execute(
                f"INSERT INTO mqlite_message ({_INSERT_COLUMNS}) VALUES {values} RETURNING seq",
                params,
            )
            r.seq = int(cursor.fetchone()[0])
            written.append(r)
        elif unique.insert(cursor, dialect, q, r, (_INSERT_COLUMNS, values, params), now):
            written.append(r)
    return written
