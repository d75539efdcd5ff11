"""Turning an ``OutMessage`` into a row to insert: the body's encoding and every check
of a message's fields. ``validate`` needs no queue (the one-statement send runs it
before the database has been asked anything); ``for_queue`` applies the queue's rules
(group required, default TTL, dedup keys, ordered lines)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..conf import mqlite_settings
from ..exceptions import GroupRequiredError, InvalidArgumentError, MessageTooLargeError
from . import core
from .clock import to_ms
from .core import QueueRow
from .types import Ordering, OutMessage

TEXT_TYPE = "text/plain; charset=utf-8"
JSON_TYPE = "application/json"


@dataclass
class Row:
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
    #: The message's own TTL in ms (None: the queue's default applies).
    ttl_ms: int | None
    expires_at: int | None = None
    dedup_key: str | None = None
    body_hash: str | None = None
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


def validate(msg: OutMessage, now: int) -> Row:
    """Every check that does not depend on the queue."""
    body, content_type = encode_body(msg.body, core.check_str(msg.content_type, "content_type"))
    cap = mqlite_settings.MAX_BODY_BYTES
    if len(body) > cap:
        raise MessageTooLargeError(f"body is {len(body)} bytes; the cap is {cap}")
    group_id = core.check_str(msg.group_id, "group_id")
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
    ttl_ms = core.optional_duration_ms(msg.ttl, "ttl") if msg.ttl is not None else None
    return Row(
        body=body,
        content_type=content_type,
        message_id=core.check_str(msg.message_id, "message_id"),
        group_id=group_id,
        subject=core.check_str(msg.subject, "subject", 256),
        properties=props_json,
        correlation_id=core.check_str(msg.correlation_id, "correlation_id"),
        reply_to=core.check_str(msg.reply_to, "reply_to", 256),
        priority=priority,
        visible_at=visible_at,
        ttl_ms=ttl_ms,
        expires_at=None if ttl_ms is None else visible_at + ttl_ms,
    )


def for_queue(row: Row, queue: QueueRow) -> Row:
    """Apply ``queue``'s rules to a validated row (in place; returned for chaining)."""
    if queue.ordering == Ordering.GROUP_FIFO and row.group_id is None:
        raise GroupRequiredError(f"queue {queue.name!r} is group_fifo: group_id is required")
    if row.ttl_ms is None and queue.default_ttl_ms is not None:
        row.expires_at = row.visible_at + queue.default_ttl_ms
    if queue.dedup_window_ms > 0 and (row.message_id is not None or queue.content_dedup):
        row.body_hash = hashlib.sha256(row.body).hexdigest()
        row.dedup_key = row.message_id if row.message_id is not None else f"sha256:{row.body_hash}"
    row.order_key = core.order_key_for(queue, row.group_id)
    return row


def prepare(queue: QueueRow, msg: OutMessage, now: int) -> Row:
    return for_queue(validate(msg, now), queue)
