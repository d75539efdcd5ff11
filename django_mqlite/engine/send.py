"""Producing: ``send``, ``send_batch`` (and ``enqueue_in``, the general path for the
engine's own sends).

A send is an INSERT in the caller's transaction when one is open (the outbox): nothing
is claimable until it commits, and a rollback leaves nothing behind.

Unique keys: a message sent with ``unique_key`` holds the key while it is live (active,
locked, deferred or scheduled); a completed or dead-lettered one frees it. The database
enforces this with the partial unique index ``mqlite_msg_unique``, and the send is one
``INSERT … ON CONFLICT (queue_id, unique_key) WHERE <its predicate> DO NOTHING``: a send
whose key is held writes nothing and returns the holder's seq (``on_conflict="skip"``),
read by a second statement only then. A send racing the holder's commit waits for it on
PostgreSQL (the index decides, not a read); SQLite has one writer. Sends without a key run
the statements they always did.

``on_conflict="replace"`` and ``"debounce"``: when the insert found the key held, one
guarded UPDATE writes the send's content (body, content type, subject, properties,
correlation id, reply-to, priority, expiry) into the holder, only if it is ``active`` or
``scheduled``; ``debounce`` also moves its visible time to the send's (now + delay). The
holder keeps its seq, message id, group and place in its line, and the send returns its
seq. A holder a consumer has (``locked`` or ``deferred``) is not changed: the send raises
``UniqueKeyLockedError`` and a batch writes nothing. The index still decides who holds
the key; the UPDATE only ever touches the one live row that does.

A send of several keys takes them in sorted order before it writes any (PostgreSQL:
one transaction-scoped lock per key), then inserts in the order given, so seqs keep the
batch's order. Taking them in the order given, two batches with shared keys in
opposite orders would each hold a key the other waits for (an insert waits on the
other's uncommitted index entry, a replace on its row lock): a deadlock. A send of one
key takes no lock: one key cannot close a cycle within the send.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..exceptions import (
    DedupConflictError,
    InvalidArgumentError,
    UniqueKeyLockedError,
)
from . import arguments, batches, databases, events, lines, send_one, totals, tracing
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
    if send_one.eligible(row):
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
    others collapsed into earlier messages)."""
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        q = load_queue(cursor, queue)
        now = now_ms() if now is None else now
        rows = [for_queue(admit(m, now), q) for m in messages]
        if not rows:
            return []
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
        if inserted is not None:
            inserted.extend(r.seq for r in fresh)
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
            notify = dialect.notify_sql()
            if not send_one.wake_pending(alias, q.name):
                if notify is not None:
                    # Delivered by the database at commit, never for a rolled-back send.
                    cursor.execute(notify, [q.name])
                send_one.on_commit_wake(alias, q.name)
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


def enqueue_in(alias: str, queue: str, msg: OutMessage) -> int:
    """Send ``msg`` on database ``alias`` by the general path (admission, dedup, lines),
    joining the transaction open there: how the engine enqueues a message of its own
    (a batch's callback) inside the statement's transaction that calls for it. Raises
    as ``send`` does, having written nothing."""
    return _send(queue, [msg], using=alias, single=True)[0]


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


# -- name: send_unique --------------------------------------------------------------------
# The conflict target repeats the predicate of mqlite_msg_unique (models.Message) term for
# term, as Django renders it: SQLite takes a partial index as the target only then.
_UNIQUE_PREDICATE = f"state IN {lines.LIVE_SQL} AND unique_key IS NOT NULL"
_UNIQUE_CONFLICT = f"ON CONFLICT (queue_id, unique_key) WHERE {_UNIQUE_PREDICATE} DO NOTHING"
_HOLDER = (
    "SELECT seq, state FROM mqlite_message WHERE queue_id = %s AND unique_key = %s "
    f"AND {_UNIQUE_PREDICATE}"
)
#: The holder's states a replacing send may not change: a consumer holds the message.
_HELD = ("locked", "deferred")

# -- name: replace_unique -----------------------------------------------------------------
# ``on_conflict="replace"``/``"debounce"``: the live holder's content becomes the send's,
# only while no consumer holds it (active or scheduled). Parameters: body, content_type,
# subject, properties, correlation_id, reply_to, priority, expires_at, (debounce: visible
# time, visible time, now), queue id, key.
_REPLACE = (
    "UPDATE mqlite_message SET body = %s, content_type = %s, subject = %s, "
    "properties = {json}, correlation_id = %s, reply_to = %s, priority = %s, "
    "expires_at = %s{debounce} "
    f"WHERE queue_id = %s AND unique_key = %s AND {_UNIQUE_PREDICATE} "
    "AND state IN ('active', 'scheduled') RETURNING seq"
)
_DEBOUNCE = ", visible_at = %s, state = CASE WHEN %s > %s THEN 'scheduled' ELSE 'active' END"
#: A holder can finish between the skipped insert and the read of its seq (PostgreSQL);
#: the send then tries again, this many times in all.
UNIQUE_ATTEMPTS = 20


def _insert_each(
    cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row], now: int
) -> list[Row]:
    """Insert ``rows`` one statement each, in order (a batch that holds a unique key):
    a row whose key a live message holds takes that message's seq, having written
    nothing (``skip``) or its content into the holder (``replace``, ``debounce``).
    Returns the rows inserted. Each row asks whether its line has a live message, since
    an earlier row of its line in this batch may not have been inserted."""
    _lock_keys(cursor, dialect, q, rows)
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
        elif _insert_unique(cursor, dialect, q, r, values, params, now):
            written.append(r)
    return written


def _lock_keys(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[Row]) -> None:
    """Lock the unique keys of ``rows`` in sorted order (see the module docstring), when
    there are two or more and writers run side by side."""
    sql = dialect.lock_group_sql()
    keys = sorted({r.unique_key for r in rows if r.unique_key is not None})
    if sql is None or len(keys) < 2:
        return
    for key in keys:
        # Its own namespace: a line's lock (``lines.lock_lines``) is "mqlite:<queue>:<key>".
        cursor.execute(sql, [f"mqlite-unique:{q.id}:{key}"])


def _insert_unique(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    r: Row,
    values: str,
    params: list[Any],
    now: int,
) -> bool:
    """Insert ``r`` unless a live message holds its key; True when it was inserted.
    Otherwise ``r.seq`` is the holder's, and ``replace``/``debounce`` wrote ``r``'s
    content into it by one guarded UPDATE (only an ``active`` or ``scheduled`` holder:
    one a consumer holds raises ``UniqueKeyLockedError``). The holder may finish or move
    between two statements; each attempt asks the database again."""
    sql = (
        f"INSERT INTO mqlite_message ({_INSERT_COLUMNS}, unique_key) "
        f"VALUES {values[:-1]}, %s) {_UNIQUE_CONFLICT} RETURNING seq"
    )
    for _ in range(UNIQUE_ATTEMPTS):
        cursor.execute(sql, [*params, r.unique_key])
        got = cursor.fetchone()
        if got is not None:
            r.seq = int(got[0])
            return True
        if r.on_conflict != "skip":
            got = _replace(cursor, dialect, q, r, now)
            if got is not None:
                r.seq = got
                return False
        cursor.execute(_HOLDER, [q.id, r.unique_key])
        holder = cursor.fetchone()
        if holder is None:
            continue  # it finished since the insert: try again
        r.seq = int(holder[0])
        if r.on_conflict == "skip":
            return False
        if holder[1] in _HELD:
            raise UniqueKeyLockedError(
                f"unique_key {r.unique_key!r} on {q.name!r} is held by message {r.seq}, "
                f"which a consumer holds ({holder[1]}); nothing was written"
            )
    raise RuntimeError(f"unique_key {r.unique_key!r}: no insert and no holder")


def _replace(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, r: Row, now: int) -> int | None:
    """Write ``r``'s content into the live holder of its key, if no consumer holds it;
    ``debounce`` also moves the holder's visible time to ``r``'s. The holder keeps its
    seq, message id, group and place in its line. Returns its seq, or None."""
    debounce = r.on_conflict == "debounce"
    cursor.execute(
        _REPLACE.format(json=dialect.json_param(), debounce=_DEBOUNCE if debounce else ""),
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
