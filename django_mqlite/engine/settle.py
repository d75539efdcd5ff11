"""Settling a claimed message: complete, abandon, reject, defer, renew (and batches).

Each settlement is one statement fenced on the current lock token and a live lease
(``locked_until > now``; equality at the deadline is already expired). A successful
complete/abandon/reject/defer writes a receipt in the same transaction, keyed by the
whole request, so an exact retry of a settlement whose reply was lost succeeds instead
of failing with ``LockLostError``. See ``core`` for the rule every transition follows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import InvalidArgumentError, LockLostError
from . import core
from .clock import from_ms, now_ms
from .core import QueueRow
from .dialects import Dialect
from .redrive import forward
from .types import Completion

FENCE = "seq = %s AND queue_id = %s AND lock_token = %s AND state = 'locked' AND locked_until > %s"
MAX_RENEW_BATCH = 512
MAX_COMPLETE_BATCH = 1024
MAX_REASON = 128
MAX_DESCRIPTION = 4096
MAX_ERROR = 64 * 1024
DEAD_LETTER_EXHAUSTED = "MaxDeliveryCountExceeded"


def _receipt_ttl_ms() -> int:
    return int(float(mqlite_settings.RECEIPT_TTL) * 1000)


def _receipt_args(queue_id: int, args: str) -> str:
    # The queue is part of what a replay must repeat: a receipt never answers for a
    # settlement attempted through another queue.
    return f"q{queue_id}|{args}"


def _write_receipts(
    cursor: CursorWrapper,
    queue_id: int,
    items: Sequence[tuple[int, str]],
    verb: str,
    args: str,
    now: int,
) -> None:
    if not items:
        return
    args = _receipt_args(queue_id, args)
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(items))
    params: list[Any] = []
    expires = now + _receipt_ttl_ms()
    for seq, token in items:
        params += [seq, token, verb, args, expires]
    cursor.execute(
        f"INSERT INTO mqlite_receipt (seq, lock_token, verb, args, expires_at) VALUES {values}",
        params,
    )


def _replayed(
    cursor: CursorWrapper, queue_id: int, seq: int, token: str, verb: str, args: str, now: int
) -> bool:
    args = _receipt_args(queue_id, args)
    cursor.execute(
        "SELECT 1 FROM mqlite_receipt WHERE seq = %s AND lock_token = %s AND verb = %s "
        "AND args = %s AND expires_at > %s",
        [seq, token, verb, args, now],
    )
    return cursor.fetchone() is not None


def _settle(
    queue: str,
    seq: int,
    lock_token: str,
    verb: str,
    args: str,
    using: str | None,
    apply: Any,
) -> Any:
    """Run ``apply(cursor, dialect, queue_row, now)``; it returns None when it matched no
    row, and then an exact replay succeeds and anything else is LockLostError."""
    core.check_seq(seq)
    core.check_token(lock_token)
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        result = apply(cursor, dialect, q, now)
        if result is None:
            if _replayed(cursor, q.id, seq, lock_token, verb, args, now):
                return True
            raise LockLostError(
                f"message {seq} on {queue!r}: lock token is not current or its lease ran out"
            )
        _write_receipts(cursor, q.id, [(seq, lock_token)], verb, args, now)
        return result


def complete(queue: str, seq: int, lock_token: str, *, using: str | None = None) -> None:
    """Remove the message (or keep it as ``completed`` when the queue keeps results)."""
    complete_with_result(queue, seq, lock_token, None, using=using)


def complete_with_result(
    queue: str,
    seq: int,
    lock_token: str,
    result: Any,
    *,
    attempt: Any = None,
    using: str | None = None,
) -> None:
    """Complete, keeping ``result`` (JSON) when the queue keeps results. ``attempt`` (JSON,
    not part of the request's identity) is appended to the row's attempt history in the
    same statement."""
    result_json = core.dumps_arg(result, "result")
    attempt_json = core.dumps_arg(attempt, "attempt")

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Any:
        done = _complete_rows(
            cursor, dialect, q, [(seq, lock_token)], now, result_json, attempt_json
        )
        return done or None

    _settle(queue, seq, lock_token, "complete", "", using, apply)


def _complete_rows(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    items: Sequence[tuple[int, str]],
    now: int,
    result_json: str | None = None,
    attempt_json: str | None = None,
) -> list[int]:
    pairs = ", ".join(["(%s, %s)"] * len(items))
    flat = [v for item in items for v in item]
    where = (
        f"queue_id = %s AND state = 'locked' AND locked_until > %s "
        f"AND (seq, lock_token) IN (VALUES {pairs})"
    )
    if len(items) == 1:
        where = (
            "queue_id = %s AND state = 'locked' AND locked_until > %s "
            "AND seq = %s AND lock_token = %s"
        )
    if q.keep_results_ms is not None:
        history, history_params = _history(dialect, attempt_json)
        cursor.execute(
            "UPDATE mqlite_message SET state = 'completed', completed_at = %s, lock_token = NULL, "
            f"locked_until = NULL, locked_by = NULL, result = {dialect.json_param()}{history} "
            f"WHERE {where} RETURNING seq, order_key",
            [now, result_json, *history_params, q.id, now, *flat],
        )
    else:
        cursor.execute(
            f"DELETE FROM mqlite_message WHERE {where} RETURNING seq, order_key",
            [q.id, now, *flat],
        )
    rows = cursor.fetchall()
    if rows:
        core.release_lines(cursor, dialect, q.id, [r[1] for r in rows])
        core.bump_totals(cursor, dialect, q.id, completed=len(rows))
    return [r[0] for r in rows]


def _complete_kept(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    kept: Sequence[tuple[tuple[int, str], Completion]],
    now: int,
) -> list[int]:
    """Complete many rows of a queue that keeps results, each with its own result and
    attempt record, in one statement (an UPDATE joined to a VALUES list)."""
    values = ", ".join([f"(%s, %s, {dialect.json_param()}, {dialect.json_param()})"] * len(kept))
    params: list[Any] = []
    for (seq, token), c in kept:
        params += [
            seq,
            token,
            c._result_json if c._result_json is not None else core.dumps_arg(c.result, "result"),
            core.dumps_arg(c.attempt, "attempt"),
        ]
    append = dialect.json_append_expr("mqlite_message.attempts", "v.attempt")
    cursor.execute(
        f"WITH v (seq, token, result, attempt) AS (VALUES {values}) "
        "UPDATE mqlite_message SET state = 'completed', completed_at = %s, "
        "lock_token = NULL, locked_until = NULL, locked_by = NULL, result = v.result, "
        f"attempts = CASE WHEN v.attempt IS NULL THEN mqlite_message.attempts ELSE {append} END "
        "FROM v WHERE mqlite_message.seq = v.seq AND mqlite_message.lock_token = v.token "
        "AND mqlite_message.queue_id = %s AND mqlite_message.state = 'locked' "
        "AND mqlite_message.locked_until > %s "
        "RETURNING mqlite_message.seq, mqlite_message.order_key",
        [*params, now, q.id, now],
    )
    rows = cursor.fetchall()
    if rows:
        core.release_lines(cursor, dialect, q.id, [r[1] for r in rows])
        core.bump_totals(cursor, dialect, q.id, completed=len(rows))
    return [r[0] for r in rows]


def _history(dialect: Dialect, attempt_json: str | None) -> tuple[str, list[Any]]:
    """A SET fragment appending one attempt to the row's history, and its parameter."""
    if attempt_json is None:
        return "", []
    return f", attempts = {dialect.json_append_sql('attempts')}", [attempt_json]


def complete_batch(
    queue: str,
    items: Sequence[tuple[int, str]],
    *,
    completions: Sequence[Completion | None] | None = None,
    using: str | None = None,
) -> list[bool]:
    """Complete many in one transaction; a stale item is False (an exact replay is True),
    never an error. ``completions`` (parallel to ``items``) gives an item a result and
    an attempt record to keep, like ``complete_with_result``; a result or attempt JSON
    cannot hold (NaN, a set, dict keys of mixed types) is an ``InvalidArgumentError``
    and nothing is written."""
    items = _check_items(items, MAX_COMPLETE_BATCH)
    if not items:
        return []
    if completions is not None and len(completions) != len(items):
        raise InvalidArgumentError("completions must be parallel to items")
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        # Completions only matter where results are kept (elsewhere the row goes).
        extra = list(completions or []) if q.keep_results_ms is not None else []
        kept = [(items[k], c) for k, c in enumerate(extra) if c is not None]
        plain = [item for k, item in enumerate(items) if not (extra and extra[k])]
        done = set(_complete_rows(cursor, dialect, q, plain, now)) if plain else set()
        if kept:
            done.update(_complete_kept(cursor, dialect, q, kept, now))
        out = []
        for seq, token in items:
            ok = seq in done or _replayed(cursor, q.id, seq, token, "complete", "", now)
            out.append(ok)
        done_items = [i for i in items if i[0] in done]
        _write_receipts(cursor, q.id, done_items, "complete", "", now)
        return out


def _check_items(items: object, cap: int) -> list[tuple[int, str]]:
    if not isinstance(items, list | tuple) or len(items) > cap:
        raise InvalidArgumentError(f"items must be a list of at most {cap} (seq, lock_token)")
    out = []
    seen = set()
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise InvalidArgumentError("each item must be a (seq, lock_token) pair")
        pair = (core.check_seq(item[0]), core.check_token(item[1]))
        if pair[0] in seen:
            raise InvalidArgumentError(f"seq {pair[0]} appears twice")
        seen.add(pair[0])
        out.append(pair)
    return out


# Abandon: retry (now, or parked in scheduled until the delay ends) or, when this was
# the last allowed delivery, dead-letter. Parameters: max, visible, now, visible, max,
# max, now.
RETRY_OR_BURY = (
    "state = CASE WHEN delivery_count >= %s THEN 'dead_lettered' "
    "WHEN %s > %s THEN 'scheduled' ELSE 'active' END, "
    "visible_at = %s, lock_token = NULL, locked_until = NULL, locked_by = NULL, "
    "dead_letter_reason = CASE WHEN delivery_count >= %s "
    f"THEN '{DEAD_LETTER_EXHAUSTED}' ELSE dead_letter_reason END, "
    "dead_lettered_at = CASE WHEN delivery_count >= %s THEN %s ELSE dead_lettered_at END"
)


def abandon(
    queue: str,
    seq: int,
    lock_token: str,
    *,
    delay: float | dt.timedelta | None = None,
    error: str | None = None,
    attempt: Any = None,
    using: str | None = None,
) -> None:
    """Give the message back: active again, parked in scheduled for ``delay``, or
    dead-lettered when this was its last allowed delivery. ``error`` (not part of the
    request's identity) is kept as the message's last error."""
    delay_ms = 0 if delay is None else core.duration_ms(delay, "delay")
    if error is not None and not isinstance(error, str):
        raise InvalidArgumentError("error must be a string")

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Any:
        visible = now + delay_ms
        mx = q.max_delivery_count
        params: list[Any] = [mx, visible, now, visible, mx, mx, now]
        err_sql = ", last_error = %s" if error is not None else ""
        if error is not None:
            params.append(error[:MAX_ERROR])
        history, history_params = _history(dialect, core.dumps_arg(attempt, "attempt"))
        err_sql += history
        params += history_params
        cursor.execute(
            f"UPDATE mqlite_message SET {RETRY_OR_BURY}{err_sql} "
            f"WHERE {FENCE} RETURNING state, order_key",
            [*params, seq, q.id, lock_token, now],
        )
        row = cursor.fetchone()
        if row is None:
            return None
        if row[0] == "dead_lettered":
            core.release_lines(cursor, dialect, q.id, [row[1]])
            core.bump_totals(cursor, dialect, q.id, abandoned=1, exhausted=1, dead_lettered=1)
            forward(cursor, dialect, q, [seq])
        else:
            core.bump_totals(cursor, dialect, q.id, abandoned=1, retried=1)
        return True

    _settle(queue, seq, lock_token, "abandon", f"delay_ms={delay_ms}", using, apply)


def reject(
    queue: str,
    seq: int,
    lock_token: str,
    reason: str,
    description: str = "",
    *,
    error: str | None = None,
    attempt: Any = None,
    using: str | None = None,
) -> None:
    """Dead-letter the message at once with ``reason`` and ``description``."""
    if not isinstance(reason, str) or not reason or len(reason) > MAX_REASON:
        raise InvalidArgumentError(f"reason must be a non-empty string of at most {MAX_REASON}")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise InvalidArgumentError(f"description must be a string of at most {MAX_DESCRIPTION}")

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Any:
        history, history_params = _history(dialect, core.dumps_arg(attempt, "attempt"))
        cursor.execute(
            "UPDATE mqlite_message SET state = 'dead_lettered', lock_token = NULL, "
            "locked_until = NULL, locked_by = NULL, dead_letter_reason = %s, "
            "dead_letter_description = %s, dead_lettered_at = %s, "
            f"last_error = COALESCE(%s, last_error){history} WHERE {FENCE} RETURNING order_key",
            [
                reason,
                description,
                now,
                None if error is None else error[:MAX_ERROR],
                *history_params,
                seq,
                q.id,
                lock_token,
                now,
            ],
        )
        row = cursor.fetchone()
        if row is None:
            return None
        core.release_lines(cursor, dialect, q.id, [row[0]])
        core.bump_totals(cursor, dialect, q.id, rejected=1, dead_lettered=1)
        forward(cursor, dialect, q, [seq])
        return True

    args = core.dumps([reason, description])
    _settle(queue, seq, lock_token, "reject", args, using, apply)


def defer(queue: str, seq: int, lock_token: str, *, using: str | None = None) -> None:
    """Set the message aside; fetch it later by seq with ``receive_deferred``."""

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Any:
        cursor.execute(
            "UPDATE mqlite_message SET state = 'deferred', lock_token = NULL, "
            f"locked_until = NULL, locked_by = NULL WHERE {FENCE} RETURNING seq",
            [seq, q.id, lock_token, now],
        )
        return True if cursor.fetchone() else None

    _settle(queue, seq, lock_token, "defer", "", using, apply)


def _extend(dialect: Dialect) -> str:
    return dialect.greatest_sql("locked_until", "%s")


def renew(
    queue: str,
    seq: int,
    lock_token: str,
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
) -> dt.datetime:
    """Extend a live lease to now + lock duration (never shortens it; never revives an
    expired one). Returns the new ``locked_until``."""
    core.check_seq(seq)
    core.check_token(lock_token)
    lock_ms = core.optional_lock_ms(lock_duration)
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        until = now + (lock_ms if lock_ms is not None else q.lock_duration_ms)
        cursor.execute(
            f"UPDATE mqlite_message SET locked_until = {_extend(dialect)} "
            f"WHERE {FENCE} RETURNING locked_until",
            [until, seq, q.id, lock_token, now],
        )
        row = cursor.fetchone()
        if row is None:
            raise LockLostError(
                f"message {seq} on {queue!r}: lock token is not current or its lease ran out"
            )
        return from_ms(row[0])


def renew_batch(
    queue: str,
    items: Sequence[tuple[int, str]],
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
    worker_id: int | None = None,
) -> list[bool]:
    """Renew many live leases (at most 512); a stale item is False. ``worker_id`` (the
    worker holding them) has its heartbeat stamped in the same transaction."""
    items = _check_items(items, MAX_RENEW_BATCH)
    lock_ms = core.optional_lock_ms(lock_duration)
    core.check_worker_id(worker_id)
    if not items:
        return []
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        until = now + (lock_ms if lock_ms is not None else q.lock_duration_ms)
        pairs = ", ".join(["(%s, %s)"] * len(items))
        cursor.execute(
            f"UPDATE mqlite_message SET locked_until = {_extend(dialect)} "
            "WHERE queue_id = %s AND state = 'locked' AND locked_until > %s "
            f"AND (seq, lock_token) IN (VALUES {pairs}) RETURNING seq",
            [until, q.id, now, *(v for item in items for v in item)],
        )
        done = {r[0] for r in cursor.fetchall()}
        if done and worker_id is not None:
            core.touch_worker(cursor, worker_id, now)
        return [seq in done for seq, _ in items]


def release(
    queue: str, items: Sequence[tuple[int, str]], *, using: str | None = None
) -> list[bool]:
    """Hand claimed-but-unstarted messages back without burning an attempt.

    Each row goes back to ``active`` with its delivery count decremented (the claim that
    is undone had counted one), fenced on the lock token and a live lease like every
    settlement. A stale item is False. A worker uses this at shutdown for messages it
    claimed but never gave to a handler.
    """
    items = _check_items(items, MAX_COMPLETE_BATCH)
    if not items:
        return []
    alias = core.alias_of(using, queue)
    cursor, _ = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        pairs = ", ".join(["(%s, %s)"] * len(items))
        cursor.execute(
            "UPDATE mqlite_message SET state = 'active', lock_token = NULL, "
            "locked_until = NULL, locked_by = NULL, visible_at = %s, "
            "delivery_count = CASE WHEN delivery_count > 0 THEN delivery_count - 1 ELSE 0 END "
            "WHERE queue_id = %s AND state = 'locked' AND locked_until > %s "
            f"AND (seq, lock_token) IN (VALUES {pairs}) RETURNING seq",
            [now, q.id, now, *(v for item in items for v in item)],
        )
        done = {r[0] for r in cursor.fetchall()}
        return [seq in done for seq, _ in items]
