"""Running one claimed message through its handler and settling the outcome: the steps a
worker's handler thread takes, shared with ``django_mqlite.testing.drain`` (which runs
them in the calling thread).

- ``run_handler``: call the handler, capture its exception and traceback;
- ``complete``: complete a successful delivery (carrying its ``Completion``, then calling
  its ``on_completed``), as the worker's batched completion does for one message;
- ``as_cancelled``: a handler that raised after a cancel request reached it was
  cancelled (``mq.Cancelled``, a ``Reject`` with reason ``Cancelled``);
- ``settle_failure``: ``mq.Reject`` dead-letters, ``mq.Snooze`` gives the message back
  with the engine's snooze verb (no delivery used up, up to the queue's ``max_snoozes``),
  any other exception abandons with the retry backoff (dead-lettered by the engine at
  ``max_delivery_count``).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any, overload

from ..engine import settle
from ..engine.admission import diagnostic
from ..engine.received import Received
from ..engine.types import Outcome, Settled
from ..exceptions import Cancelled, InvalidArgumentError, Reject, Snooze
from .aio import call_handler
from .delivery import Delivery, log_fields

logger = logging.getLogger("django_mqlite.worker")


def run_handler(
    d: Delivery, call: Callable[[Delivery], Any] = call_handler
) -> tuple[BaseException | None, str]:
    """Run ``d``'s handler; returns (the exception it raised or None, its traceback)."""
    try:
        call(d)
    except BaseException as exc:
        # A handler that calls sys.exit() or raises KeyboardInterrupt has failed its
        # attempt; neither may take the thread (and the message's lease) with it.
        return exc, traceback.format_exc()
    return None, ""


@overload
def as_cancelled(msg: Received, failure: BaseException) -> BaseException: ...
@overload
def as_cancelled(msg: Received, failure: None) -> None: ...
@overload
def as_cancelled(msg: Received, failure: BaseException | None) -> BaseException | None: ...


def as_cancelled(msg: Received, failure: BaseException | None) -> BaseException | None:
    """A handler that raised once a cancel request reached it ended because of it (it
    stopped, or its coroutine was cancelled): ``mq.Cancelled``, dead-lettered with
    reason ``Cancelled`` and never retried. A handler that returned completes; a
    ``Reject`` or ``Snooze`` it raised stays what it is."""
    if failure is None or not msg.cancel_requested or isinstance(failure, Reject | Snooze):
        return failure
    return Cancelled(f"cancelled while running ({type(failure).__name__})")


def complete(msg: Received, using: str) -> Settled:
    """Complete one successful delivery, as the worker's batched completion does for
    one message (its ``Completion`` carried, its ``on_completed`` called once the
    completion committed); the outcome is also kept as ``msg.outcome``."""
    token = msg.lock_token
    assert token is not None
    c = msg.completion
    [result] = settle.complete_many(
        msg.queue, [(msg.seq, token)], completions=[c] if c else None, using=using
    )
    msg.outcome = result
    if result.ok and c is not None and c.on_completed is not None:
        try:
            c.on_completed()
        except Exception:
            logger.exception("after completing %s #%s", msg.queue, msg.seq, extra=log_fields(msg))
    return result


def settle_failure(
    msg: Received,
    failure: BaseException | None,
    tb: str,
    *,
    using: str,
    backoff: Callable[[int], float],
) -> Settled:
    """Settle a delivery its handler did not settle: a failure is rejected (``Reject``),
    snoozed (``Snooze``; an invalid delay fails the attempt like any other error) or
    abandoned with ``backoff(delivery_count)`` (dead-lettered, and forwarded, at the
    last allowed delivery); a success is completed. A stale token (a late success, a
    lost lease) raises ``LockLostError``. The outcome is also kept as ``msg.outcome``."""
    token = msg.lock_token
    assert token is not None
    delay = 0.0
    if failure is None:
        got = settle.complete_many(msg.queue, [(msg.seq, token)], using=using)
    elif isinstance(failure, Reject):
        item = settle.RejectItem(msg.seq, token, failure.reason, failure.description)
        got = settle.reject_many(msg.queue, [item], using=using)
    elif isinstance(failure, Snooze) and (snoozed := _snoozed(msg, failure, using)) is not None:
        got = snoozed
    else:
        delay = backoff(msg.delivery_count)
        abandon = settle.AbandonItem(msg.seq, token, delay=delay, error=tb)
        got = settle.abandon_many(msg.queue, [abandon], using=using)
    msg.outcome = result = settle.one(msg.queue, got)
    if isinstance(failure, Reject):
        # Logged as stored: a lone surrogate would break every UTF-8 log handler.
        logger.info(
            "%s #%s rejected: %s",
            msg.queue,
            msg.seq,
            diagnostic(failure.reason),
            extra=log_fields(msg),
        )
    elif isinstance(failure, Snooze) and result.outcome is Outcome.SNOOZED:
        logger.info(
            "%s #%s snoozed for %ss", msg.queue, msg.seq, failure.seconds, extra=log_fields(msg)
        )
    elif failure is not None:
        log_failure(msg, failure, delay)
    return result


def _snoozed(msg: Received, failure: Snooze, using: str) -> list[Settled] | None:
    """The engine's snooze of ``msg`` for the handler's ``Snooze``; None when its delay is
    invalid (negative, NaN, too long, past the message's expiry), which then fails the
    attempt like any other error (its text kept as the last error)."""
    assert msg.lock_token is not None
    item = settle.SnoozeItem(msg.seq, msg.lock_token, failure.seconds)
    try:
        return settle.snooze_many(msg.queue, [item], using=using)
    except InvalidArgumentError as exc:
        logger.warning("%s #%s: cannot snooze: %s", msg.queue, msg.seq, exc, extra=log_fields(msg))
        return None


def log_failure(msg: Received, failure: BaseException, delay: float) -> None:
    """The worker's one log line for a failed attempt."""
    logger.warning(
        "%s #%s attempt %s failed (%s: %s); retry in %.2fs unless exhausted",
        msg.queue,
        msg.seq,
        msg.delivery_count,
        type(failure).__name__,
        diagnostic(str(failure)),
        delay,
        extra=log_fields(msg),
    )
