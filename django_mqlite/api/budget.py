"""Responses bounded by bytes as well as by count (``MQLITE["API_MAX_RESPONSE_BYTES"]``).

A message may carry a body of up to ``MAX_BODY_BYTES`` (base64 makes it a third
larger) and properties of up to 64 KiB, so a count cap alone would let one request
build hundreds of megabytes. The budget is known before anything is claimed or loaded:

- receive and receive-deferred hand the engine a byte budget (``claim_bytes``: three
  quarters of the response budget, room for base64's third), and the engine claims only
  the leading messages whose stored size fits, always at least one; the rest are never
  touched (still active, no delivery counted). The view then renders what it claimed,
  and a peek-lock receive still hands back, unburnt, any message whose rendering came
  out larger than its stored size allowed for (a text body full of characters JSON
  escapes); the other receives return all they claimed rather than lose a message.
- peek reads in small pages and stops at the budget.

One message is always returned, and a cut list says ``"truncated": true``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import django_mqlite as mq

from ..conf import current

PEEK_PAGE = 32
#: The most a message's properties may take (the engine's admission cap), and room for
#: its other fields: with the body cap, the largest a stored message can count for.
PROPERTIES_ALLOWANCE = 64 * 1024
FIELDS_ALLOWANCE = 16 * 1024


def budget() -> int:
    return current().api_max_response_bytes


def claim_bytes() -> int:
    """The stored bytes (bodies and properties) a receive may claim for one response."""
    return max(1, budget() * 3 // 4)


def largest_stored() -> int:
    return current().max_body_bytes + PROPERTIES_ALLOWANCE + FIELDS_ALLOWANCE


def stored_size(m: mq.Received) -> int:
    return len(m.body) + len(json.dumps(m.properties, separators=(",", ":")))


def may_be_cut(got: list[mq.Received], asked: int) -> bool:
    """Whether the byte budget may have stopped a claim short of ``asked``: fewer came
    back, and what did came within one largest message of the budget (had it not, the
    next candidate would have fitted, so there was none)."""
    if not got or len(got) >= asked:
        return False
    return sum(stored_size(m) for m in got) > claim_bytes() - largest_stored()


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
