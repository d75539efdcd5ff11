"""A message as a row to insert. ``admission.admit`` builds the ``Row`` from an
``OutMessage`` with every check that needs no queue (the one-statement send runs it
before the database has been asked anything); ``for_queue`` applies the queue's rules
(group required, default TTL, dedup keys, ordered lines)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..exceptions import GroupRequiredError
from . import lines
from .rows import QueueRow
from .types import Ordering


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
    #: At most one live message of the queue holds it (None: no key).
    unique_key: str | None = None
    #: What the send does when a live message holds ``unique_key`` (``admission.ON_CONFLICT``).
    on_conflict: str = "skip"
    #: The window the key is held in: ``"live"`` or ``"pending"`` (``unique.WINDOWS``).
    unique_while: str = "live"
    dedup_key: str | None = None
    body_hash: str | None = None
    order_key: str | None = None
    first_in_line: bool = True
    seq: int = 0


def for_queue(row: Row, queue: QueueRow) -> Row:
    """Apply ``queue``'s rules to a validated row (in place; returned for chaining)."""
    if queue.ordering == Ordering.GROUP_FIFO and row.group_id is None:
        raise GroupRequiredError(f"queue {queue.name!r} is group_fifo: group_id is required")
    if row.ttl_ms is None and queue.default_ttl_ms is not None:
        row.expires_at = row.visible_at + queue.default_ttl_ms
    if queue.dedup_window_ms > 0 and (row.message_id is not None or queue.content_dedup):
        row.body_hash = hashlib.sha256(row.body).hexdigest()
        row.dedup_key = row.message_id if row.message_id is not None else f"sha256:{row.body_hash}"
    row.order_key = lines.order_key_for(queue, row.group_id)
    return row
