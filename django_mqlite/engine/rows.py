"""The rows the engine reads back, by name: a queue (``QueueRow``, loaded by
``load_queue``) and the columns every message value is built from (``MessageRow``,
selected as ``MESSAGE_COLUMNS``, turned into a value's fields by ``message_fields``).

A row is read by name: a statement selects the fields of a row dataclass
(``columns``) and each fetched tuple becomes that dataclass, so no caller indexes a
row by position. A statement that returns more extends the dataclass (``claim.ClaimedRow``,
``inspect.PeekRow``). The rows of the claim and settle paths are ``slots`` dataclasses
but not frozen: a frozen one's ``__init__`` sets each field through
``object.__setattr__``, about eight times the cost, once per claimed row."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..exceptions import QueueNotFoundError
from .arguments import check_queue_name
from .clock import from_ms
from .dialects import Dialect
from .types import Ordering, Queue


def columns(row_type: type) -> str:
    """The SELECT or RETURNING list of a row dataclass: its fields, in order. A statement
    that selects ``columns(T)`` reads each row as ``T(*row)``, and then by name."""
    return ", ".join(f.name for f in fields(row_type))


@dataclass(slots=True)
class MessageRow:
    """The columns every message value is built from (``message_fields``), as a
    statement selecting ``MESSAGE_COLUMNS`` returns them."""

    seq: int
    body: bytes | memoryview
    message_id: str
    group_id: str | None
    subject: str | None
    properties: Any
    correlation_id: str | None
    reply_to: str | None
    content_type: str | None
    priority: int
    delivery_count: int
    enqueued_at: int
    lock_token: str | None
    locked_until: int | None


MESSAGE_COLUMNS = columns(MessageRow)


def message_fields(queue: str, row: MessageRow, dialect: Dialect) -> dict[str, Any]:
    """The fields every message value shares (all of ``MessageRow`` but the lease)."""
    return {
        "queue": queue,
        "seq": row.seq,
        "body": bytes(row.body),
        "message_id": row.message_id,
        "group_id": row.group_id,
        "subject": row.subject,
        "properties": dialect.load_json(row.properties) or {},
        "correlation_id": row.correlation_id,
        "reply_to": row.reply_to,
        "content_type": row.content_type,
        "priority": row.priority,
        "delivery_count": row.delivery_count,
        "enqueued_at": from_ms(row.enqueued_at),
    }


@dataclass(frozen=True)
class QueueRow:
    """A queue as the engine uses it: its id and settings in milliseconds."""

    id: int
    name: str
    ordering: str
    lock_duration_ms: int
    max_delivery_count: int
    default_ttl_ms: int | None
    dead_letter_on_expire: bool
    dedup_window_ms: int
    content_dedup: bool
    dlq_max_age_ms: int | None
    dlq_max_count: int | None
    dlq_max_bytes: int | None
    keep_results_ms: int | None
    created_at: int
    forward_dead_letters_to: str | None
    paused: bool
    rate_limit_milli: int | None
    max_in_flight: int | None
    max_snoozes: int

    @property
    def limited(self) -> bool:
        """Claims from this queue must count against a rate or in-flight limit."""
        return self.rate_limit_milli is not None or self.max_in_flight is not None

    def public(self) -> Queue:
        return Queue(
            name=self.name,
            ordering=Ordering(self.ordering),
            lock_duration=self.lock_duration_ms / 1000,
            max_delivery_count=self.max_delivery_count,
            default_ttl=_s(self.default_ttl_ms),
            dead_letter_on_expire=bool(self.dead_letter_on_expire),
            dedup_window=self.dedup_window_ms / 1000,
            content_dedup=bool(self.content_dedup),
            dlq_max_age=_s(self.dlq_max_age_ms),
            dlq_max_count=self.dlq_max_count,
            dlq_max_bytes=self.dlq_max_bytes,
            keep_results=_s(self.keep_results_ms),
            created_at=from_ms(self.created_at),
            forward_dead_letters_to=self.forward_dead_letters_to,
            paused=bool(self.paused),
            rate_limit=None if self.rate_limit_milli is None else self.rate_limit_milli / 1000,
            max_in_flight=self.max_in_flight,
            max_snoozes=self.max_snoozes,
        )


QUEUE_COLUMNS = columns(QueueRow)


@dataclass(slots=True)
class ReleasedRow:
    """A message a statement has just taken out of its line (deleted, cancelled, or
    dead-lettered where it stood): the line to release and the batch to count it in."""

    order_key: str | None
    batch_id: int | None


RELEASED_COLUMNS = columns(ReleasedRow)


@dataclass(slots=True)
class MovedRow:
    """A dead letter ``dead_letters.move_rows`` has just made active again."""

    seq: int
    order_key: str | None
    batch_id: int | None


MOVED_COLUMNS = columns(MovedRow)


@dataclass(slots=True)
class ReclaimedRow:
    """A locked message the reclaim (``maintenance.reclaim_sql``) has just returned to
    ``active``, or dead-lettered at its last allowed delivery (``state`` says which)."""

    queue_id: int
    state: str
    order_key: str | None
    seq: int
    batch_id: int | None


RECLAIMED_COLUMNS = columns(ReclaimedRow)


@dataclass(slots=True)
class ExpiredRow:
    """A message the TTL pass (``maintenance.expire_ttl``) has just dead-lettered or
    removed."""

    queue_id: int
    order_key: str | None
    seq: int
    batch_id: int | None


EXPIRED_COLUMNS = columns(ExpiredRow)


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def load_queue(cursor: CursorWrapper, name: str) -> QueueRow:
    check_queue_name(name)
    cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s", [name])
    row = cursor.fetchone()
    if row is None:
        raise QueueNotFoundError(f"queue {name!r} does not exist")
    return QueueRow(*row)
