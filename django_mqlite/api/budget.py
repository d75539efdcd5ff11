"""Responses bounded by bytes as well as by count (``MQLITE["API_MAX_RESPONSE_BYTES"]``).

A message may carry a body of up to ``MAX_BODY_BYTES`` (base64 makes it a third
larger) and properties of up to 64 KiB, so a count cap alone would let one request
build hundreds of megabytes. Each route adds messages until the next would pass the
budget (one message is always returned) and marks the response ``"truncated": true``:

- peek reads in small pages and stops at the budget;
- receive (peek-lock) claims what was asked and hands back, unburnt, the messages that
  do not fit (``mq.release``), so they are delivered to the next receive;
- receive-and-delete, a receive with ``attempt_id`` and receive-deferred cannot hand
  anything back, so they claim at most what fits even if every message were the
  largest allowed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from ..conf import mqlite_settings

#: Room for a message's other fields (ids, subject, properties, timestamps).
FIELDS_ALLOWANCE = 80 * 1024
PEEK_PAGE = 32


def budget() -> int:
    return int(mqlite_settings.API_MAX_RESPONSE_BYTES)


def worst_case() -> int:
    """The largest one rendered message can be."""
    return int(mqlite_settings.MAX_BODY_BYTES) * 4 // 3 + 4 + FIELDS_ALLOWANCE


def safe_count(asked: int) -> int:
    """How many messages fit the budget even if each is the largest allowed."""
    return max(1, min(asked, budget() // worst_case()))


def size(item: dict[str, Any]) -> int:
    return len(json.dumps(item, default=str, separators=(",", ":")))


def fill(items: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The leading items that fit the budget (at least one), and how many were left."""
    out: list[dict[str, Any]] = []
    used = 0
    items = list(items)
    for item in items:
        n = size(item)
        if out and used + n > budget():
            break
        out.append(item)
        used += n
    return out, len(items) - len(out)


def peek_pages(
    fetch: Callable[[int, int], list[Any]],
    render: Callable[[Any], dict[str, Any]],
    limit: int,
    after_seq: int,
) -> tuple[list[dict[str, Any]], bool]:
    """Peek page by page (``fetch(limit, after_seq)``) until ``limit`` or the budget."""
    out: list[dict[str, Any]] = []
    used = 0
    while len(out) < limit:
        asked = min(PEEK_PAGE, limit - len(out))
        page = fetch(asked, after_seq)
        for m in page:
            item = render(m)
            n = size(item)
            if out and used + n > budget():
                return out, True
            out.append(item)
            used += n
            after_seq = m.seq
        if len(page) < asked:
            break
    return out, False
