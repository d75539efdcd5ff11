"""Values the engine hands out and takes in."""

from __future__ import annotations

import datetime as dt
import enum
import json
from dataclasses import dataclass, field
from typing import Any

from ..exceptions import InvalidArgumentError
from .clock import from_ms


class State(enum.StrEnum):
    """A message's state; ``active``, ``locked``, ``deferred``, ``scheduled`` and
    ``waiting`` (for its dependencies, ``send(..., depends_on=...)``) are live."""

    ACTIVE = "active"
    LOCKED = "locked"
    DEFERRED = "deferred"
    SCHEDULED = "scheduled"
    COMPLETED = "completed"
    DEAD_LETTERED = "dead_lettered"
    WAITING = "waiting"


#: States in which a message still waits for (or is in) delivery; they hold their group's line.
LIVE_STATES = (State.ACTIVE, State.LOCKED, State.DEFERRED, State.SCHEDULED, State.WAITING)


class Ordering(enum.StrEnum):
    """A queue's ordering: ``standard`` (FIFO per group), ``group_fifo`` (a group is
    required) or ``strict_fifo`` (one message of the queue in flight, global FIFO)."""

    STANDARD = "standard"
    GROUP_FIFO = "group_fifo"
    STRICT_FIFO = "strict_fifo"


class Mode(enum.StrEnum):
    """How ``receive`` hands messages out: ``peek_lock`` (a lease and a lock token) or
    ``receive_and_delete`` (removed as they are handed out)."""

    PEEK_LOCK = "peek_lock"
    RECEIVE_AND_DELETE = "receive_and_delete"


@dataclass(frozen=True)
class Queue:
    """A queue's settings. Durations are seconds (floats); ``None`` means unset."""

    name: str
    ordering: Ordering
    lock_duration: float
    max_delivery_count: int
    default_ttl: float | None
    dead_letter_on_expire: bool
    dedup_window: float
    content_dedup: bool
    dlq_max_age: float | None
    dlq_max_count: int | None
    dlq_max_bytes: int | None
    keep_results: float | None
    created_at: dt.datetime
    forward_dead_letters_to: str | None = None
    #: Operator controls: a paused queue hands nothing out; the limits bound claims
    #: per second and messages locked at once, across every consumer (None: unlimited).
    paused: bool = False
    rate_limit: float | None = None
    max_in_flight: int | None = None
    #: How many snoozes of a message give their delivery back (``Received.snooze``).
    max_snoozes: int = 100


@dataclass
class OutMessage:
    """A message to send in a batch: the body plus the keywords of ``mq.send``."""

    body: Any
    message_id: str | None = None
    group_id: str | None = None
    subject: str | None = None
    properties: dict[str, Any] | None = None
    correlation_id: str | None = None
    reply_to: str | None = None
    content_type: str | None = None
    priority: int = 0
    delay: float | dt.timedelta | None = None
    scheduled_at: dt.datetime | None = None
    ttl: float | dt.timedelta | None = None
    #: At most one live message per (queue, unique_key); see ``send.py``.
    unique_key: str | None = None
    #: What a send whose ``unique_key`` is held does: ``"skip"`` (the default),
    #: ``"replace"`` or ``"debounce"``.
    on_conflict: str | None = None
    #: Messages (seqs, ``(queue, seq)`` pairs) and batches this one waits for: it is
    #: stored ``waiting`` until they all complete (``dependencies``).
    depends_on: list[Any] | None = None
    #: How long the message holds ``unique_key``: ``"live"`` (the default: until it is
    #: completed or dead-lettered) or ``"pending"`` (until it is first claimed).
    unique_while: str | None = None


@dataclass
class _MessageFields:
    queue: str
    seq: int
    body: bytes
    message_id: str | None
    group_id: str | None
    subject: str | None
    properties: dict[str, Any]
    correlation_id: str | None
    reply_to: str | None
    content_type: str | None
    priority: int
    delivery_count: int
    enqueued_at: dt.datetime

    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Completion:
    """What a batched completion stores besides removing the lease (see ``Received``)."""

    result: Any = None
    attempt: Any = None
    on_completed: Any = None  # called once the completion has committed
    #: Internal (the Tasks worker): ``result`` already encoded by ``canonical_json.dumps``, which
    #: it did to check the value, stored in its place unchecked.
    _result_json: str | None = field(default=None, repr=False, compare=False)
    #: The handler's last progress report not written yet (JSON text, ``running``): the
    #: completion writes it where the row is kept (a queue that keeps results).
    progress: str | None = field(default=None, repr=False, compare=False)


@dataclass
class Peeked(_MessageFields):
    """A message seen without locking it."""

    state: State = State.ACTIVE
    visible_at: dt.datetime | None = None
    expires_at: dt.datetime | None = None
    locked_until: dt.datetime | None = None
    dead_letter_reason: str | None = None
    dead_letter_description: str | None = None
    last_error: str | None = None
    #: Task control (``running``): the progress the handler last reported, its last
    #: checkpoint (JSON values, None for none), and when a cancel was requested.
    progress: Any = None
    checkpoint: Any = None
    cancel_requested_at: dt.datetime | None = None


TOTAL_NAMES = (
    "enqueued",
    "delivered",
    "completed",
    "abandoned",
    "reclaimed",
    "retried",
    "exhausted",
    "rejected",
    "expired",
    "dead_lettered",
    "redriven",
    "purged",
)


@dataclass
class QueueStats:
    """``mq.stats()``: exact ``counts`` by state (zeros included), the age in seconds of
    the oldest active message (None when none waits), and lifetime ``totals``."""

    queue: str
    counts: dict[str, int]
    oldest_active_age: float | None
    totals: dict[str, int]
    paused: bool = False
    rate_limit: float | None = None
    max_in_flight: int | None = None


def ms_or_none(ms: int | None) -> dt.datetime | None:
    return None if ms is None else from_ms(ms)


class Outcome(enum.StrEnum):
    """What a settlement did to one message (``Settled.outcome``)."""

    COMPLETED = "completed"
    #: Abandoned: active again at once.
    RETRIED = "retried"
    #: Snoozed: given back (parked until its delay ends) without using up a delivery.
    SNOOZED = "snoozed"
    #: Abandoned with a delay: parked in ``scheduled`` until it ends.
    SCHEDULED = "scheduled"
    #: Dead-lettered (rejected, or abandoned on its last allowed delivery) and kept here.
    DEAD_LETTERED = "dead_lettered"
    #: Dead-lettered and moved at once to the queue's ``forward_dead_letters_to``.
    FORWARDED = "forwarded"
    DEFERRED = "deferred"
    #: Released: given back without using up a delivery (a ``resumable`` handler at a
    #: worker's shutdown, ``running``).
    RELEASED = "released"
    RENEWED = "renewed"
    #: The token was not current or its lease had run out: nothing was done.
    STALE = "stale"
    #: An exact repeat of a settlement that already committed (its receipt answered).
    REPLAYED = "replayed"
    #: Told only by a lapsed settlement (``lapsed=True``): the message is no longer in its
    #: queue (purged, expired, moved, or settled by another token) and no settlement of
    #: this verb of it is on record; nothing was done.
    GONE = "gone"


@dataclass(frozen=True)
class Settled:
    """The answer of a settle verb for one item: what happened to message ``seq``.

    ``forwarded_to`` names the queue a forwarded dead letter moved to; ``locked_until``
    is the lease a renewal granted."""

    seq: int
    outcome: Outcome
    forwarded_to: str | None = None
    locked_until: dt.datetime | None = None
    #: A renewal's answer: a cancel of the message has been requested (``running``).
    cancel_requested: bool = False

    @property
    def ok(self) -> bool:
        """The settlement holds (it happened now, or it is an exact replay)."""
        return self.outcome not in (Outcome.STALE, Outcome.GONE)


@dataclass(frozen=True)
class Subscription:
    """A queue's subscription to a topic: the filter as given (None: every message)."""

    topic: str
    queue: str
    filter: dict[str, Any] | None
    created_at: dt.datetime
    #: A task subscription's task (its dotted path): each matching publish is enqueued
    #: as a call of it (``mq.subscribe_task``). None: copies of the message.
    task: str | None = None


@dataclass(frozen=True)
class Topic:
    """A topic and its subscriptions (in the order they were made)."""

    name: str
    created_at: dt.datetime
    subscriptions: list[Subscription]


@dataclass(frozen=True, init=False)
class Callback:
    """A message a batch enqueues when it finishes (``mq.batch(on_complete=...)``): a
    queue, a body and the keywords of ``mq.send`` (``scheduled_at`` aside: a callback's
    time is the batch's end, so ``delay`` is the way to put it later)."""

    queue: str
    message: OutMessage

    def __init__(self, queue: str, body: Any, **keywords: Any) -> None:
        try:
            message = OutMessage(body, **keywords)
        except TypeError as exc:
            raise InvalidArgumentError(f"Callback: {exc}") from None
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "message", message)


class BatchState(enum.StrEnum):
    """A batch's state: ``open`` (being created, seen only by the creating transaction),
    ``running`` (sealed, children pending) or ``finished`` (every child settled)."""

    OPEN = "open"
    RUNNING = "running"
    FINISHED = "finished"

    @classmethod
    def of(cls, *, sealed: bool, pending: int) -> BatchState:
        """The state of a batch with these counts (``pending``: children not settled)."""
        if not sealed:
            return cls.OPEN
        return cls.RUNNING if pending else cls.FINISHED


@dataclass(frozen=True)
class BatchInfo:
    """A batch's progress (``mq.get_batch``). ``failed`` counts dead letters of any
    reason; ``cancelled`` counts children removed without running (cancelled, purged
    while waiting, expired on a queue that does not dead-letter); ``callbacks`` maps
    each callback enqueued (``on_complete``, ``on_success``, ``on_failure``) to its seq."""

    id: int
    total: int
    pending: int
    completed: int
    failed: int
    cancelled: int
    state: BatchState
    created_at: dt.datetime
    finished_at: dt.datetime | None
    callbacks: dict[str, int]
    callback_error: str | None


@dataclass(frozen=True)
class BatchRef:
    """A batch named by its id, for ``depends_on`` where the ``mq.batch`` object is not
    at hand (an HTTP request, another process). ``using``: the database it lives on
    (None: the dependent message's)."""

    id: int
    using: str | None = None


@dataclass(frozen=True)
class MessageRef:
    """A message named by its seq on database ``using`` (None: the dependent
    message's), for ``depends_on``: how a Django task's result id, which says its
    database, names the task."""

    seq: int
    using: str | None = None
