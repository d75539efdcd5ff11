"""Turning stored values into something a person can read: durations, ages, times,
message bodies. Pure functions, no database access."""

from __future__ import annotations

import datetime as dt
import json
import string
from typing import Any

from django.contrib.admin.utils import display_for_value
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..engine.clock import from_ms
from ..engine.rendering import body_view, unicode_ok

#: How much of a body the detail page renders; the rest is summarised by its size.
DETAIL_PREVIEW_BYTES = 16 * 1024
#: How much of a body a changelist row shows (and fetches: see ``body_head``).
LIST_PREVIEW_BYTES = 120
#: How many bytes a binary body's hex dump shows on the detail page.
HEX_PREVIEW_BYTES = 512

_PRINTABLE = set(string.printable)
_NOT_JSON = object()


def duration(ms: int | None, *, unset: str = "—") -> str:
    """``90_000`` → ``"1m 30s"``; None → ``unset``; negative → ``"unbounded"``."""
    if ms is None:
        return unset
    if ms < 0:
        return "unbounded"
    if ms < 1000:
        return f"{ms}ms"
    seconds, rest_ms = divmod(ms, 1000)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            count, seconds = divmod(seconds, size)
            parts.append(f"{count}{unit}")
    if seconds or rest_ms:
        parts.append(f"{seconds + rest_ms / 1000:g}s")
    return " ".join(parts[:2])


def age(seconds: float | None) -> str:
    """An age in seconds, as the two largest units (``"3m 12s"``)."""
    if seconds is None:
        return "—"
    return duration(round(seconds) * 1000)


def when(ms: int | None) -> dt.datetime | None:
    """An epoch-millisecond column as an aware datetime (the admin localises it)."""
    return None if ms is None else from_ms(ms)


def stamp(ms: int | None) -> str:
    """An epoch-millisecond column as the admin shows datetimes (localised, in the
    current time zone). A string, so list cells and read-only detail fields agree."""
    return str(display_for_value(when(ms), "—"))


def human_size(n: int) -> str:
    """``1536`` → ``"1.5 KiB"``."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _as_text(data: bytes, content_type: str | None) -> str | None:
    """The body as text when it is (or claims to be) text; None for binary."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # A cut in the middle of a multi-byte character is still text.
        try:
            text = data[:-3].decode("utf-8") if len(data) > 3 else ""
        except UnicodeDecodeError:
            return None
        if not text:
            return None
    ctype = (content_type or "").lower()
    if ctype.startswith("text/") or "json" in ctype or "xml" in ctype:
        return text
    if all(c in _PRINTABLE or c.isprintable() for c in text):
        return text
    return None


def hexdump(data: bytes) -> str:
    """Classic 16-bytes-a-line hex dump with an ASCII column."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<47}  {ascii_}")
    return "\n".join(lines)


def _json_view(body: bytes, content_type: str | None) -> Any:
    """The body's JSON value when ``body_view`` (the rule every reader shares) shows it
    as JSON, else ``_NOT_JSON``. An unlabelled body that starts like JSON is tried as
    JSON too (a person reading the page wants it pretty)."""
    if not content_type and body.lstrip()[:1] in (b"{", b"["):
        content_type = "application/json"
    view = body_view(body, content_type)
    return view.value if view.kind == "json" else _NOT_JSON


def body_detail(body: bytes, content_type: str | None) -> SafeString:
    """The detail page's body: pretty JSON, text, or a hex dump; large bodies truncated.
    Total: a body that is not strict JSON (e.g. stored by an older version) is text."""
    total = len(body)
    head = body[:DETAIL_PREVIEW_BYTES]
    truncated = total > len(head)
    kind = "text"
    rendered: str | None = None
    # The whole body is parsed (bodies are capped at MAX_BODY_BYTES); only the
    # rendering is cut.
    value = _json_view(body, content_type)
    if value is not _NOT_JSON:
        rendered = json.dumps(value, indent=2, ensure_ascii=False)
        kind = "json"
        truncated = len(rendered) > DETAIL_PREVIEW_BYTES
        rendered = rendered[:DETAIL_PREVIEW_BYTES]
    if rendered is None:
        rendered = _as_text(head, content_type)
    if rendered is None:
        kind = "binary"
        rendered = hexdump(head[:HEX_PREVIEW_BYTES])
        truncated = total > HEX_PREVIEW_BYTES
    note = f"{kind}, {human_size(total)}" + (", truncated" if truncated else "")
    return format_html(
        '<div class="mqlite-body" data-kind="{}"><p class="help">{}</p>'
        '<pre style="white-space: pre-wrap; max-height: 40em; overflow: auto">{}</pre></div>',
        kind,
        note,
        rendered,
    )


def body_summary(head: bytes, total: int, content_type: str | None) -> str:
    """One line for a changelist cell, from the first bytes of the body and its size."""
    text = _as_text(head, content_type)
    if text is None:
        return f"<binary {human_size(total)}> " + head[:24].hex(" ")
    line = " ".join(text.split())
    if total > len(head) or len(line) > 80:
        line = line[:80] + "…"
    return line


def json_value(value: Any) -> str:
    """A stored JSON value (a handler's progress or checkpoint) for the detail page, as
    ``properties`` shows JSON; "—" for none."""
    if value is None:
        return "—"
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return text if unicode_ok(text) else json.dumps(value, indent=2, sort_keys=True)


def properties(value: Any) -> str:
    """A message's properties as JSON for the detail page. Non-ASCII text is shown as
    it is, unless the value holds a lone surrogate (stored by an older version), which
    is then shown escaped instead of failing the page."""
    if not value:
        return "—"
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return text if unicode_ok(text) else json.dumps(value, indent=2, sort_keys=True)
