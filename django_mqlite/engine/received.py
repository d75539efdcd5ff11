"""A claimed message and its settlement methods.

It lives apart from the plain value types (``types``) because its methods call the
settle functions, and the settle functions need the value types: the dependency runs
``received`` -> ``settle`` -> ``types``, never back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from ..exceptions import LockLostError
from . import settle
from .types import Completion, Settled, _MessageFields


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
    #: calling its handler (``time.time()``, epoch seconds); None outside a worker.
    start_checked_at: float | None = field(default=None, repr=False, compare=False)
    #: The consumer span of this delivery while a worker processes it (tracing on, see
    #: ``worker.tracing``): opened around the handler, ended once it is settled.
    span: Any = field(default=None, repr=False, compare=False)

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
        self.locked_until = settle.renew(
            self.queue, self.seq, self._token(), lock_duration=lock_duration, using=self.using
        )
        return self.locked_until

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
