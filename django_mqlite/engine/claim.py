"""Consuming: ``receive`` (peek-lock and receive-and-delete) and ``receive_deferred``.

A claim is one ``UPDATE ... WHERE seq IN (SELECT ... LIMIT n) RETURNING`` statement. The
inner SELECT seeks the partial index ``mqlite_msg_claim`` (active, unblocked rows in
(queue, priority desc, seq) order), so its cost does not grow with the backlog. On
PostgreSQL it adds ``FOR UPDATE SKIP LOCKED`` so concurrent claimers take different rows.
Ordered lines need no probe here: a message behind a live predecessor is ``blocked``
and simply is not in the index. A paused queue is not claimed from at all, and a queue
with a rate or in-flight limit gets a budget subquery in place of the LIMIT parameter
(``limits``); a queue with neither runs exactly the statement above. The statements
are written out below, per vendor, each with its invariant: ``PICK``, ``CLAIM`` and
``CLAIM_AND_DELETE``; the rows they return are ``ClaimedRow``s.

A claim with a byte budget (``max_bytes``) claims only the leading candidates whose
stored sizes (body and properties, read from the row without loading the body) fit,
and always the first: a running sum over the picked candidates, in the same statement.
What does not fit is never touched, so it stays active with its delivery uncounted, and
no surface loads or renders bodies it would then have to trim. Every argument is checked
(``check_receive``) before anything touches the database.

A group batch (``group_batch=True``, what the SQS endpoint asks of a FIFO queue, as SQS
returns as many messages of one group as it can): on a ``group_fifo`` queue with no rate
or in-flight limit, each head the claim picks brings the messages that follow it in its
group, in order, as long as they are active (a parked, deferred or locked one ends the
run), the groups taken whole in claim order up to ``max_messages``. The followers stay
``blocked``, so the line's rule is unchanged: when the head leaves, the next becomes its
head; when the batch's leases run out, the head is claimable first again. Any other
queue, or a receive that does not ask, runs the plain claim above.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import current
from ..exceptions import InvalidArgumentError
from . import (
    arguments,
    attempts,
    batches,
    databases,
    heartbeat,
    limits,
    lines,
    maintenance,
    prepared,
    retry,
    tally,
    totals,
    tracing,
    wakeup,
)
from .clock import from_ms, now_ms
from .dialects import Dialect, dialect_for
from .group_batch import group_pick
from .received import Received
from .rows import (
    MESSAGE_COLUMNS,
    QUEUE_COLUMNS,
    MessageRow,
    QueueRow,
    columns,
    load_queue,
    message_fields,
)
from .types import Mode, Ordering

# A long-poll's fallback: between wake-ups (a send in this process, or NOTIFY) it polls
# after 10 ms, doubling up to half a second.
POLL_FIRST_S = 0.01
POLL_MAX_S = 0.5

#: What a message counts for in a byte budget beyond its body and properties: room for
#: its other fields (ids, subject, reply-to, content type, timestamps) as a reader sees them.
FIELDS_BYTES = 1024


def fitting(dialect: Dialect, pick: str, order: str) -> str:
    """``pick`` (a SELECT of candidate seqs) cut to the prefix, in ``order``, whose stored
    sizes add up to at most one parameter (bytes), and never less than its first row.

    The running sum runs over the candidates ``pick`` already chose (and, on PostgreSQL,
    locked), so it costs as many rows as the claim's LIMIT, whatever the backlog."""
    size = f"{dialect.stored_size_sql()} + {FIELDS_BYTES}"
    sized = pick.replace("SELECT seq FROM", f"SELECT seq, priority, {size} AS size FROM", 1)
    return (
        f"SELECT seq FROM (SELECT seq, size, SUM(size) OVER (ORDER BY {order}) AS upto"
        f" FROM ({sized}) AS candidates) AS running WHERE upto <= %s OR upto = size"
    )


@dataclass(slots=True)
class ClaimedRow(MessageRow):
    """A row the claim returns: the message's columns, the line it held and its batch
    (a receive-and-delete completes a batch's child in the claim, ``tally``)."""

    order_key: str | None
    batch_id: int | None


# -- name: pick --------------------------------------------------------------------------
# Invariant: only this queue's rows that are active, unblocked (the head of their line,
# or in no line) and unexpired, best first (priority desc, then seq), at most {limit}.
# It seeks mqlite_msg_claim, the partial index of exactly those rows, so its cost does
# not grow with the backlog (tests/engine/test_plans.py pins the plan). Parameters:
# queue_id, now, then {limit}'s: one (max_messages) where {limit} is %s, or a limited
# queue's budget subquery (``limits.budget``). A byte budget narrows it (``fitting``).
PICK = {
    # Claimers run side by side: SKIP LOCKED has each pick rows no other claimer holds,
    # so none waits and no row is taken twice.
    "postgresql": (
        "SELECT seq FROM mqlite_message"
        " WHERE queue_id = %s AND state = 'active' AND blocked = 0"
        " AND (expires_at IS NULL OR expires_at > %s)"
        " ORDER BY priority DESC, seq LIMIT {limit} FOR UPDATE SKIP LOCKED"
    ),
    # As PostgreSQL, over mqlite_msg_claim as migration 0017 makes it on MariaDB (no
    # partial index, no descending key before 10.8): the state in the key, and
    # claim_rank, a virtual column holding -priority, for the order. The engine cursor
    # runs this pick first, on its own (``dialects.mariadb_sql``).
    "mariadb": (
        "SELECT seq FROM mqlite_message FORCE INDEX (mqlite_msg_claim)"
        " WHERE queue_id = %s AND state = 'active' AND blocked = 0"
        " AND (expires_at IS NULL OR expires_at > %s)"
        " ORDER BY claim_rank, seq LIMIT {limit} FOR UPDATE SKIP LOCKED"
    ),
    # One writer at a time (BEGIN IMMEDIATE), so no row locks; INDEXED BY pins the
    # partial index whatever ANALYZE's statistics say.
    "sqlite": (
        "SELECT seq FROM mqlite_message INDEXED BY mqlite_msg_claim"
        " WHERE queue_id = %s AND state = 'active' AND blocked = 0"
        " AND (expires_at IS NULL OR expires_at > %s)"
        " ORDER BY priority DESC, seq LIMIT {limit}"
    ),
}

# -- name: claim -------------------------------------------------------------------------
# Invariant: one statement picks and takes, so each row goes to one claimer or none:
# every row of {pick} becomes locked under a fresh token with its lease, claimed now,
# its delivery counted. Parameters: locked_until, locked_by, now (visible_at: when it
# was claimed), then {pick}'s. Returns ``ClaimedRow``s. On MariaDB the engine cursor
# runs it as one short sequence in the claim's transaction (``dialects.mariadb_sql``):
# the pick locks its rows (SKIP LOCKED), one UPDATE takes exactly those rows with the
# state re-checked and a fresh token each, drawn in Python, and they are read back by
# token.
CLAIM = {
    "mariadb": (
        "UPDATE mqlite_message SET state = 'locked', "
        "lock_token = mqlite_new_token(), "
        "locked_until = %s, locked_by = %s, visible_at = %s, "
        "delivery_count = delivery_count + 1 WHERE seq IN ({pick}) RETURNING {columns}"
    ),
    "postgresql": (
        "UPDATE mqlite_message SET state = 'locked', "
        "lock_token = replace(gen_random_uuid()::text, '-', ''), "
        "locked_until = %s, locked_by = %s, visible_at = %s, "
        "delivery_count = delivery_count + 1 WHERE seq IN ({pick}) RETURNING {columns}"
    ),
    "sqlite": (
        "UPDATE mqlite_message SET state = 'locked', "
        "lock_token = lower(hex(randomblob(16))), "
        "locked_until = %s, locked_by = %s, visible_at = %s, "
        "delivery_count = delivery_count + 1 WHERE seq IN ({pick}) RETURNING {columns}"
    ),
}

# -- name: claim_and_delete ------------------------------------------------------------------
# Invariant: receive-and-delete: the rows of {pick} are removed in the statement that
# picked them, returned with the delivery they count for, never locked. Parameters:
# {pick}'s. Returns ``ClaimedRow``s. The same on every vendor.
CLAIM_AND_DELETE = "DELETE FROM mqlite_message WHERE seq IN ({pick}) RETURNING {columns}"

_CLAIMED_COLUMNS = columns(ClaimedRow)
#: A deleted row counts the delivery it is handed out for (nothing writes it back), and
#: is handed out with no lease (an active row may still hold a lapsed lease's token).
_DELETED_COLUMNS = (
    _CLAIMED_COLUMNS.replace("delivery_count", "delivery_count + 1")
    .replace("lock_token", "NULL AS lock_token")
    .replace("locked_until", "NULL AS locked_until")
)

_claim_sql: dict[tuple[str, bool, str, bool, bool], str] = {}


def _claim_statement(
    dialect: Dialect,
    delete: bool,
    limit: str = "%s",
    budgeted: bool = False,
    groups: bool = False,
) -> str:
    """The vendor's ``CLAIM`` (or ``CLAIM_AND_DELETE``) over its ``PICK`` with the
    pick's ``{limit}``: a parameter, or for a queue with a rate or in-flight limit the
    budget subquery of ``limits.budget``; ``budgeted`` narrows the pick to the byte
    budget (one more parameter, after the pick's); ``groups`` makes it a group batch
    (``group_pick``: the pick's rows become the heads)."""
    key = (dialect.vendor, delete, limit, budgeted, groups)
    sql = _claim_sql.get(key)
    if sql is None:
        pick = PICK[dialect.vendor].format(limit=limit)
        if groups:
            heads = pick.replace("SELECT seq FROM", "SELECT seq, order_key, priority FROM", 1)
            pick = group_pick(dialect, heads)
        if budgeted:
            pick = fitting(dialect, pick, "priority DESC, seq")
        if delete:
            sql = CLAIM_AND_DELETE.format(pick=pick, columns=_DELETED_COLUMNS)
        else:
            sql = CLAIM[dialect.vendor].format(pick=pick, columns=_CLAIMED_COLUMNS)
        _claim_sql[key] = sql
    return sql


_promote_sql: dict[str, str] = {}


def _promote_statement(dialect: Dialect) -> str:
    sql = _promote_sql.get(dialect.vendor)
    if sql is None:
        sql = (
            "UPDATE mqlite_message SET state = 'active' WHERE seq IN ("
            f" SELECT seq FROM mqlite_message {dialect.index_hint('mqlite_msg_due')}"
            " WHERE state = 'scheduled' AND visible_at <= %s"
            f" AND queue_id = %s ORDER BY visible_at LIMIT %s {dialect.lock_suffix()})"
        )
        _promote_sql[dialect.vendor] = sql
    return sql


def promote_due(cursor: CursorWrapper, dialect: Dialect, queue_id: int, now: int) -> int:
    """Make this queue's due scheduled messages active (bounded)."""
    cursor.execute(_promote_statement(dialect), [now, queue_id, current().reap_chunk])
    return cursor.rowcount


def _best_first(row: MessageRow) -> tuple[int, int]:
    """The order a claim hands its rows out in (RETURNING has none): priority desc, seq."""
    return -row.priority, row.seq


def to_received(
    q: QueueRow, row: MessageRow, dialect: Dialect, alias: str, worker_id: int | None = None
) -> Received:
    return Received(
        **message_fields(q.name, row, dialect),
        lock_token=row.lock_token,
        locked_until=None if row.locked_until is None else from_ms(row.locked_until),
        using=alias,
        worker_id=worker_id,
    )


@dataclass(frozen=True)
class ReceiveArgs:
    """A receive's arguments, checked: what ``check_receive`` returns and a claim takes."""

    queue: str
    max_messages: int
    wait_ms: int
    lock_ms: int | None
    mode: Mode
    attempt_key: str | None
    worker_id: int | None
    max_bytes: int | None
    alias: str
    group_batch: bool = False


def check_receive(
    queue: str,
    *,
    max_messages: int = 1,
    wait: float | dt.timedelta = 0,
    lock_duration: float | dt.timedelta | None = None,
    mode: str = "peek_lock",
    attempt_id: str | None = None,
    attempt_scope: str | None = None,
    max_bytes: int | None = None,
    worker_id: int | None = None,
    using: str | None = None,
    group_batch: bool = False,
) -> ReceiveArgs:
    """Every argument of a receive checked (``InvalidArgumentError`` otherwise), before
    anything is claimed. ``receive`` and ``areceive`` call it first; nothing about a
    receive is validated after its claim."""
    arguments.check_queue_name(queue)
    arguments.check_int(max_messages, "max_messages", 1, arguments.MAX_RECEIVE)
    wait_ms = min(arguments.duration_ms(wait, "wait"), int(arguments.MAX_WAIT_S * 1000))
    lock_ms = arguments.optional_lock_ms(lock_duration)
    try:
        mode_ = Mode(mode)
    except ValueError:
        raise InvalidArgumentError("mode must be 'peek_lock' or 'receive_and_delete'") from None
    attempt = arguments.check_str(attempt_id, "attempt_id")
    scope = arguments.check_str(attempt_scope, "attempt_scope", attempts.MAX_SCOPE_LEN)
    if max_bytes is not None:
        arguments.check_int(max_bytes, "max_bytes", 1, 2**62)
    arguments.check_worker_id(worker_id)
    return ReceiveArgs(
        queue=queue,
        max_messages=max_messages,
        wait_ms=wait_ms,
        lock_ms=lock_ms,
        mode=mode_,
        attempt_key=None if attempt is None else attempts.key(scope, attempt),
        worker_id=worker_id,
        max_bytes=max_bytes,
        alias=databases.alias_of(using, queue),
        group_batch=bool(group_batch),
    )


def receive(
    queue: str,
    *,
    max_messages: int = 1,
    wait: float | dt.timedelta = 0,
    lock_duration: float | dt.timedelta | None = None,
    mode: str = "peek_lock",
    attempt_id: str | None = None,
    attempt_scope: str | None = None,
    max_bytes: int | None = None,
    worker_id: int | None = None,
    using: str | None = None,
    group_batch: bool = False,
) -> list[Received]:
    """Claim up to ``max_messages`` (≤ 256) messages in one transaction.

    ``wait`` long-polls up to that many seconds (capped at 20) and returns as soon as a
    claim finds something. No connection is held open between polls. ``max_bytes``
    bounds the batch by the stored size of its bodies and properties (plus
    ``FIELDS_BYTES`` a message); the first message is always claimed. ``attempt_id`` is
    private to ``attempt_scope`` (a surface passes its caller; see ``attempts``).
    ``group_batch`` asks for a group batch (see the module's docstring): for a consumer
    that handles a batch in order, as an SQS FIFO client does.
    """
    args = check_receive(
        queue,
        max_messages=max_messages,
        wait=wait,
        lock_duration=lock_duration,
        mode=mode,
        attempt_id=attempt_id,
        attempt_scope=attempt_scope,
        max_bytes=max_bytes,
        worker_id=worker_id,
        using=using,
        group_batch=group_batch,
    )
    deadline = time.monotonic() + args.wait_ms / 1000
    delay = POLL_FIRST_S
    while True:
        got = claim(args)
        remaining = deadline - time.monotonic()
        if got or remaining <= 0:
            return got
        # Sleep until woken by a send in this process (or NOTIFY), or a bounded back-off.
        wakeup.wait(queue, min(delay, remaining))
        delay = min(delay * 2, POLL_MAX_S)


def claim(args: ReceiveArgs) -> list[Received]:
    """One claim (no waiting) with checked arguments: a replay of the attempt, or up to
    ``max_messages`` (and ``max_bytes``) of the queue's claimable messages. The queue's
    expired leases return first, in the reaper's statement (``expire_locks``) at most
    every ``QUEUE_LEASES_EVERY_MS``: before the claim (``expire_queue_locks``; on SQLite
    in the claim's transaction), or on PostgreSQL's plain claim when its statement found
    one lapsed (``_claim_one``).

    Every claim of every surface (a worker, ``receive``, ``areceive``, HTTP, SQS) comes
    here, so a claim that took messages is traced here, once (``tracing``). A claim
    the database gave up to break a deadlock runs again (``retry``)."""
    tracer = tracing.watching()
    started = tracing.now_ns() if tracer is not None else 0
    got = retry.retried(args.alias, lambda: _claim_one(args))
    if got and tracer is not None:
        tracing.record_safely(lambda: tracer.received(args.queue, got, started))
    return got


def _claim(args: ReceiveArgs) -> list[Received]:
    alias = args.alias
    cursor, dialect = databases.ctx(alias)
    # The queue's expired leases return first. Where writers run concurrently the return
    # commits on its own, so the claim's transaction never waits on rows it locked; where
    # writes are serialized (SQLite: the claim holds the database's one write lock
    # anyway) it joins the claim's transaction, a commit less (a savepoint of it).
    together = not dialect.concurrent_writers
    if not together:
        maintenance.expire_queue_locks(alias, args.queue)
    with transaction.atomic(using=alias):
        if together:
            maintenance.expire_queue_locks(alias, args.queue)
        q = load_queue(cursor, args.queue)
        now = now_ms()
        if args.attempt_key is not None:
            replay = attempts.replay(
                cursor, q, args.attempt_key, now, lambda r: to_received(q, r, dialect, alias)
            )
            if replay is not None:
                return replay
        if q.paused:
            return []
        promote_due(cursor, dialect, q.id, now)
        delete = args.mode is Mode.RECEIVE_AND_DELETE
        limit: str = "%s"
        budget: list[int] = [args.max_messages]
        groups = (
            args.group_batch
            and args.max_messages > 1
            and q.ordering == Ordering.GROUP_FIFO
            and not q.limited
        )
        if q.limited:
            limit, budget = limits.budget(cursor, dialect, q, now, args.max_messages)
        if groups:
            n = args.max_messages
            budget = [n, q.id, n - 2, q.id, q.id, now, n]
        if args.max_bytes is not None:
            budget = [*budget, args.max_bytes]
        sql = _claim_statement(dialect, delete, limit, args.max_bytes is not None, groups)
        if delete:
            cursor.execute(sql, [q.id, now, *budget])
        else:
            lease = args.lock_ms if args.lock_ms is not None else q.lock_duration_ms
            cursor.execute(sql, [now + lease, args.worker_id, now, q.id, now, *budget])
        rows = sorted((ClaimedRow(*r) for r in cursor.fetchall()), key=_best_first)
        if not rows:
            return Claimed(limited=q.limited)
        limits.spend(cursor, dialect, q, now, len(rows))
        if args.worker_id is not None and not delete:
            heartbeat.touch_worker(cursor, args.worker_id, now)
        if delete:
            lines.release_lines(cursor, dialect, q.id, [r.order_key for r in rows])
            totals.bump_totals(cursor, dialect, q.id, delivered=len(rows), completed=len(rows))
            tally.count(cursor, dialect, [(r.batch_id, tally.COMPLETED) for r in rows])
        else:
            totals.bump_totals(cursor, dialect, q.id, delivered=len(rows))
        got = Claimed((to_received(q, r, dialect, alias, args.worker_id) for r in rows), q.limited)
        if args.attempt_key is not None:
            attempts.record(cursor, q, args.attempt_key, got, now)
        return got


# -- name: claim_one (PostgreSQL) -------------------------------------------------------
# Invariant: the general claim's steps for a plain claim, as one statement: the queue's
# row (q), its due scheduled messages promoted (p, as ``promote_due``), when asked
# whether one of the queue's leases has lapsed (l, what ``expire_queue_locks`` would
# return), the claim of ``CLAIM`` over ``PICK`` (c) for a queue that is neither paused
# nor limited, the worker's heartbeat stamped (hb, ``heartbeat.TOUCH``) and the
# delivered total counted (t), both only when something was claimed. Every part reads
# the statement's one snapshot, so rows p promoted are not claimable in c: when p
# promoted any, or l found a lapsed lease (the claim order would skip what the
# reaper's statement returns), c claims nothing unless told to claim anyway, and the
# caller claims again, so told. One row per claimed message, or one with the claim's
# columns NULL when none was; no row when the queue does not exist. Parameters: name;
# now, reap chunk (p); look for lapsed leases, now (l); locked_until's now, lease (NULL:
# the queue's), locked_by, now (c's SET), claim anyway, now, max_messages (c's pick);
# now, worker id, now (hb).
_ONE_QUEUE = "SELECT id FROM q WHERE NOT paused"
_ONE_PLAIN = (
    f"{_ONE_QUEUE} AND rate_limit_milli IS NULL AND max_in_flight IS NULL"
    " AND (%s OR NOT EXISTS (SELECT 1 FROM p) AND NOT EXISTS (SELECT 1 FROM l))"
)
_ONE_LAPSED = (
    "SELECT 1 FROM mqlite_message WHERE %s AND queue_id = (SELECT id FROM q)"
    f" AND {maintenance.LAPSED} LIMIT 1"
)
_one_sql: dict[str, str] = {}


def _one_statement(dialect: Dialect) -> str:
    sql = _one_sql.get(dialect.vendor)
    if sql is None:
        promote = _promote_statement(dialect).replace("queue_id = %s", f"queue_id = ({_ONE_QUEUE})")
        claim = _claim_statement(dialect, False).replace(
            "queue_id = %s", f"queue_id = ({_ONE_PLAIN})"
        )
        lease = "locked_until = %s + COALESCE(%s, (SELECT lock_duration_ms FROM q))"
        claim = claim.replace("locked_until = %s", lease)
        touch = f"{heartbeat.TOUCH} AND EXISTS (SELECT 1 FROM c)"
        count = totals.counted_sql(dialect, "delivered", "SELECT id FROM q", "c")
        sql = (
            f"WITH q AS (SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s),"
            f" p AS ({promote} RETURNING 1), l AS ({_ONE_LAPSED}), c AS ({claim}),"
            f" hb AS ({touch}), t AS ({count})"
            " SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM l), q.*, c.*"
            " FROM q LEFT JOIN c ON true"
        )
        _one_sql[dialect.vendor] = sql
    return sql


_QUEUE_WIDTH = len(QUEUE_COLUMNS.split(", "))


def _claim_one(args: ReceiveArgs) -> list[Received]:
    """A plain claim (peek-lock, no attempt, no byte budget, no group batch) on a
    database that runs data-modifying CTEs (PostgreSQL): one statement (``claim_one``)
    instead of a transaction of five statements, its ``BEGIN`` and its ``COMMIT``: a
    pickup's round trips are most of its time (docs/benchmark.md). A single statement
    is atomic on its own, and inside the caller's transaction it commits or rolls back
    with it, so it needs no savepoint (as ``send_one``). What it does not take (a
    limited queue, a missing one) goes to ``_claim``, which gives the same answer.
    A statement that promoted scheduled messages claims nothing, and a second one
    claims, in the claim order, with what it promoted (as the general claim, it does not
    wait for what it promotes itself: with more due than ``REAP_CHUNK``).

    The queue's expired leases: when they are due (``maintenance.queue_leases_due``)
    the statement also asks whether one has lapsed, and only then claims nothing, the
    reaper's statement returns them (``maintenance.expire_locks``) and a second
    statement claims; the general claim runs that return before every due claim, a
    statement and a commit more (every fifth pickup of a trickle, docs/benchmark.md)."""
    alias = args.alias
    if (
        not dialect_for(alias).writable_cte
        or args.mode is not Mode.PEEK_LOCK
        or args.attempt_key is not None
        or args.max_bytes is not None
        or (args.group_batch and args.max_messages > 1)
    ):
        return _claim(args)
    cursor, dialect = databases.ctx(alias)
    first = _run_one(cursor, dialect, alias, args, maintenance.queue_leases_due(alias, args.queue))
    if first is None:
        return _claim(args)  # no such queue: the general path says so
    q, promoted, lapsed, rows = first
    if lapsed:
        maintenance.expire_locks(alias, args.queue)
    if q.paused:
        return []
    if q.limited:
        return _claim(args)
    if promoted or lapsed:
        # It claimed nothing: the claim order (priority, then seq) takes in what it
        # promoted and what the leases' return made active, which this second statement
        # sees as active.
        again = _run_one(cursor, dialect, alias, args, anyway=True)
        rows = [] if again is None else again[3]
    rows.sort(key=_best_first)
    return Claimed(to_received(q, r, dialect, alias, args.worker_id) for r in rows)


def _run_one(
    cursor: CursorWrapper,
    dialect: Dialect,
    alias: str,
    args: ReceiveArgs,
    leases: bool = False,
    anyway: bool = False,
) -> tuple[QueueRow, int, int, list[ClaimedRow]] | None:
    """Run the one-statement claim (``leases``: look for a lapsed lease; ``anyway``:
    claim even when it promoted or found one): the queue, how many messages it promoted,
    whether a lease lapsed (1 or 0), and the rows it claimed; None when there is no such
    queue."""
    now = now_ms()
    params = [args.queue, now, current().reap_chunk, leases, now]
    params += [now, args.lock_ms, args.worker_id, now, anyway, now, args.max_messages]
    params += [now, args.worker_id, now]
    prepared.execute(cursor, alias, "claim", _one_statement(dialect), params)
    got = cursor.fetchall()
    if not got:
        return None
    queue_end = 2 + _QUEUE_WIDTH
    rows = [ClaimedRow(*r[queue_end:]) for r in got if r[queue_end] is not None]
    return QueueRow(*got[0][2:queue_end]), int(got[0][0]), int(got[0][1]), rows


class Claimed(list[Received]):
    """A claim's messages. ``limited``: the queue has a rate limit or ``max_in_flight``,
    so a claim may have taken fewer than were claimable, and more become claimable as
    time passes or leases end, with no notification: a worker polls such a queue
    instead of waiting to be woken."""

    def __init__(self, messages: Iterable[Received] = (), limited: bool = False) -> None:
        super().__init__(messages)
        self.limited = limited


def receive_deferred(
    queue: str,
    seqs: Sequence[int],
    *,
    lock_duration: float | dt.timedelta | None = None,
    max_bytes: int | None = None,
    using: str | None = None,
) -> list[Received]:
    """Claim deferred messages by seq. Seqs that are not deferred are skipped;
    ``max_bytes`` claims only the leading (lowest-seq) ones that fit, as ``receive``.
    Traced as ``claim`` is."""
    tracer = tracing.watching()
    started = tracing.now_ns() if tracer is not None else 0
    got = _receive_deferred(
        queue, seqs, lock_duration=lock_duration, max_bytes=max_bytes, using=using
    )
    if got and tracer is not None:
        tracing.record_safely(lambda: tracer.received(queue, got, started))
    return got


def _receive_deferred(
    queue: str,
    seqs: Sequence[int],
    *,
    lock_duration: float | dt.timedelta | None,
    max_bytes: int | None,
    using: str | None,
) -> list[Received]:
    if not isinstance(seqs, list | tuple) or len(seqs) > arguments.MAX_RECEIVE:
        raise InvalidArgumentError(f"seqs must be a list of at most {arguments.MAX_RECEIVE} seqs")
    wanted = sorted({arguments.check_seq(s) for s in seqs})
    lock_ms = arguments.optional_lock_ms(lock_duration)
    if max_bytes is not None:
        arguments.check_int(max_bytes, "max_bytes", 1, 2**62)
    arguments.check_queue_name(queue)
    if not wanted:
        return []
    alias = databases.alias_of(using, queue)

    def attempt() -> list[Received]:
        cursor, dialect = databases.ctx(alias)
        with transaction.atomic(using=alias):
            q = load_queue(cursor, queue)
            if q.paused:
                return []
            now = now_ms()
            until = now + (lock_ms if lock_ms is not None else q.lock_duration_ms)
            limit: str = "%s"
            budget: list[int] = [len(wanted)]
            if q.limited:
                limit, budget = limits.budget(cursor, dialect, q, now, len(wanted))
            pick = (
                "SELECT seq FROM mqlite_message WHERE queue_id = %s AND state = 'deferred' "
                f" AND seq IN ({batches.placeholders(len(wanted))}) "
                " AND (expires_at IS NULL OR expires_at > %s) "
                f" ORDER BY seq LIMIT {limit} {dialect.lock_suffix()}"
            )
            if max_bytes is not None:
                pick = fitting(dialect, pick, "seq")
                budget = [*budget, max_bytes]
            cursor.execute(
                "UPDATE mqlite_message SET state = 'locked', "
                f"lock_token = {dialect.new_token_sql()}, locked_until = %s, visible_at = %s, "
                f"delivery_count = delivery_count + 1 WHERE seq IN ({pick}) "
                f"RETURNING {MESSAGE_COLUMNS}",
                [until, now, q.id, *wanted, now, *budget],
            )
            rows = sorted((MessageRow(*r) for r in cursor.fetchall()), key=lambda r: r.seq)
            limits.spend(cursor, dialect, q, now, len(rows))
            totals.bump_totals(cursor, dialect, q.id, delivered=len(rows))
            return [to_received(q, r, dialect, alias) for r in rows]

    return retry.retried(alias, attempt)
