"""A claimed message on its way through a worker."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.received import Received
from .registry import Consumer


@dataclass(eq=False)
class Delivery:
    """One claimed message. ``next_renew`` is on the engine's clock (epoch seconds, so
    a frozen clock drives renewals in tests); handler times are ``time.monotonic()``.

    Lifecycle: pending (claimed, waiting for a thread) -> running -> finished, or
    running -> timed out (the worker gave up on it; the thread finishes on its own).
    """

    msg: Received
    consumer: Consumer
    #: How long a lease lasts for this message, in seconds; renewed at half of it.
    lease_s: float
    next_renew: float
    #: When the lease ends at the latest the worker knows of (engine clock, epoch
    #: seconds): the claim's ``locked_until``, moved on by each renewal.
    lease_until: float = 0.0
    #: ``time.monotonic()`` just before the claim (the start-margin rule's pause check).
    claimed_at: float = 0.0
    #: Seconds the handler may run (the consumer's timeout for this message), or None.
    timeout: float | None = None
    started: float | None = None
    #: When the handler returned (monotonic), for the group commit's wait.
    ended: float | None = None
    finished: bool = False
    timed_out: bool = False
    #: A renewal found the lease gone: another worker may have the message now.
    lost: bool = False

    def lease_left_s(self, now_s: float) -> float:
        """Seconds of lease left at ``now_s`` (engine clock), by what the worker knows."""
        return self.lease_until - now_s

    @property
    def key(self) -> tuple[str, int]:
        return (self.msg.queue, self.msg.seq)

    def item(self) -> tuple[int, str]:
        assert self.msg.lock_token is not None
        return (self.msg.seq, self.msg.lock_token)


def log_fields(msg: Received) -> dict[str, object]:
    """The ``extra`` of every worker log line about one message, so a structured (JSON)
    log formatter gets them as fields without parsing the text."""
    return {
        "mqlite_queue": msg.queue,
        "mqlite_seq": msg.seq,
        "mqlite_delivery_count": msg.delivery_count,
    }
