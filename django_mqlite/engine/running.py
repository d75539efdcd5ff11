"""Task control of running work: a cancel request, progress and checkpoints.

The rule, written once: what a handler reports (``progress``, a ``checkpoint``) is
buffered in its process (``Notes``) and written by the statements its lease holder
makes anyway, fenced like every settlement: the lease renewal (``settle.renew_many``,
which carries the notes of the items that have any) and, for progress, the completion
(``Completion.progress``). So a handler that reports costs no statement of its own, and
a holder whose lease was lost (its message reclaimed and claimed again by another)
writes nothing over the new holder's reports: its renewal and completion match no row.

A cancel request goes the other way: ``request_cancel`` stamps ``cancel_requested_at``
on a locked row in one guarded statement (a message that has not started is cancelled
at once instead, ``redrive.bury``), and the renewal that the holder makes anyway
returns the stamp, so the handler sees ``msg.cancel_requested`` within half a lease at
no statement of its own. On PostgreSQL the request also sends a notification
(``cancel_note``) in its transaction, which a worker hears at once (``listen``). The
stamp stays on the row: a delivery after a lost lease sees it at its first renewal.

Waiting for a message to finish (``mq.wait``) is ``waiting``'s.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ..exceptions import (
    InvalidArgumentError,
    MessageFinishedError,
    MessageNotFoundError,
    ProgressTooLargeError,
)
from . import admission, arguments, databases
from .clock import now_ms
from .rows import load_queue

#: The largest progress report or checkpoint, as JSON text (bytes of UTF-8).
MAX_NOTE_BYTES = 64 * 1024
#: The reason a cancelled message is dead-lettered with (``exceptions.Cancelled``).
CANCELLED_REASON = "Cancelled"
#: The NOTIFY payload of a cancel request starts with this (queue names cannot).
CANCEL_NOTE = "#cancel "


def cancel_note(queue: str, seq: int) -> str:
    """The notification payload that tells a listening worker of a cancel request."""
    return f"{CANCEL_NOTE}{queue} {seq}"


def parse_heard(key: str) -> tuple[str, str, int] | None:
    """(database alias, queue, seq) of what a listener announces for a cancel note it
    heard on that database (``cancel_note`` and the alias, space-separated), or None
    for any other key."""
    if not key.startswith(CANCEL_NOTE):
        return None
    parts = key[len(CANCEL_NOTE) :].split(" ")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    queue, seq, alias = parts
    return alias, queue, int(seq)


def encode_note(value: Any, what: str) -> str:
    """The stored JSON of a progress report or checkpoint: strict JSON (what PostgreSQL's
    jsonb and every reader take back) of at most ``MAX_NOTE_BYTES``; else
    ``InvalidArgumentError`` (``ProgressTooLargeError`` for the size)."""
    try:
        encoded = admission.result_json(value, what)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON: {exc}") from None
    size = len(encoded.encode("utf-8"))
    if size > MAX_NOTE_BYTES:
        raise ProgressTooLargeError(f"{what} is {size} bytes as JSON; at most {MAX_NOTE_BYTES}")
    return encoded


@dataclass(slots=True)
class Notes:
    """What a handler reported since the last write: JSON texts, None for nothing new."""

    progress: str | None = None
    checkpoint: str | None = None

    def __bool__(self) -> bool:
        return self.progress is not None or self.checkpoint is not None


class NoteBuffer:
    """A delivery's unwritten notes, shared by its handler (which reports) and the
    thread that renews its lease (which takes them for the renewal and, when the
    renewal fails on a database error, gives them back unless newer ones came)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._notes = Notes()

    def put(self, *, progress: str | None = None, checkpoint: str | None = None) -> None:
        with self._lock:
            if progress is not None:
                self._notes.progress = progress
            if checkpoint is not None:
                self._notes.checkpoint = checkpoint

    def take(self) -> Notes | None:
        with self._lock:
            notes, self._notes = self._notes, Notes()
        return notes if notes else None

    def give_back(self, notes: Notes | None) -> None:
        """Return notes a failed write took; what was reported since wins."""
        if not notes:
            return
        with self._lock:
            if self._notes.progress is None:
                self._notes.progress = notes.progress
            if self._notes.checkpoint is None:
                self._notes.checkpoint = notes.checkpoint


# -- cancel -----------------------------------------------------------------------------

#: What ``cancel`` did: a running message has the request now, it had it already, or a
#: message that had not started was cancelled at once.
REQUESTED, ALREADY_REQUESTED, CANCELLED = "requested", "already_requested", "cancelled"


def cancel(queue: str, seq: int, *, using: str | None = None) -> str:
    """Cancel message ``seq``: a running (locked) one is asked to stop (``REQUESTED``,
    or ``ALREADY_REQUESTED`` for a repeat), one waiting for delivery (active,
    scheduled or deferred) is dead-lettered with reason ``Cancelled`` at once
    (``CANCELLED``). A finished message (completed, dead-lettered) raises
    ``MessageFinishedError``, an unknown seq ``MessageNotFoundError``; nothing changes."""
    from .redrive import bury  # redrive imports the settle path, which imports this

    arguments.check_seq(seq)
    alias = databases.alias_of(using, queue)
    # A message can move between the statements below (claimed, or given back): each
    # pass tries again from the top; two passes settle it unless it keeps moving.
    for _ in range(3):
        with transaction.atomic(using=alias):
            cursor, dialect = databases.ctx(alias)
            q = load_queue(cursor, queue)
            # -- name: request_cancel: only a locked row not asked yet.
            cursor.execute(
                "UPDATE mqlite_message SET cancel_requested_at = %s WHERE seq = %s "
                "AND queue_id = %s AND state = 'locked' AND cancel_requested_at IS NULL "
                "RETURNING seq",
                [now_ms(), seq, q.id],
            )
            if cursor.fetchone() is not None:
                notify = dialect.notify_sql()
                if notify is not None:
                    cursor.execute(notify, [cancel_note(queue, seq)])
                return REQUESTED
        if bury(queue, seq, CANCELLED_REASON, "cancelled before it ran", using=alias):
            return CANCELLED
        cursor, _ = databases.ctx(alias)
        cursor.execute(
            "SELECT state FROM mqlite_message WHERE seq = %s AND queue_id = %s", [seq, q.id]
        )
        row = cursor.fetchone()
        if row is None:
            raise MessageNotFoundError(f"queue {queue!r} has no message {seq}")
        if row[0] == "locked":
            return ALREADY_REQUESTED
        if row[0] in ("completed", "dead_lettered"):
            raise MessageFinishedError(f"message {seq} on {queue!r} has finished ({row[0]})")
    raise InvalidArgumentError(f"message {seq} on {queue!r} kept moving; try again")


def request_cancel(queue: str, seq: int, *, using: str | None = None) -> bool:
    """Ask for message ``seq`` to be cancelled (``mq.request_cancel``): a running one's
    handler sees ``msg.cancel_requested`` within half a lease (at once on PostgreSQL),
    and a message that has not started is dead-lettered (``Cancelled``) at once. True
    when this call did it, False when the running message had been asked already. A
    finished message raises ``MessageFinishedError``, an unknown one
    ``MessageNotFoundError``."""
    return cancel(queue, seq, using=using) != ALREADY_REQUESTED


# -- checkpoints --------------------------------------------------------------------------


def load_checkpoint(queue: str, seq: int, *, using: str | None = None) -> Any:
    """The last checkpoint stored on message ``seq`` (None when it has none)."""
    alias = databases.alias_of(using, queue)
    cursor, dialect = databases.ctx(alias)
    q = load_queue(cursor, queue)
    cursor.execute(
        "SELECT checkpoint FROM mqlite_message WHERE seq = %s AND queue_id = %s", [seq, q.id]
    )
    row = cursor.fetchone()
    return None if row is None else dialect.load_json(row[0])
