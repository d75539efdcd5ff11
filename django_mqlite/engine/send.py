"""Producing: ``send``, ``send_batch``, ``cancel_scheduled``.

A send is an INSERT in the caller's transaction when one is open (the outbox): nothing
is claimable until it commits, and a rollback leaves nothing behind.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import (
    DedupConflictError,
    GroupRequiredError,
    InvalidArgumentError,
    MessageTooLargeError,
)
from . import core, wakeup
from .clock import now_ms, to_ms
from .core import QueueRow
from .dialects import Dialect
from .types import Ordering, OutMessage

TEXT_TYPE = "text/plain; charset=utf-8"
JSON_TYPE = "application/json"
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
        f" WHERE queue_id = %s AND order_key = %s AND state IN {core.LIVE_SQL}"
        " ORDER BY queue_id, order_key, blocked, seq LIMIT 1) IS NULL THEN 0 ELSE 1 END"
    )


@dataclass
class _Row:
    """One validated message, ready to insert."""

    body: bytes
    content_type: str | None
    message_id: str | None
    group_id: str | None
    subject: str | None
    properties: str | None
    correlation_id: str | None
    reply_to: str | None
    priority: int
    visible_at: int
    expires_at: int | None
    dedup_key: str | None
    body_hash: str | None
    order_key: str | None = None
    first_in_line: bool = True
    seq: int = 0


#: Properties travel with every delivery; bound them like a body's other fields.
MAX_PROPERTIES_BYTES = 64 * 1024


def encode_body(body: Any, content_type: str | None) -> tuple[bytes, str | None]:
    """bytes as given; str as UTF-8 text; anything else as JSON."""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body), content_type
    if isinstance(body, str):
        return body.encode("utf-8"), content_type or TEXT_TYPE
    try:
        data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"body is not bytes, str or JSON-serializable: {exc}") from exc
    return data, content_type or JSON_TYPE


def _prepare(queue: QueueRow, msg: OutMessage, now: int) -> _Row:
    body, content_type = encode_body(msg.body, core.check_str(msg.content_type, "content_type"))
    cap = mqlite_settings.MAX_BODY_BYTES
    if len(body) > cap:
        raise MessageTooLargeError(f"body is {len(body)} bytes; the cap is {cap}")
    group_id = core.check_str(msg.group_id, "group_id")
    if queue.ordering == Ordering.GROUP_FIFO and group_id is None:
        raise GroupRequiredError(f"queue {queue.name!r} is group_fifo: group_id is required")
    props = msg.properties
    if props is not None and not isinstance(props, dict):
        raise InvalidArgumentError("properties must be a dict")
    try:
        props_json = None if props is None else core.dumps(props)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"properties are not JSON-serializable: {exc}") from exc
    if props_json is not None and len(props_json) > MAX_PROPERTIES_BYTES:
        raise InvalidArgumentError(f"properties are larger than {MAX_PROPERTIES_BYTES} bytes")
    priority = core.check_int(msg.priority, "priority", *core.PRIORITY_RANGE)
    if msg.delay is not None and msg.scheduled_at is not None:
        raise InvalidArgumentError("pass delay or scheduled_at, not both")
    visible_at = now
    if msg.delay is not None:
        visible_at = now + core.duration_ms(msg.delay, "delay")
    elif msg.scheduled_at is not None:
        if not isinstance(msg.scheduled_at, dt.datetime) or msg.scheduled_at.tzinfo is None:
            raise InvalidArgumentError("scheduled_at must be an aware datetime")
        visible_at = max(now, to_ms(msg.scheduled_at))
        if visible_at - now > core.MAX_DURATION_S * 1000:
            raise InvalidArgumentError("scheduled_at is too far ahead (at most ten years)")
    ttl_ms = (
        core.optional_duration_ms(msg.ttl, "ttl") if msg.ttl is not None else queue.default_ttl_ms
    )
    message_id = core.check_str(msg.message_id, "message_id")
    dedup_key = body_hash = None
    if queue.dedup_window_ms > 0 and (message_id is not None or queue.content_dedup):
        body_hash = hashlib.sha256(body).hexdigest()
        dedup_key = message_id if message_id is not None else f"sha256:{body_hash}"
    return _Row(
        body=body,
        content_type=content_type,
        message_id=message_id,
        group_id=group_id,
        subject=core.check_str(msg.subject, "subject", 256),
        properties=props_json,
        correlation_id=core.check_str(msg.correlation_id, "correlation_id"),
        reply_to=core.check_str(msg.reply_to, "reply_to", 256),
        priority=priority,
        visible_at=visible_at,
        expires_at=None if ttl_ms is None else visible_at + ttl_ms,
        dedup_key=dedup_key,
        body_hash=body_hash,
        order_key=core.order_key_for(queue, group_id),
    )


def send(queue: str, body: Any, *, using: str | None = None, **options: Any) -> int:
    """Send one message; returns its seq (the original seq for a deduplicated resend)."""
    seqs = _send(queue, [OutMessage(body, **options)], using=using, single=True)
    return seqs[0]


def send_batch(
    queue: str, messages: Sequence[OutMessage], *, using: str | None = None
) -> list[int]:
    """Send many messages in one transaction. A dedup-conflict slot returns seq 0."""
    if not isinstance(messages, list | tuple):
        raise InvalidArgumentError("messages must be a list of OutMessage")
    for m in messages:
        if not isinstance(m, OutMessage):
            raise InvalidArgumentError("messages must be a list of OutMessage")
    return _send(queue, messages, using=using, single=False)


def _send(
    queue: str, messages: Sequence[OutMessage], *, using: str | None, single: bool
) -> list[int]:
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        rows = [_prepare(q, m, now) for m in messages]
        if not rows:
            return []
        claims: dict[int, int] = {}
        owners: dict[str, _Row] = {}  # dedup keys this batch inserts, by key
        copies: list[tuple[_Row, _Row]] = []  # (repeat, original) within this batch
        for r in rows:
            if r.dedup_key is None:
                continue
            owner = owners.get(r.dedup_key)
            if owner is None:
                claims[id(r)] = _claim_dedup(cursor, q, r, now, single)
                if claims[id(r)] == 0:
                    owners[r.dedup_key] = r
            elif owner.body_hash == r.body_hash:
                claims[id(r)] = -2
                copies.append((r, owner))
            else:
                claims[id(r)] = -1
        fresh = [r for r in rows if claims.get(id(r), 0) == 0]
        _mark_lines(cursor, dialect, q, fresh)
        _insert(cursor, dialect, q, fresh, now)
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
            core.bump_totals(cursor, dialect, q.id, enqueued=len(fresh))
            notify = dialect.notify_sql()
            if notify is not None:
                # Delivered by the database at commit, never for a rolled-back send.
                cursor.execute(notify, [q.name])
            transaction.on_commit(lambda: wakeup.notify(q.name), using=alias)
        return [r.seq for r in rows]


def _claim_dedup(cursor: CursorWrapper, q: QueueRow, r: _Row, now: int, single: bool) -> int:
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


def _mark_lines(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[_Row]) -> None:
    seen: set[str] = set()
    for r in rows:
        if r.order_key is not None:
            r.first_in_line = r.order_key not in seen
            seen.add(r.order_key)
    core.lock_lines(cursor, dialect, q.id, seen)


def _insert(
    cursor: CursorWrapper, dialect: Dialect, q: QueueRow, rows: list[_Row], now: int
) -> None:
    for chunk in core.chunks(rows, INSERT_CHUNK):
        values: list[str] = []
        params: list[Any] = []
        for r in chunk:
            if r.order_key is None:
                blocked_sql = "0"
            elif r.first_in_line:
                blocked_sql = _blocked_sql(dialect)
                params_blocked = [q.id, r.order_key]
            else:
                blocked_sql = "1"
            state = "scheduled" if r.visible_at > now else "active"
            values.append(
                f"(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {blocked_sql}, %s, "
                f"{dialect.json_param()}, %s, %s, %s, 0)"
            )
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
                params += params_blocked
            params += [r.subject, r.properties, r.correlation_id, r.reply_to, r.content_type]
        cursor.execute(
            f"INSERT INTO mqlite_message ({_INSERT_COLUMNS}) VALUES {', '.join(values)} "
            "RETURNING seq",
            params,
        )
        # Sequence values are drawn in VALUES order; RETURNING order is not promised.
        seqs = sorted(row[0] for row in cursor.fetchall())
        for r, seq in zip(chunk, seqs, strict=True):
            r.seq = seq


def cancel_scheduled(queue: str, seq: int, *, using: str | None = None) -> bool:
    """Remove a scheduled message that was never delivered. False if there was none."""
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    core.check_seq(seq)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        cursor.execute(
            "DELETE FROM mqlite_message WHERE seq = %s AND queue_id = %s "
            "AND state = 'scheduled' AND delivery_count = 0 RETURNING order_key",
            [seq, q.id],
        )
        row = cursor.fetchone()
        if row is None:
            return False
        core.release_lines(cursor, dialect, q.id, [row[0]])
        return True
