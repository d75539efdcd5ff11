"""ReceiveMessage's arguments, read and checked in full before anything is claimed.

A bad request (``"All"`` as a string, ``[1]``, an unknown attribute name, a count out of
range) is a 400 that leaves every message as it was: nothing locked, no delivery
counted. The attempt id is private to the access key and its user, and the claim is
bounded by bytes as well as by count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...conf import current
from ..context import Context, integer, text
from ..errors import SQSError, invalid
from ..store import QueueInfo
from . import message_attributes as ma
from . import queue_attributes as qa

#: The message system attributes a receive can ask for (``All`` for every one).
SYSTEM_NAMES = frozenset(
    {
        "All",
        "SenderId",
        "SentTimestamp",
        "ApproximateReceiveCount",
        "ApproximateFirstReceiveTimestamp",
        "SequenceNumber",
        "MessageDeduplicationId",
        "MessageGroupId",
        "AWSTraceHeader",
        "DeadLetterQueueSourceArn",
    }
)
#: ``AttributeNames`` (deprecated) is typed as queue attribute names in the SQS model
#: and used by clients for the system ones: either kind is accepted there.
LEGACY_NAMES = SYSTEM_NAMES | set(qa.SETTABLE) | set(qa.READ_ONLY) | {"FifoQueue"}
MAX_NAMES = 100
_ATTRIBUTE_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,256}")
_ATTEMPT_RE = re.compile(r"[\x21-\x7e]{1,128}")


@dataclass(frozen=True)
class ReceiveRequest:
    count: int
    wait: int
    visibility: int | None
    attempt_id: str | None
    system: frozenset[str]
    attributes: list[str]


def _names(p: dict[str, Any], name: str) -> list[str]:
    value = p.get(name)
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_NAMES
        or not all(isinstance(v, str) and 0 < len(v) <= 256 for v in value)
    ):
        raise invalid(f"Value for parameter {name} must be a list of attribute names.")
    return value


def _system(p: dict[str, Any]) -> frozenset[str]:
    legacy = _names(p, "AttributeNames")
    system = _names(p, "MessageSystemAttributeNames")
    for names, known in ((legacy, LEGACY_NAMES), (system, SYSTEM_NAMES)):
        for n in names:
            if n not in known:
                raise SQSError("InvalidAttributeName", f"Unknown Attribute {n}.")
    return frozenset(legacy) | frozenset(system)


def _attributes(p: dict[str, Any]) -> list[str]:
    names = _names(p, "MessageAttributeNames")
    for n in names:
        stem = n[:-2] if n.endswith(".*") else n
        if n not in ma.EVERY and not _ATTRIBUTE_NAME_RE.fullmatch(stem):
            raise invalid(f"Value {n} for parameter MessageAttributeNames is invalid.")
    return names


def parse(info: QueueInfo, p: dict[str, Any]) -> ReceiveRequest:
    count = integer(p, "MaxNumberOfMessages", 1, 10, 1)
    wait = integer(p, "WaitTimeSeconds", 0, 20, info.number("ReceiveMessageWaitTimeSeconds"))
    visibility: int | None = None
    if p.get("VisibilityTimeout") not in (None, ""):
        visibility = integer(p, "VisibilityTimeout", 0, 43200)
    attempt = text(p, "ReceiveRequestAttemptId")
    if attempt and not _ATTEMPT_RE.fullmatch(attempt):
        raise invalid(
            "ReceiveRequestAttemptId is 1 to 128 characters of letters, digits and punctuation."
        )
    return ReceiveRequest(
        count=count,
        wait=wait,
        visibility=visibility,
        attempt_id=attempt or None,
        system=_system(p),
        attributes=_attributes(p),
    )


def attempt_scope(ctx: Context) -> str:
    """Whose ``ReceiveRequestAttemptId`` it is: the access key and its bound user."""
    return f"sqs:{ctx.caller.access_key}:{ctx.caller.username or ''}"


def max_bytes() -> int:
    """The stored bytes (bodies and attributes) one ReceiveMessage may claim."""
    return max(1, current().api_max_response_bytes)
