"""Claim and settlement spans (``MQLITE["TRACING_CLAIMS_AND_SETTLES"]``), made by the
engine's claim and settle functions (``engine.tracing``), so every surface gets them
once: a worker, the Python API, ``testing.drain``, the HTTP API, the SQS endpoint.

- A claim that took messages is one ``receive {queue}`` span (kind CLIENT, operation
  type ``receive``) from the start of the claim to its commit, with
  ``messaging.batch.message_count``, and a **link** to the producer context each message
  carries (the link's ``messaging.message.id`` says which). Its parent is the current
  span: an instrumented view's, a handler's, or the remote context of an HTTP request's
  ``traceparent`` (``api``); a worker's claim has none, so it is a trace of its own.
- A settlement is one ``settle {queue}`` span (kind CLIENT, operation type ``settle``,
  ``messaging.operation.name`` the verb: complete, abandon, reject, defer, renew) per
  statement, with the messages' producers linked as above. For one message it has
  ``messaging.message.id`` and ``messaging.mqlite.outcome`` (an error status when the
  lock was lost: ``stale``, ``gone``); for several, ``messaging.batch.message_count``
  and each outcome on its message's link. Its parent is the current span; with none, the
  worker's ``process`` span of the one message settled (a worker settles finished
  handlers in batches on its main thread), and a batch links to each of theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from ..engine.received import Received
from ..engine.types import Outcome, Settled
from .carried import attributes, producer_of

#: Settlements that did nothing because the lock was not (or no longer) the caller's.
LOST = {Outcome.STALE, Outcome.GONE}


def received(tracer: trace.Tracer, queue: str, msgs: Sequence[Received], started_ns: int) -> None:
    """The ``receive`` span of one claim that took ``msgs``."""
    links = []
    for m in msgs:
        producer = producer_of(m.properties)
        if producer.is_valid:
            links.append(Link(producer, {"messaging.message.id": str(m.seq)}))
    attrs = attributes(queue, "receive")
    attrs["messaging.batch.message_count"] = len(msgs)
    if len(msgs) == 1:
        attrs["messaging.message.id"] = str(msgs[0].seq)
        attrs["messaging.mqlite.message.seq"] = msgs[0].seq
    span = tracer.start_span(
        f"receive {queue}",
        kind=SpanKind.CLIENT,
        attributes=attrs,
        links=links,
        start_time=started_ns,
    )
    span.end()


def settled(
    tracer: trace.Tracer,
    queue: str,
    verb: str,
    results: Sequence[Settled],
    carried: dict[int, dict[str, Any]],
    processing: Sequence[Any],
    started_ns: int,
) -> None:
    """The ``settle`` span of one settlement: ``results`` as the engine answered them,
    ``carried`` the messages' properties by seq, ``processing`` the worker's open
    ``process`` span of each (None outside a worker)."""
    current = trace.get_current_span().get_span_context()
    parent = None
    if not current.is_valid and len(results) == 1 and processing[0] is not None:
        parent = trace.set_span_in_context(processing[0])
    links = []
    for result, process in zip(results, processing, strict=True):
        about = {
            "messaging.message.id": str(result.seq),
            "messaging.mqlite.outcome": result.outcome.value,
        }
        producer = producer_of(carried.get(result.seq))
        if producer.is_valid:
            links.append(Link(producer, about))
        # A process span that is the parent already (current, or made so) is not linked.
        if process is not None and parent is None and not _same(process, current):
            links.append(
                Link(process.get_span_context(), {**about, "messaging.mqlite.link": "process"})
            )
    attrs = attributes(queue, "settle", verb)
    if len(results) == 1:
        attrs["messaging.message.id"] = str(results[0].seq)
        attrs["messaging.mqlite.message.seq"] = results[0].seq
        attrs["messaging.mqlite.outcome"] = results[0].outcome.value
    else:
        attrs["messaging.batch.message_count"] = len(results)
    span = tracer.start_span(
        f"settle {queue}",
        context=parent,
        kind=SpanKind.CLIENT,
        attributes=attrs,
        links=links,
        start_time=started_ns,
    )
    lost = sum(r.outcome in LOST for r in results)
    if lost:
        span.set_status(Status(StatusCode.ERROR, f"lock lost ({lost} of {len(results)})"))
    span.end()


def _same(span: Any, context: trace.SpanContext) -> bool:
    """Whether ``span`` is the span of ``context``."""
    own = span.get_span_context()
    return bool(own.trace_id == context.trace_id and own.span_id == context.span_id)
