"""Admission: what may be stored as a message, decided once, for every surface.

Every write of a new message (``send``, ``send_batch``, the one-statement send, and through
them the HTTP API, the SQS endpoint, the admin, the CLI and the Tasks backend) builds its
row with ``prepare.validate``, which takes body, content type, properties and text fields
from here. The rule: **a stored message renders on every reading surface**, so whatever
could not is an ``InvalidArgumentError`` before anything is written.

- A body labelled JSON (``application/json`` or any ``+json`` type) is strict JSON: UTF-8,
  no ``NaN``/``Infinity`` or numbers that overflow a float, no lone surrogate (raw or as a
  ``\\ud800`` escape), at most ``MAX_JSON_DEPTH`` levels of nesting. A Python value is
  encoded here (``json.dumps``, ``allow_nan=False``) and checked without being re-parsed.
  Other bodies are bytes as given (a ``str`` must encode to UTF-8).
- Properties are a JSON object of strict JSON (as above, and no NUL: PostgreSQL's ``jsonb``
  refuses ``\\u0000``), at most ``MAX_PROPERTIES_DEPTH`` deep and ``MAX_PROPERTIES_BYTES``
  encoded. A property the SQS endpoint would render as a message attribute (a dict with a
  ``DataType`` and a ``StringValue``/``BinaryValue``/``StringListValues``/``BinaryListValues``)
  must be a valid attribute (``attribute_problem``).
- Text fields (subject, message_id, group_id, correlation_id, reply_to, content_type) are
  non-empty strings of bounded length that encode to UTF-8 and hold no NUL; a content type
  holds no control character either.
- A unique key is such a text field (at most ``MAX_UNIQUE_KEY`` characters) and comes
  with a conflict policy of ``ON_CONFLICT``; anything else is refused here, not by a surface.
- Settlement diagnostics (a reject's reason and description, an abandon's error) are not
  refused but made storable (``diagnostic``): a lone surrogate or NUL becomes U+FFFD, so a
  consumer that rejects with a strange reason still ends dead-lettered with it readable,
  instead of failing to settle and being redelivered until its deliveries run out.

Paths that copy stored rows (redrive, ``forward_dead_letters_to``, SQS message moves) do
not pass admission again: they copy columns of a row that was admitted when it was
written. Rows older versions stored without these rules are covered by total rendering:
``body_view`` is the one rule every reader uses to decide whether a body is shown as JSON,
and a body it refuses is shown as text or base64, never an error.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from ..conf import current
from ..exceptions import InvalidArgumentError, MessageTooLargeError
from . import arguments, canonical_json, clock
from .attributes import attribute_problem, is_attribute_shaped
from .clock import to_ms
from .prepare import Row
from .rendering import (
    JSON_TYPE,
    MAX_JSON_DEPTH,
    is_json_type,
    json_body_problem,
    text_problem,
    unicode_ok,
)
from .types import OutMessage

#: Nesting depth of properties (the object itself is level 1).
MAX_PROPERTIES_DEPTH = 16
#: Properties travel with every delivery; bound them like a body's other fields.
MAX_PROPERTIES_BYTES = 64 * 1024
MAX_CONTENT_TYPE = 256
TEXT_TYPE = "text/plain; charset=utf-8"

_CONTROL = re.compile("[\x00-\x1f\x7f]")


# -- writing: the message, its body, properties, text fields ---------------------------


def admit(msg: OutMessage, now: int) -> Row:
    """The row for ``msg``, with every check that does not depend on the queue (the
    queue's own rules follow in ``prepare.for_queue``). Every write of a new message
    calls this; InvalidArgumentError or MessageTooLargeError before anything is written."""
    data, content_type = body(msg.body, msg.content_type)
    cap = current().max_body_bytes
    if len(data) > cap:
        raise MessageTooLargeError(f"body is {len(data)} bytes; the cap is {cap}")
    priority = arguments.check_int(msg.priority, "priority", *arguments.PRIORITY_RANGE)
    visible_at = _visible_at(msg, now)
    ttl_ms = arguments.optional_duration_ms(msg.ttl, "ttl") if msg.ttl is not None else None
    if msg.unique_while == "pending" and getattr(msg, "depends_on", None) is not None:
        # A waiting message is outside the pending keys' index: its release could make
        # a second pending holder of the key. Refused until the index takes 'waiting'.
        raise InvalidArgumentError(
            "unique_while='pending' cannot be combined with depends_on (use 'live')"
        )
    return Row(
        body=data,
        content_type=content_type,
        message_id=text(msg.message_id, "message_id"),
        group_id=text(msg.group_id, "group_id"),
        subject=text(msg.subject, "subject", 256),
        properties=properties(msg.properties),
        correlation_id=text(msg.correlation_id, "correlation_id"),
        reply_to=text(msg.reply_to, "reply_to", 256),
        priority=priority,
        visible_at=visible_at,
        ttl_ms=ttl_ms,
        expires_at=None if ttl_ms is None else visible_at + ttl_ms,
        unique_key=unique_key(msg.unique_key, msg.on_conflict, msg.unique_while),
        on_conflict=msg.on_conflict or "skip",
        unique_while=msg.unique_while or "live",
    )


#: The longest ``unique_key`` (the column holds this many characters).
MAX_UNIQUE_KEY = 200
#: What a send may do when its unique key is held by a live message: write nothing
#: (``skip``), overwrite the holder's content (``replace``), or overwrite it and move its
#: visible time to the send's (``debounce``). See ``send``.
ON_CONFLICT = ("skip", "replace", "debounce")
#: How long a message holds its key: while it is live (until completed or dead-lettered)
#: or while it is pending (until first claimed). See ``unique``.
UNIQUE_WHILE = ("live", "pending")


def unique_key(value: object, on_conflict: object, unique_while: object = None) -> str | None:
    """A send's unique key: None, or text of at most ``MAX_UNIQUE_KEY`` characters, with
    a conflict policy from ``ON_CONFLICT`` (None means ``"skip"``) and a window from
    ``UNIQUE_WHILE`` (None means ``"live"``); a policy or window without a key is
    refused rather than ignored."""
    if on_conflict is not None and on_conflict not in ON_CONFLICT:
        raise InvalidArgumentError(
            f"on_conflict must be one of {', '.join(map(repr, ON_CONFLICT))}, not {on_conflict!r}"
        )
    if unique_while is not None and unique_while not in UNIQUE_WHILE:
        raise InvalidArgumentError(
            f"unique_while must be one of {', '.join(map(repr, UNIQUE_WHILE))}, "
            f"not {unique_while!r}"
        )
    if value is None and on_conflict is not None:
        raise InvalidArgumentError("on_conflict needs a unique_key")
    if value is None and unique_while is not None:
        raise InvalidArgumentError("unique_while needs a unique_key")
    return text(value, "unique_key", MAX_UNIQUE_KEY)


def check_message(msg: OutMessage) -> None:
    """Raise what ``send`` of ``msg`` would raise for the message's own fields (the
    queue's rules aside), writing nothing: for a surface that reports each item of a
    batch on its own (SQS ``SendMessageBatch``) before sending the admitted ones."""
    if not isinstance(msg, OutMessage):
        raise InvalidArgumentError("expected an OutMessage")
    admit(msg, clock.now_ms())


def _visible_at(msg: OutMessage, now: int) -> int:
    if msg.delay is not None and msg.scheduled_at is not None:
        raise InvalidArgumentError("pass delay or scheduled_at, not both")
    if msg.delay is not None:
        return now + arguments.duration_ms(msg.delay, "delay")
    if msg.scheduled_at is None:
        return now
    if not isinstance(msg.scheduled_at, dt.datetime) or msg.scheduled_at.tzinfo is None:
        raise InvalidArgumentError("scheduled_at must be an aware datetime")
    visible_at = max(now, to_ms(msg.scheduled_at))
    if visible_at - now > arguments.MAX_DURATION_S * 1000:
        raise InvalidArgumentError("scheduled_at is too far ahead (at most ten years)")
    return visible_at


def body(value: Any, content_type: str | None) -> tuple[bytes, str | None]:
    """The stored bytes and content type of a body: bytes as given; ``str`` as UTF-8
    text; anything else encoded as JSON. A body labelled JSON must be strict JSON."""
    content_type = text(content_type, "content_type", MAX_CONTENT_TYPE)
    if content_type is not None and _CONTROL.search(content_type):
        raise InvalidArgumentError("content_type must not contain control characters")
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
    elif isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgumentError("body holds a lone surrogate (not valid Unicode)") from None
        content_type = content_type or TEXT_TYPE
    else:
        return _encode_json(value), content_type or JSON_TYPE
    if is_json_type(content_type):
        problem = json_body_problem(data)
        if problem is not None:
            raise InvalidArgumentError(f"body is labelled {content_type!r} but {problem}")
    return data, content_type


def _encode_json(value: Any) -> bytes:
    try:
        encoded = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"body is not bytes, str or JSON-serializable: {exc}") from None
    problem = text_problem(encoded, value, MAX_JSON_DEPTH, nul=False)
    if problem is not None:
        raise InvalidArgumentError(f"body {problem}")
    return encoded.encode("ascii")  # ensure_ascii: the text is ASCII


def properties(value: Any) -> str | None:
    """The stored JSON text of a message's properties (None for none)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArgumentError("properties must be a dict")
    try:
        encoded = canonical_json.dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"properties are not JSON-serializable: {exc}") from None
    if len(encoded) > MAX_PROPERTIES_BYTES:
        raise InvalidArgumentError(f"properties are larger than {MAX_PROPERTIES_BYTES} bytes")
    problem = text_problem(encoded, value, MAX_PROPERTIES_DEPTH, nul=True)
    if problem is not None:
        raise InvalidArgumentError(f"properties: a value {problem}")
    for name, prop in value.items():
        if isinstance(prop, dict) and is_attribute_shaped(prop):
            problem = attribute_problem(prop)
            if problem is not None:
                raise InvalidArgumentError(
                    f"property {name!r} has the shape of an SQS message attribute but {problem}"
                )
    return encoded


#: Nesting a stored result may have (a reader's ``json.loads`` recurses once a level).
MAX_RESULT_DEPTH = 512


def result_json(value: Any, what: str = "result") -> str:
    """The JSON text of a value stored beside a message (a task's result): strict JSON
    that PostgreSQL's ``jsonb`` and every reader take back, so no NUL and no lone
    surrogate; else InvalidArgumentError. A value JSON cannot encode raises what
    ``json.dumps`` raises. (A Tasks runner fails that one task with either, instead of
    failing the completion that would carry it.)"""
    encoded = canonical_json.dumps(value)  # what JSON cannot encode raises as json.dumps does
    problem = text_problem(encoded, value, MAX_RESULT_DEPTH, nul=True)
    if problem is not None:
        raise InvalidArgumentError(f"{what} {problem}")
    return encoded


def text(value: object, what: str, max_len: int = arguments.MAX_KEY_LEN) -> str | None:
    """A text field: None, or a non-empty string of at most ``max_len`` characters that
    encodes to UTF-8 and holds no NUL."""
    checked = arguments.check_str(value, what, max_len)
    if checked is not None and (not unicode_ok(checked) or "\x00" in checked):
        raise InvalidArgumentError(f"{what} must be valid Unicode text without NUL characters")
    return checked


def diagnostic(value: str) -> str:
    """A diagnostic string (a reject's reason or description, an abandon's error) made
    storable: each lone surrogate and NUL becomes U+FFFD; valid text is returned as is."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    if unicode_ok(value):
        return value
    # Through UTF-16 so that a surrogate pair written as two code points stays one
    # character and only the lone ones are replaced.
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
