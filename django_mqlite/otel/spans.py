"""The spans, after OpenTelemetry's messaging semantic conventions.

Producer (``engine.tracing``, every send of every surface):

- a single send is one ``send {queue}`` span (kind PRODUCER) whose context is written
  into the message's properties by the configured propagator (W3C ``traceparent`` and
  ``tracestate`` by default: reserved property names);
- a batch of several is one ``create {queue}`` span (PRODUCER) per message, whose context
  the message carries, and one ``send {queue}`` span with a link to each of them and
  ``messaging.batch.message_count``;
- the parent is the current span (a Django view's, a handler's); with none, the context
  the message already carries (a remote producer's ``traceparent`` property, or an SQS
  ``AWSTraceHeader`` in X-Ray format), which is otherwise linked.

Consumer (``worker.tracing``, every handler call, tasks included): one ``process
{queue}`` span (kind CONSUMER), current while the handler runs. On the first delivery its
parent is the context the message carries; on a redelivery it starts a trace of its own
and links to that context. It ends when the delivery is settled, with
``messaging.mqlite.outcome`` (completed, retried, scheduled, dead_lettered, forwarded,
deferred, lock_lost, timed_out) and, for a failed attempt, the exception recorded and
``error.type``.

Claims and settlements (``engine.tracing``, with ``MQLITE["TRACING_CLAIMS_AND_SETTLES"]``):
a ``receive {queue}`` span per claim and a ``settle {queue}`` span per settlement, of
every surface; see ``claims``.

Attributes: ``messaging.system`` ("mqlite"), ``messaging.operation.name`` /
``messaging.operation.type``, ``messaging.destination.name`` (queue or topic),
``messaging.message.id`` (the seq), ``messaging.message.conversation_id`` (the
correlation id), and ``messaging.mqlite.message.seq``, ``.delivery_count``, ``.group_id``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from ..conf import current
from ..engine import tracing as engine_tracing
from ..engine.received import Received
from ..engine.types import OutMessage, Settled
from ..worker import tracing as worker_tracing
from ..worker.registry import Handler
from . import claims
from .carried import attributes, carried_context

T = TypeVar("T")

#: Seconds between looks at the global tracer provider while none is set.
LOOK_EVERY_S = 1.0
_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
#: Outcomes that end a consumer span in error.
FAILED = {"retried", "scheduled", "dead_lettered", "forwarded", "lock_lost", "timed_out"}


class Tracing:
    """The engine's and the worker's hook (``engine.tracing``, ``worker.tracing``)."""

    def __init__(self, provider: Any = None) -> None:
        self.provider = provider
        self._tracer: trace.Tracer | None = None
        self._next_look = 0.0
        #: The open process spans, by the lock token of their delivery.
        self._processing: dict[str, Any] = {}

    def tracer(self) -> trace.Tracer | None:
        """The tracer, or None while no SDK provider is configured (nothing would be
        recorded: the proxy and no-op providers of the API). The global provider is
        looked up at most every ``LOOK_EVERY_S`` until one is set (the lookup reads the
        environment, a cost a send should not pay each time); once set it cannot change."""
        if self._tracer is not None:
            return self._tracer
        provider = self.provider
        if provider is None:
            now = time.monotonic()
            if now < self._next_look:
                return None
            self._next_look = now + LOOK_EVERY_S
            provider = trace.get_tracer_provider()
        if isinstance(provider, _NO_SDK):
            return None
        self._tracer = provider.get_tracer("django_mqlite")
        return self._tracer

    # -- producer ----------------------------------------------------------------------

    def send(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        run: Callable[[Sequence[OutMessage]], T],
        seqs: Callable[[T], list[int]],
    ) -> T:
        tracer = self.tracer()
        if tracer is None:
            return run(messages)
        attrs = attributes(queue, "send")
        if len(messages) == 1:
            parent, links = _producer_parent(messages[0])
            with tracer.start_as_current_span(
                f"send {queue}",
                context=parent,
                kind=SpanKind.PRODUCER,
                attributes=attrs,
                links=links,
            ) as span:
                _message_attributes(span, messages[0])
                result = run([_carrying(messages[0], otel_context.get_current())])
                for seq in seqs(result)[:1]:
                    if seq:
                        span.set_attribute("messaging.message.id", str(seq))
                        span.set_attribute("messaging.mqlite.message.seq", seq)
                return result
        created = []
        out = []
        for m in messages:
            parent, links = _producer_parent(m)
            span = tracer.start_span(
                f"create {queue}",
                context=parent,
                kind=SpanKind.PRODUCER,
                attributes=attributes(queue, "create"),
                links=links,
            )
            _message_attributes(span, m)
            created.append(span)
            out.append(_carrying(m, trace.set_span_in_context(span)))
        attrs["messaging.batch.message_count"] = len(messages)
        try:
            with tracer.start_as_current_span(
                f"send {queue}",
                kind=SpanKind.PRODUCER,
                attributes=attrs,
                links=[Link(s.get_span_context()) for s in created],
            ):
                result = run(out)
            for span, seq in zip(created, seqs(result), strict=False):
                if seq:
                    span.set_attribute("messaging.message.id", str(seq))
                    span.set_attribute("messaging.mqlite.message.seq", seq)
            return result
        finally:
            for span in created:
                span.end()

    # -- consumer ----------------------------------------------------------------------

    def wrap(self, handler: Handler) -> Handler:
        if iscoroutinefunction(handler):

            async def traced_async(msg: Received) -> Any:
                token = self._begin(msg)
                try:
                    return await handler(msg)
                except BaseException as exc:
                    _failed(msg, exc)
                    raise
                finally:
                    if token is not None:
                        otel_context.detach(token)

            return traced_async

        def traced(msg: Received) -> Any:
            token = self._begin(msg)
            try:
                return handler(msg)
            except BaseException as exc:
                _failed(msg, exc)
                raise
            finally:
                if token is not None:
                    otel_context.detach(token)

        return traced

    def _begin(self, msg: Received) -> Any:
        tracer = self.tracer()
        if tracer is None:
            return None
        carried = carried_context(msg.properties)
        producer = trace.get_current_span(carried).get_span_context()
        first = msg.delivery_count <= 1
        if first and producer.is_valid:
            parent, links = carried, []
        else:
            parent = otel_context.Context()  # a trace of its own
            links = (
                [Link(producer, {"messaging.mqlite.link": "producer"})] if producer.is_valid else []
            )
        attrs = attributes(msg.queue, "process")
        attrs.update(
            {
                "messaging.message.id": str(msg.seq),
                "messaging.mqlite.message.seq": msg.seq,
                "messaging.mqlite.message.delivery_count": msg.delivery_count,
            }
        )
        if msg.group_id is not None:
            attrs["messaging.mqlite.message.group_id"] = msg.group_id
        if msg.correlation_id is not None:
            attrs["messaging.message.conversation_id"] = msg.correlation_id
        span = tracer.start_span(
            f"process {msg.queue}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes=attrs,
            links=links,
        )
        msg.span = span
        if msg.lock_token is not None:
            # A settlement of this delivery (``claims.settled``) finds its process span
            # here, while it is open: the worker's batched settlements run elsewhere.
            self._processing[msg.lock_token] = span
        return otel_context.attach(trace.set_span_in_context(span))

    # -- claims and settlements (``claims``) ------------------------------------------

    def claims_and_settles(self) -> bool:
        return current().tracing_claims_and_settles and self.tracer() is not None

    def received(self, queue: str, msgs: Sequence[Received], started_ns: int) -> None:
        tracer = self.tracer()
        if tracer is not None:
            claims.received(tracer, queue, msgs, started_ns)

    def settled(
        self,
        queue: str,
        verb: str,
        requests: Sequence[engine_tracing.Request],
        results: Sequence[Settled],
        carried: dict[int, dict[str, Any]],
        started_ns: int,
    ) -> None:
        tracer = self.tracer()
        if tracer is not None:
            processing = [self._processing.get(token) for _, token, _ in requests]
            claims.settled(tracer, queue, verb, results, carried, processing, started_ns)

    def finish(self, span: Any, msg: Received, outcome: str) -> None:
        if msg.lock_token is not None:
            self._processing.pop(msg.lock_token, None)
        span.set_attribute("messaging.mqlite.outcome", outcome)
        if outcome in FAILED:
            span.set_status(Status(StatusCode.ERROR, outcome))
        span.end()


def _message_attributes(span: Any, m: OutMessage) -> None:
    if m.group_id is not None:
        span.set_attribute("messaging.mqlite.message.group_id", m.group_id)
    if m.correlation_id is not None:
        span.set_attribute("messaging.message.conversation_id", m.correlation_id)


def _failed(msg: Received, exc: BaseException) -> None:
    span = msg.span
    if span is not None:
        span.record_exception(exc)
        span.set_attribute("error.type", type(exc).__qualname__)


def _producer_parent(m: OutMessage) -> tuple[otel_context.Context | None, list[Link]]:
    """The parent of a producer span: the current span; with none, the context ``m``
    already carries (then not linked twice)."""
    carried = carried_context(m.properties) if m.properties else None
    carried_sc = None if carried is None else trace.get_current_span(carried).get_span_context()
    if trace.get_current_span().get_span_context().is_valid:
        return None, [Link(carried_sc)] if carried_sc is not None and carried_sc.is_valid else []
    if carried_sc is not None and carried_sc.is_valid:
        return carried, []
    return None, []


def _carrying(m: OutMessage, ctx: otel_context.Context) -> OutMessage:
    """``m`` with ``ctx`` written into a copy of its properties by the propagator."""
    props = dict(m.properties or {})
    propagate.inject(props, context=ctx)
    return dataclasses.replace(m, properties=props or None)


def attach_remote(headers: Mapping[str, str]) -> Any:
    """Make the context of a request's ``headers`` current when no span is, and return
    the token to detach it with; None when nothing was attached (a span is current, the
    headers carry no valid context)."""
    if trace.get_current_span().get_span_context().is_valid:
        return None
    ctx = propagate.extract(headers)
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        return None
    return otel_context.attach(ctx)


def detach(token: Any) -> None:
    otel_context.detach(token)


def install(provider: Any = None) -> None:
    hook = Tracing(provider)
    engine_tracing.hook = hook
    worker_tracing.hook = hook
