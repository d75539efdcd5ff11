"""What every batch action shares: entry checks and per-entry failures."""

from __future__ import annotations

import re
from typing import Any

from ..errors import SQSError

MAX_ENTRIES = 10
_ID_RE = re.compile(r"[\w-]{1,80}")


def entries(p: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The request's ``Entries``, after the whole-request checks SQS makes (``kind``,
    the entry's type such as ``SendMessageBatchRequestEntry``, names it in SQS's text)."""
    items = p.get("Entries") or []
    if not isinstance(items, list) or not all(isinstance(e, dict) for e in items):
        raise SQSError("InvalidParameterValue", "Entries must be a list of entries.")
    if not items:
        raise SQSError("EmptyBatchRequest", f"There should be at least one {kind} in the request.")
    if len(items) > MAX_ENTRIES:
        raise SQSError(
            "TooManyEntriesInBatchRequest",
            f"Maximum number of entries per request are {MAX_ENTRIES}. You have sent {len(items)}.",
        )
    seen: set[str] = set()
    for e in items:
        entry_id = e.get("Id")
        if not isinstance(entry_id, str) or not _ID_RE.fullmatch(entry_id):
            raise SQSError(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and "
                "underscores. It can be at most 80 letters long.",
            )
        if entry_id in seen:
            raise SQSError("BatchEntryIdsNotDistinct", f"Id {entry_id} repeated.")
        seen.add(entry_id)
    return items


def failure(entry_id: str, exc: SQSError) -> dict[str, Any]:
    return {"Id": entry_id, "SenderFault": exc.sender, "Code": exc.code, "Message": exc.message}
