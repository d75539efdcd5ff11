"""A claimed message and its settlement methods.

It lives apart from the plain value types (``types``) because its methods call the
settle functions, and the settle functions need the value types: the dependency runs
``received`` -> ``settle`` -> ``types``, never back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from ..exceptions import LockLostError
from . import running, settle
from .running import NoteBuffer, Notes
from .types import Completion, Settled, _MessageFields

#: ``Received._checkpoint`` before the row's checkpoint is read.
_UNREAD: Any = object()


@dataclass
class Received(_MessageFields):
    """A claimed message. Settle it with one of its methods (or the module functions).

    Each method has an async twin (``acomplete``, ``aabandon``, ``asnooze``, ``areject``,
    ``adefer``, ``arenew``) that runs it through ``sync_to_async`` (thread-sensitive, as Django's
    ORM needs): same arguments, result and errors.
    """

    lock_token: str | None = None
    locked_until: dt.datetime | None = None
    using: str | None = field(default=None, repr=False, compare=False)
    #: The worker registry id the claim was made for (``receive(worker_id=...)``).
    worker_id: int | None = field(default=None, repr=False, compare=False)
    #: The verb that settled this message through its methods ("complete", "abandon",
    #: "snooze", "reject", "defer"), or None. A worker leaves a message its handler settled alone;
    #: code settling through the module-level functions sets this itself.
    settled: str | None = field(default=None, repr=False, compare=False)
    #: Set by a handler that returns normally but wants its completion to carry a result
    #: and an attempt record (the Tasks runner): the worker completes it in its next
    #: batch with these and then calls ``completion.on_completed()``.
    completion: Completion | None = field(default=None, repr=False, compare=False)
    #: The exception of a failed attempt that the handler caught and settled itself (the
    #: Tasks runner records it), for callers that report failures (``testing.drain``).
    failure: BaseException | None = field(default=None, repr=False, compare=False)
    #: What the settlement of this delivery did (completed, retried, dead-lettered,
    #: forwarded...), as the engine answered it: set by these methods and by the worker's
    #: steps (``worker.handling``), so callers that report it never re-read the row.
    outcome: Settled | None = field(default=None, repr=False, compare=False)
    #: When a worker last checked this delivery's start margin, immediately before
    #: calling its handler: the reading of the engine's clock (epoch seconds) the lease
    #: was checked against, so a pause after it came between the check and the start;
    #: None outside a worker.
    start_checked_at: float | None = field(default=None, repr=False, compare=False)
    #: The consumer span of this delivery while a worker processes it (tracing on, see
    #: ``worker.tracing``): opened around the handler, ended once it is settled.
    span: Any = field(default=None, repr=False, compare=False)
    #: A cancel of this message was requested while it ran (``mq.request_cancel``): set
    #: from the answer of each lease renewal (a worker's, or ``renew()``), at once where
    #: a worker hears the request (PostgreSQL). Stop, and raise (``mq.Cancelled``, or
    #: anything: a worker dead-letters it as cancelled, never retried), or return to
    #: complete what was done.
    cancel_requested: bool = field(default=False, compare=False)
    #: The worker is stopping and this delivery's consumer is ``resumable``: raise to be
    #: given back (delivery not counted) and resume from ``last_checkpoint`` elsewhere.
    stop_requested: bool = field(default=False, compare=False)
    #: Given back at a worker's shutdown instead of failed (the consumer's ``resumable``).
    resumable: bool = field(default=False, repr=False, compare=False)
    _notes: NoteBuffer | None = field(default=None, repr=False, compare=False)
    _checkpoint: Any = field(default=_UNREAD, repr=False, compare=False)
    #: Stops the handler when a cancel arrives (an ``async def`` one's task), if set.
    _on_cancel: Callable[[], Any] | None = field(default=None, repr=False, compare=False)

    def _token(self) -> str:
        if self.lock_token is None:
            raise LockLostError("message was received without a lock (receive_and_delete)")
        return self.lock_token

    def complete(self) -> None:
        got = settle.complete_many(self.queue, [(self.seq, self._token())], using=self.using)
        self._settled("complete", got)

    def abandon(self, delay: float | dt.timedelta | None = None) -> None:
        item = settle.AbandonItem(self.seq, self._token(), delay)
        self._settled("abandon", settle.abandon_many(self.queue, [item], using=self.using))

    def snooze(self, delay: float | dt.timedelta) -> Settled:
        """Give the message back for ``delay`` without using up a delivery (the queue's
        ``max_snoozes`` caps it; see ``settle.snooze_many``). Returns what happened."""
        item = settle.SnoozeItem(self.seq, self._token(), delay)
        self._settled("snooze", settle.snooze_many(self.queue, [item], using=self.using))
        assert self.outcome is not None
        return self.outcome

    def reject(self, reason: str, description: str = "") -> None:
        item = settle.RejectItem(self.seq, self._token(), reason, description)
        self._settled("reject", settle.reject_many(self.queue, [item], using=self.using))

    def defer(self) -> None:
        got = settle.defer_many(self.queue, [(self.seq, self._token())], using=self.using)
        self._settled("defer", got)

    def renew(self, lock_duration: float | dt.timedelta | None = None) -> dt.datetime:
        """Extend the lease; the renewal also writes the buffered reports
        (``set_progress``, ``checkpoint``) and refreshes ``cancel_requested``."""
        notes = self.take_notes()
        try:
            got = settle.renew_many(
                self.queue,
                [(self.seq, self._token())],
                lock_duration=lock_duration,
                using=self.using,
                notes=[notes],
            )
        except BaseException:
            self.give_back_notes(notes)
            raise
        self.see_renewal(settle.one(self.queue, got))
        assert self.locked_until is not None
        return self.locked_until

    # -- task control (``running``) ------------------------------------------------------

    def set_progress(self, value: Any) -> None:
        """Report progress (any JSON value of at most 64 KiB as JSON; else
        ``InvalidArgumentError`` or ``ProgressTooLargeError``, nothing kept). Buffered:
        the next lease renewal (or the completion, where results are kept) writes the
        latest, fenced, so a holder that lost its lease writes nothing."""
        self._buffer().put(progress=running.encode_note(value, "progress"))

    def checkpoint(self, value: Any) -> None:
        """Save ``value`` (JSON, as ``set_progress``) as where to resume: written by the
        next lease renewal, read back by a later delivery as ``last_checkpoint``."""
        self._buffer().put(checkpoint=running.encode_note(value, "checkpoint"))
        self._checkpoint = value

    @property
    def last_checkpoint(self) -> Any:
        """The last checkpoint saved (by this delivery, else stored by an earlier one;
        None when there is none). Read from the row on first use, outside an event loop
        (a worker reads it before it starts a ``resumable`` consumer's handler)."""
        if self._checkpoint is _UNREAD:
            self._checkpoint = running.load_checkpoint(self.queue, self.seq, using=self.using)
        return self._checkpoint

    def _buffer(self) -> NoteBuffer:
        if self._notes is None:
            self._notes = NoteBuffer()
        return self._notes

    def take_notes(self) -> Notes | None:
        """The reports not written yet, taken for the renewal that writes them."""
        return None if self._notes is None else self._notes.take()

    def give_back_notes(self, notes: Notes | None) -> None:
        """Return notes whose write failed (a database error), unless newer came."""
        if notes:
            self._buffer().give_back(notes)

    def final_completion(self) -> Completion | None:
        """``completion`` with the last progress report not written yet, for the
        completion that writes it (kept in ``completion``, so a retried flush carries it
        too); a checkpoint not written yet is dropped: the message is done."""
        notes = self.take_notes()
        if notes is not None and notes.progress is not None:
            if self.completion is None:
                self.completion = Completion()
            self.completion.progress = notes.progress
        return self.completion

    def see_renewal(self, renewed: Settled) -> None:
        """Take in what a renewal answered: the new deadline, and a cancel request."""
        self.locked_until = renewed.locked_until
        if renewed.cancel_requested:
            self.cancel_seen()

    def cancel_seen(self) -> None:
        """A cancel request reached this delivery: flag it, and stop an ``async def``
        handler's task (``_on_cancel``)."""
        self.cancel_requested = True
        self._interrupt(self._on_cancel)

    def stop_seen(self) -> None:
        """The worker is stopping and this delivery is ``resumable``: flag it, and stop
        an ``async def`` handler's task, as a cancel does."""
        self.stop_requested = True
        self._interrupt(self._on_cancel)

    def on_cancel(self, hook: Callable[[], Any] | None) -> None:
        """Set what stops the running handler when a cancel arrives (None: nothing);
        called at once when the request arrived already."""
        self._on_cancel = hook
        if self.cancel_requested or self.stop_requested:
            self._interrupt(hook)

    @staticmethod
    def _interrupt(hook: Callable[[], Any] | None) -> None:
        # The handler may have finished meanwhile (its event loop closed): stopping what
        # has stopped is no error, and must never reach the thread that asked.
        if hook is not None:
            try:
                hook()
            except RuntimeError:
                pass

    def _settled(self, verb: str, got: list[Settled]) -> None:
        """The single-call contract (``settle.one``), and what happened kept."""
        self.outcome = settle.one(self.queue, got)
        self.settled = verb

    async def acomplete(self) -> None:
        await sync_to_async(self.complete, thread_sensitive=True)()

    async def aabandon(self, delay: float | dt.timedelta | None = None) -> None:
        await sync_to_async(self.abandon, thread_sensitive=True)(delay)

    async def asnooze(self, delay: float | dt.timedelta) -> Settled:
        return await sync_to_async(self.snooze, thread_sensitive=True)(delay)

    async def areject(self, reason: str, description: str = "") -> None:
        await sync_to_async(self.reject, thread_sensitive=True)(reason, description)

    async def adefer(self) -> None:
        await sync_to_async(self.defer, thread_sensitive=True)()

    async def arenew(self, lock_duration: float | dt.timedelta | None = None) -> dt.datetime:
        return await sync_to_async(self.renew, thread_sensitive=True)(lock_duration)
