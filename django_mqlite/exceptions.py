"""The exception hierarchy of django-mqlite.

Every error a caller can act on is an ``MQLiteError`` with a stable ``code``. The HTTP
API maps codes to statuses in exactly one place (``django_mqlite.api.exceptions``);
nothing here knows about HTTP.
"""

from __future__ import annotations

import datetime as dt


class MQLiteError(Exception):
    """Base class of every django-mqlite error."""

    code = "internal"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.__class__.__doc__ or self.code)
        self.message = str(self.args[0])


class QueueNotFoundError(MQLiteError):
    """The queue does not exist."""

    code = "not_found"


class LockLostError(MQLiteError):
    """The lock token is not the current one, or its lease has run out."""

    code = "lock_lost"


class MessageGoneError(LockLostError):
    """The message is no longer in its queue and no settlement of it by this verb is on
    record (raised only by a settlement made with ``lapsed=True``)."""


class DedupConflictError(MQLiteError):
    """A message with this message_id but a different body was sent within the dedup window."""

    code = "already_exists"


class QueueExistsError(MQLiteError):
    """The queue exists with other settings than those given (``update_queue`` changes them)."""

    code = "already_exists"


class UniqueKeyLockedError(MQLiteError):
    """A send with ``on_conflict="replace"`` or ``"debounce"`` met a live holder of its
    unique key that a consumer holds (locked or deferred): its content cannot be changed
    under the consumer, and no second live message may hold the key. Nothing was
    written; send again once the holder is settled."""

    code = "already_exists"


class GroupRequiredError(MQLiteError):
    """The queue's ordering requires a group_id on every message."""

    code = "group_required"


class MessageTooLargeError(MQLiteError):
    """The message body is larger than the configured cap."""

    code = "message_too_large"


class InvalidArgumentError(MQLiteError):
    """An argument is out of range or of the wrong type."""

    code = "invalid_argument"


class QueueNotEmptyError(InvalidArgumentError):
    """The queue still holds live messages; pass force=True to delete it anyway."""


class TopicNotFoundError(MQLiteError):
    """The topic does not exist."""

    code = "not_found"


class TopicExistsError(MQLiteError):
    """A topic of this name exists already."""

    code = "already_exists"


class CrossDatabaseError(InvalidArgumentError):
    """The queue lives on another database than the topic or the batch: a publish is
    one statement in one database's transaction, and a batch counts its children in the
    transactions that settle them, so neither can reach it."""


class BatchNotFoundError(MQLiteError):
    """No batch has this id (on this database)."""

    code = "not_found"


class SnoozePastExpiryError(InvalidArgumentError):
    """A snooze would end at or after the message's expiry (its TTL): it would never be
    delivered again. Nothing was changed."""


class MessageNotFoundError(MQLiteError):
    """No message of the queue has this seq (never sent, or already removed)."""

    code = "not_found"


class MessageFinishedError(MQLiteError):
    """The message has finished (completed, or dead-lettered): there is nothing left to
    cancel. Nothing was changed."""

    code = "finished"


class ProgressTooLargeError(InvalidArgumentError):
    """A progress report or a checkpoint is larger, as JSON, than its cap
    (``engine.running.MAX_NOTE_BYTES``). Nothing was buffered."""


class ScheduleNotFoundError(MQLiteError):
    """No schedule stored in the database has this name."""

    code = "not_found"


class ScheduleExistsError(MQLiteError):
    """A schedule of this name exists already (stored, or declared in
    ``MQLITE["PERIODIC"]``). Nothing was written."""

    code = "already_exists"


class Reject(Exception):  # noqa: N818 - the name reads as a verb in handlers: raise mq.Reject(...)
    """Raised by a consumer to dead-letter the message at once, without retries."""

    def __init__(self, reason: str, description: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.description = description


class Cancelled(Reject):
    """The end of a message whose cancel was requested while it ran
    (``mq.request_cancel``): it is dead-lettered with reason ``Cancelled``, not retried.
    A worker settles a handler that raises anything once the request reached it this
    way (an ``async def`` handler is cancelled for it); a handler may raise it itself."""

    REASON = "Cancelled"

    def __init__(self, description: str = "cancelled while running") -> None:
        super().__init__(self.REASON, description)


class Snooze(Exception):  # noqa: N818 - reads as a verb in handlers: raise mq.Snooze(60)
    """Raised by a consumer (or a Django Task) to give the message back for ``seconds``
    (a number or a timedelta) without using up a delivery: the worker settles it with
    the engine's one snooze verb (``Received.snooze``), capped by the queue's
    ``max_snoozes``."""

    def __init__(self, seconds: float | dt.timedelta) -> None:
        super().__init__(seconds)
        self.seconds = seconds


#: What SQLite says when its write lock stayed taken past the connection's ``timeout``.
_BUSY_TEXTS = ("database is locked", "database is busy")


def database_busy(exc: BaseException) -> bool:
    """True for a database error that says only "busy, try again": SQLite's write lock
    held past the busy timeout. Nothing was written by the statement that got it (in
    IMMEDIATE mode the lock is taken at BEGIN), so a surface answers it as temporarily
    unavailable (HTTP 503 ``database_busy`` with ``Retry-After``), never as a bug."""
    from django.db import OperationalError

    return isinstance(exc, OperationalError) and any(t in str(exc) for t in _BUSY_TEXTS)
