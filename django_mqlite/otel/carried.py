"""What every span of django-mqlite shares: its messaging attributes, and the trace
context a message carries in its properties (the propagator's ``traceparent``, or an
SQS ``AWSTraceHeader``), read by the consumer, claim and settlement spans alike."""

from __future__ import annotations

import re
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

SYSTEM = "mqlite"
#: Where the SQS endpoint keeps a message's ``AWSTraceHeader`` (sqs/handlers).
AWS_TRACE_KEY = "AWS.TraceHeader"

_XRAY_ROOT = re.compile(r"1-([0-9a-fA-F]{8})-([0-9a-fA-F]{24})")
_XRAY_PARENT = re.compile(r"[0-9a-fA-F]{16}")


def attributes(destination: str, operation: str, name: str | None = None) -> dict[str, Any]:
    """The attributes of every span: ``name`` is ``messaging.operation.name`` when it is
    more specific than the operation type (a settlement's verb)."""
    return {
        "messaging.system": SYSTEM,
        "messaging.operation.name": name or operation,
        "messaging.operation.type": operation,
        "messaging.destination.name": destination,
    }


def producer_of(properties: dict[str, Any] | None) -> trace.SpanContext:
    """The span context of a message's producer (invalid when it carries none)."""
    return trace.get_current_span(carried_context(properties)).get_span_context()


def carried_context(properties: dict[str, Any] | None) -> otel_context.Context:
    """The trace context a message carries: the propagator's (``traceparent``), else an
    SQS ``AWSTraceHeader`` in X-Ray format (``Root=1-…;Parent=…;Sampled=…``)."""
    props = properties or {}
    ctx = propagate.extract({k: v for k, v in props.items() if isinstance(v, str)})
    if trace.get_current_span(ctx).get_span_context().is_valid:
        return ctx
    header = props.get(AWS_TRACE_KEY)
    sc = xray_context(header) if isinstance(header, str) else None
    if sc is None:
        return ctx
    return trace.set_span_in_context(trace.NonRecordingSpan(sc), ctx)


def xray_context(header: str) -> trace.SpanContext | None:
    """The span context of an X-Ray trace header, or None when it has no root and
    parent (the mapping of AWS's OpenTelemetry X-Ray propagator)."""
    fields = dict(part.strip().partition("=")[::2] for part in header.split(";"))
    root_match = _XRAY_ROOT.fullmatch(fields.get("Root", ""))
    parent = fields.get("Parent", "")
    root = None if root_match is None else root_match.group(1) + root_match.group(2)
    sampled = fields.get("Sampled") == "1"
    if root is None or not _XRAY_PARENT.fullmatch(parent):
        return None
    sc = trace.SpanContext(
        int(root, 16),
        int(parent, 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED if sampled else 0),
    )
    return sc if sc.is_valid else None
