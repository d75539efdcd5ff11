"""The worker's tracing hook: the consumer span of each handler call.

``hook`` is None unless tracing is on (``django_mqlite.otel``, the ``[otel]`` extra); the
worker then calls the handler as before and ``finish`` is one attribute read. When set:

- ``hook.wrap(handler)`` is the outermost layer of the handler chain (``middleware``),
  sync or async like the handler, so the span is current inside the handler (a message
  it sends is a child of it) and on the event loop for a coroutine; it opens the span and
  keeps it as ``msg.span``;
- ``finish(msg, outcome)`` ends it once the delivery is settled, with what the settle
  verb answered (completed, retried, dead-lettered, lock lost...): the worker's batched
  completions and abandons, a handler that settled itself, a timeout, ``testing.drain``.

The worker's claims and settlements are traced where every surface's are, in the engine
(``engine.tracing``, with ``MQLITE["TRACING_CLAIMS_AND_SETTLES"]``): a settlement made
while a delivery's span is open is that span's child.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..engine.received import Received
from ..engine.types import Outcome, Settled
from .registry import Handler

#: What a delivery's span records when its settlement found the lease gone.
LOCK_LOST = "lock_lost"


class ConsumerTracer(Protocol):
    def wrap(self, handler: Handler) -> Handler: ...

    def finish(self, span: Any, msg: Received, outcome: str) -> None: ...


#: The installed tracer, or None (tracing off).
hook: ConsumerTracer | None = None


def outcome_name(outcome: Settled | str | None) -> str:
    if isinstance(outcome, Settled):
        return LOCK_LOST if outcome.outcome is Outcome.STALE else outcome.outcome.value
    return outcome or "unsettled"


def finish(msg: Received, outcome: Settled | str | None) -> None:
    """End ``msg``'s consumer span, if it has one, recording ``outcome``."""
    span: Any = msg.span
    if span is None:
        return
    msg.span = None
    if hook is None:  # tracing was turned off meanwhile
        span.end()
        return
    hook.finish(span, msg, outcome_name(outcome))
