"""Message bodies on the wire.

In: ``body`` is any JSON value (a JSON string is sent as text, anything else as JSON) and
``body_base64`` is raw bytes. Out: ``body`` when the content is JSON (an
``application/json`` or ``+json`` content type that parses) or UTF-8 text (``text/*``),
``body_base64`` otherwise (a body labelled JSON that is not standard JSON, e.g. ``NaN``,
included), so a consumer always gets back what the producer meant and rendering a
response never fails after a claim.
"""

from __future__ import annotations

import json
import math
from typing import Any

import django_mqlite as mq


def from_wire(attrs: dict[str, Any]) -> Any:
    """The value to hand to ``mq.send``: bytes for ``body_base64``, else the JSON value."""
    if "body_base64" in attrs:
        return attrs["body_base64"]
    return attrs.get("body")


def _media(content_type: str | None) -> tuple[str, dict[str, str]]:
    if not content_type:
        return "", {}
    main, *params = content_type.split(";")
    pairs = (p.split("=", 1) for p in params if "=" in p)
    return main.strip().lower(), {k.strip().lower(): v.strip().strip('"').lower() for k, v in pairs}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def strict_json(text: str) -> Any:
    """Standard JSON only: ``NaN``, ``Infinity`` and numbers that overflow a float are
    refused (ValueError), since no JSON client could read them back."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def body_fields(body: bytes, content_type: str | None) -> dict[str, Any]:
    media, params = _media(content_type)
    if media == "application/json" or media.endswith("+json"):
        try:
            return {"body": strict_json(body.decode("utf-8"))}
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
    elif media.startswith("text/") and params.get("charset", "utf-8") in (
        "utf-8",
        "utf8",
        "us-ascii",
    ):
        try:
            return {"body": body.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"body_base64": body}


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
    }
