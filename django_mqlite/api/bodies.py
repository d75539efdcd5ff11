"""Message bodies on the wire.

In: ``body`` is any JSON value (a JSON string is sent as text, anything else as JSON) and
``body_base64`` is raw bytes. Out: ``body`` when the content is JSON (an
``application/json`` or ``+json`` content type that parses) or UTF-8 text (``text/*``),
``body_base64`` otherwise (a body labelled JSON that is not strict JSON, e.g. ``NaN`` or a
lone surrogate that an older version stored, included), so a consumer always gets back
what the producer meant and rendering a response never fails after a claim. The rule is
the engine's (``django_mqlite.admission.body_view``), shared by every reading surface.
"""

from __future__ import annotations

from typing import Any

import django_mqlite as mq


def from_wire(attrs: dict[str, Any]) -> Any:
    """The value to hand to ``mq.send``: bytes for ``body_base64``, else the JSON value."""
    if "body_base64" in attrs:
        return attrs["body_base64"]
    return attrs.get("body")


def body_fields(body: bytes, content_type: str | None) -> dict[str, Any]:
    """``body`` when ``mq.admission.body_view`` shows the body as JSON or text, else
    ``body_base64``."""
    view = mq.admission.body_view(body, content_type)
    if view.kind == "binary":
        return {"body_base64": body}
    return {"body": view.value}


def _common(m: mq.Received | mq.Peeked) -> dict[str, Any]:
    return {
        "seq": m.seq,
        **body_fields(m.body, m.content_type),
        "content_type": m.content_type,
        "message_id": m.message_id,
        "group_id": m.group_id,
        "subject": m.subject,
        "properties": m.properties,
        "correlation_id": m.correlation_id,
        "reply_to": m.reply_to,
        "priority": m.priority,
        "delivery_count": m.delivery_count,
        "enqueued_at": m.enqueued_at,
    }


def received(m: mq.Received) -> dict[str, Any]:
    return {**_common(m), "lock_token": m.lock_token, "locked_until": m.locked_until}


def peeked(m: mq.Peeked) -> dict[str, Any]:
    return {
        **_common(m),
        "state": str(m.state),
        "visible_at": m.visible_at,
        "expires_at": m.expires_at,
        "locked_until": m.locked_until,
        "dead_letter_reason": m.dead_letter_reason,
        "dead_letter_description": m.dead_letter_description,
        "last_error": m.last_error,
        "progress": m.progress,
        "checkpoint": m.checkpoint,
        "cancel_requested_at": m.cancel_requested_at,
    }
