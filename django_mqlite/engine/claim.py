"""Consuming: ``receive`` (peek-lock and receive-and-delete) and ``receive_deferred``.

A claim is one ``UPDATE ... WHERE seq IN (SELECT ... LIMIT n) RETURNING`` statement. The
inner SELECT seeks the partial index ``mqlite_msg_claim`` (active, unblocked rows in
(queue, priority desc, seq) order), so its cost does not grow with the backlog. On
PostgreSQL it adds ``FOR UPDATE SKIP LOCKED`` so concurrent claimers take different rows.
Ordered lines need no probe here: a message behind a live predecessor is ``blocked``
and simply is not in the index. A paused queue is not claimed from at all, and a queue
with a rate or in-flight limit gets a budget subquery in place of the LIMIT parameter
(``limits``); a queue with neither runs exactly the statement above.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import InvalidArgumentError
from . import attempts, core, limits, maintenance, wakeup
from .clock import from_ms, now_ms
from .core import QueueRow
from .dialects import Dialect
from .group_batch import group_pick
from .received import Received
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


_claim_sql: dict[tuple[str, bool, str, bool, bool], str] = {}


def _claim_statement(
    dialect: Dialect,
    delete: bool,
    limit: str = "%s",
    budgeted: bool = False,
    groups: bool = False,
) -> str:
    """The claim. ``limit`` is the SQL of its LIMIT: a parameter, or for a queue with a
    rate or in-flight limit the budget subquery of ``limits.budget``; ``budgeted`` adds
    the byte budget (one more parameter, after the pick's); ``groups`` makes it a group
    batch (``group_pick``)."""
    key = (dialect.vendor, delete, limit, budgeted, groups)
    sql = _claim_sql.get(key)
    if sql is None:
        columns = "seq, order_key, priority" if groups else "seq"
        pick = (
            f"SELECT {columns} FROM mqlite_message {dialect.index_hint('mqlite_msg_claim')}"
            " WHERE queue_id = %s AND state = 'active' AND blocked = 0"
            " AND (expires_at IS NULL OR expires_at > %s)"
            f" ORDER BY priority DESC, seq LIMIT {limit} {dialect.lock_suffix()}"
        )
        if groups:
            pick = group_pick(dialect, pick)
        if budgeted:
            pick = fitting(dialect, pick, "priority DESC, seq")
        if delete:
            sql = (
                f"DELETE FROM mqlite_message WHERE seq IN ({pick}) "
                # No lease: an active row may still hold the token of a lapsed one.
                "RETURNING "
                + core.MESSAGE_COLUMNS.replace("delivery_count", "delivery_count + 1").replace(
                    "lock_token, locked_until", "NULL, NULL"
                )
                + ", order_key"
            )
        else:
            sql = (
                "UPDATE mqlite_message SET state = 'locked', "
                f"lock_token = {dialect.new_token_sql()}, locked_until = %s, locked_by = %s, "
                # A locked row's visible_at is when it was claimed (a task's start time).
                "visible_at = %s, "
                f"delivery_count = delivery_count + 1 WHERE seq IN ({pick}) "
                f"RETURNING {core.MESSAGE_COLUMNS}, order_key"
            )
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
    cursor.execute(_promote_statement(dialect), [now, queue_id, mqlite_settings.REAP_CHUNK])
    return cursor.rowcount


def to_received(
    q: QueueRow, row: Sequence[Any], dialect: Dialect, alias: str, worker_id: int | None = None
) -> Received:
    token, locked_until = row[12], row[13]
    return Received(
        **core.message_fields(q.name, row, dialect),
        lock_token=token,
        locked_until=None if locked_until is None else from_ms(locked_until),
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
    core.check_queue_name(queue)
    core.check_int(max_messages, "max_messages", 1, core.MAX_RECEIVE)
    wait_ms = min(core.duration_ms(wait, "wait"), int(core.MAX_WAIT_S * 1000))
    lock_ms = core.optional_lock_ms(lock_duration)
    try:
        mode_ = Mode(mode)
    except ValueError:
        raise InvalidArgumentError("mode must be 'peek_lock' or 'receive_and_delete'") from None
    attempt = core.check_str(attempt_id, "attempt_id")
    scope = core.check_str(attempt_scope, "attempt_scope", attempts.MAX_SCOPE_LEN)
    if max_bytes is not None:
        core.check_int(max_bytes, "max_bytes", 1, 2**62)
    core.check_worker_id(worker_id)
    return ReceiveArgs(
        queue=queue,
        max_messages=max_messages,
        wait_ms=wait_ms,
        lock_ms=lock_ms,
        mode=mode_,
        attempt_key=None if attempt is None else attempts.key(scope, attempt),
        worker_id=worker_id,
        max_bytes=max_bytes,
        alias=core.alias_of(using, queue),
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
    expired leases return first, in their own statement (``expire_queue_locks``)."""
    alias = args.alias
    maintenance.expire_queue_locks(alias, args.queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, args.queue)
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
        rows = sorted(cursor.fetchall(), key=lambda r: (-r[9], r[0]))
        if not rows:
            return []
        limits.spend(cursor, dialect, q, now, len(rows))
        if args.worker_id is not None and not delete:
            core.touch_worker(cursor, args.worker_id, now)
        if delete:
            core.release_lines(cursor, dialect, q.id, [r[14] for r in rows])
            core.bump_totals(cursor, dialect, q.id, delivered=len(rows), completed=len(rows))
        else:
            core.bump_totals(cursor, dialect, q.id, delivered=len(rows))
        got = [to_received(q, r, dialect, alias, args.worker_id) for r in rows]
        if args.attempt_key is not None:
            attempts.record(cursor, q, args.attempt_key, got, now)
        return got


def receive_deferred(
    queue: str,
    seqs: Sequence[int],
    *,
    lock_duration: float | dt.timedelta | None = None,
    max_bytes: int | None = None,
    using: str | None = None,
) -> list[Received]:
    """Claim deferred messages by seq. Seqs that are not deferred are skipped;
    ``max_bytes`` claims only the leading (lowest-seq) ones that fit, as ``receive``."""
    if not isinstance(seqs, list | tuple) or len(seqs) > core.MAX_RECEIVE:
        raise InvalidArgumentError(f"seqs must be a list of at most {core.MAX_RECEIVE} seqs")
    wanted = sorted({core.check_seq(s) for s in seqs})
    lock_ms = core.optional_lock_ms(lock_duration)
    if max_bytes is not None:
        core.check_int(max_bytes, "max_bytes", 1, 2**62)
    core.check_queue_name(queue)
    if not wanted:
        return []
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
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
            f" AND seq IN ({core.placeholders(len(wanted))}) "
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
            f"RETURNING {core.MESSAGE_COLUMNS}",
            [until, now, q.id, *wanted, now, *budget],
        )
        rows = sorted(cursor.fetchall(), key=lambda r: r[0])
        limits.spend(cursor, dialect, q, now, len(rows))
        core.bump_totals(cursor, dialect, q.id, delivered=len(rows))
        return [to_received(q, r, dialect, alias) for r in rows]
