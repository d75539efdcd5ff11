"""Consuming: ``receive`` (peek-lock and receive-and-delete) and ``receive_deferred``.

A claim is one ``UPDATE ... WHERE seq IN (SELECT ... LIMIT n) RETURNING`` statement. The
inner SELECT seeks the partial index ``mqlite_msg_claim`` (active, unblocked rows in
(queue, priority desc, seq) order), so its cost does not grow with the backlog. On
PostgreSQL it adds ``FOR UPDATE SKIP LOCKED`` so concurrent claimers take different rows.
Ordered lines need no probe here: a message behind a live predecessor is ``blocked``
and simply is not in the index. A paused queue is not claimed from at all, and a queue
with a rate or in-flight limit gets a budget subquery in place of the LIMIT parameter
(``limits``); a queue with neither runs exactly the statement above.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import InvalidArgumentError
from . import core, limits, wakeup
from .clock import from_ms, now_ms
from .core import QueueRow
from .dialects import Dialect
from .received import Received
from .types import Mode

# A long-poll's fallback: between wake-ups (a send in this process, or NOTIFY) it polls
# after 10 ms, doubling up to half a second.
POLL_FIRST_S = 0.01
POLL_MAX_S = 0.5

_claim_sql: dict[tuple[str, bool, str], str] = {}


def _claim_statement(dialect: Dialect, delete: bool, limit: str = "%s") -> str:
    """The claim. ``limit`` is the SQL of its LIMIT: a parameter, or for a queue with a
    rate or in-flight limit the budget subquery of ``limits.budget``."""
    key = (dialect.vendor, delete, limit)
    sql = _claim_sql.get(key)
    if sql is None:
        pick = (
            f"SELECT seq FROM mqlite_message {dialect.index_hint('mqlite_msg_claim')}"
            " WHERE queue_id = %s AND state = 'active' AND blocked = 0"
            " AND (expires_at IS NULL OR expires_at > %s)"
            f" ORDER BY priority DESC, seq LIMIT {limit} {dialect.lock_suffix()}"
        )
        if delete:
            sql = (
                f"DELETE FROM mqlite_message WHERE seq IN ({pick}) "
                f"RETURNING {core.MESSAGE_COLUMNS.replace('delivery_count', 'delivery_count + 1')}"
                ", order_key"
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


def receive(
    queue: str,
    *,
    max_messages: int = 1,
    wait: float | dt.timedelta = 0,
    lock_duration: float | dt.timedelta | None = None,
    mode: str = "peek_lock",
    attempt_id: str | None = None,
    worker_id: int | None = None,
    using: str | None = None,
) -> list[Received]:
    """Claim up to ``max_messages`` (≤ 256) messages in one transaction.

    ``wait`` long-polls up to that many seconds (capped at 20) and returns as soon as a
    claim finds something. No connection is held open between polls.
    """
    core.check_int(max_messages, "max_messages", 1, core.MAX_RECEIVE)
    wait_ms = min(core.duration_ms(wait, "wait"), int(core.MAX_WAIT_S * 1000))
    lock_ms = core.optional_lock_ms(lock_duration)
    try:
        mode_ = Mode(mode)
    except ValueError:
        raise InvalidArgumentError("mode must be 'peek_lock' or 'receive_and_delete'") from None
    attempt = core.check_str(attempt_id, "attempt_id")
    core.check_worker_id(worker_id)
    alias = core.alias_of(using, queue)
    deadline = time.monotonic() + wait_ms / 1000
    delay = POLL_FIRST_S
    while True:
        got = _receive_once(alias, queue, max_messages, lock_ms, mode_, attempt, worker_id)
        remaining = deadline - time.monotonic()
        if got or remaining <= 0:
            return got
        # Sleep until woken by a send in this process (or NOTIFY), or a bounded back-off.
        wakeup.wait(queue, min(delay, remaining))
        delay = min(delay * 2, POLL_MAX_S)


def _receive_once(
    alias: str,
    queue: str,
    max_messages: int,
    lock_ms: int | None,
    mode: Mode,
    attempt_id: str | None,
    worker_id: int | None,
) -> list[Received]:
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        if attempt_id is not None:
            replay = _replay_attempt(cursor, dialect, q, attempt_id, now, alias)
            if replay is not None:
                return replay
        if q.paused:
            return []
        promote_due(cursor, dialect, q.id, now)
        delete = mode is Mode.RECEIVE_AND_DELETE
        limit: str = "%s"
        budget: list[int] = [max_messages]
        if q.limited:
            limit, budget = limits.budget(cursor, dialect, q, now, max_messages)
        sql = _claim_statement(dialect, delete, limit)
        if delete:
            cursor.execute(sql, [q.id, now, *budget])
        else:
            until = now + (lock_ms if lock_ms is not None else q.lock_duration_ms)
            cursor.execute(sql, [until, worker_id, now, q.id, now, *budget])
        rows = sorted(cursor.fetchall(), key=lambda r: (-r[9], r[0]))
        if not rows:
            return []
        limits.spend(cursor, dialect, q, now, len(rows))
        if worker_id is not None and not delete:
            core.touch_worker(cursor, worker_id, now)
        if delete:
            core.release_lines(cursor, dialect, q.id, [r[14] for r in rows])
            core.bump_totals(cursor, dialect, q.id, delivered=len(rows), completed=len(rows))
        else:
            core.bump_totals(cursor, dialect, q.id, delivered=len(rows))
        got = [to_received(q, r, dialect, alias, worker_id) for r in rows]
        if attempt_id is not None:
            _record_attempt(cursor, q, attempt_id, got, now)
        return got


def _record_attempt(
    cursor: CursorWrapper, q: QueueRow, attempt_id: str, got: list[Received], now: int
) -> None:
    items = [[m.seq, m.lock_token] for m in got]
    cursor.execute(
        "INSERT INTO mqlite_attempt (queue_id, attempt_id, items, expires_at) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (queue_id, attempt_id) DO UPDATE SET "
        "items = excluded.items, expires_at = excluded.expires_at",
        [q.id, attempt_id, json.dumps(items), now + int(mqlite_settings.RECEIPT_TTL * 1000)],
    )


def _replay_attempt(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    attempt_id: str,
    now: int,
    alias: str,
) -> list[Received] | None:
    """The batch an earlier call with this attempt_id claimed, if it is still live."""
    cursor.execute(
        "SELECT items FROM mqlite_attempt WHERE queue_id = %s AND attempt_id = %s "
        "AND expires_at > %s",
        [q.id, attempt_id, now],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    items = json.loads(row[0])
    if not items:
        return []
    by_seq = {seq: token for seq, token in items}
    cursor.execute(
        f"SELECT {core.MESSAGE_COLUMNS} FROM mqlite_message WHERE queue_id = %s "
        f"AND seq IN ({core.placeholders(len(by_seq))})",
        [q.id, *by_seq],
    )
    out = []
    for r in cursor.fetchall():
        m = to_received(q, r, dialect, alias)
        if m.lock_token is not None and m.lock_token == by_seq.get(m.seq):
            out.append(m)
    out.sort(key=lambda m: (-m.priority, m.seq))
    return out


def receive_deferred(
    queue: str,
    seqs: Sequence[int],
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
) -> list[Received]:
    """Claim deferred messages by seq. Seqs that are not deferred are skipped."""
    if not isinstance(seqs, list | tuple) or len(seqs) > core.MAX_RECEIVE:
        raise InvalidArgumentError(f"seqs must be a list of at most {core.MAX_RECEIVE} seqs")
    wanted = sorted({core.check_seq(s) for s in seqs})
    lock_ms = core.optional_lock_ms(lock_duration)
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
        cursor.execute(
            "UPDATE mqlite_message SET state = 'locked', "
            f"lock_token = {dialect.new_token_sql()}, locked_until = %s, visible_at = %s, "
            "delivery_count = delivery_count + 1 WHERE seq IN ("
            " SELECT seq FROM mqlite_message WHERE queue_id = %s AND state = 'deferred' "
            f" AND seq IN ({core.placeholders(len(wanted))}) "
            " AND (expires_at IS NULL OR expires_at > %s) "
            f" ORDER BY seq LIMIT {limit} {dialect.lock_suffix()}) "
            f"RETURNING {core.MESSAGE_COLUMNS}",
            [until, now, q.id, *wanted, now, *budget],
        )
        rows = sorted(cursor.fetchall(), key=lambda r: r[0])
        limits.spend(cursor, dialect, q, now, len(rows))
        core.bump_totals(cursor, dialect, q.id, delivered=len(rows))
        return [to_received(q, r, dialect, alias) for r in rows]
