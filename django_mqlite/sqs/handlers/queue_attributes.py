"""Queue attributes: SQS names and string values to engine options and stored values,
and back for GetQueueAttributes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import django_mqlite as mq

from ..context import Context, load
from ..errors import SQSError, invalid
from ..store import QueueInfo

#: Numeric attributes the SQS store keeps, with their bounds.
STORED_NUMBERS = {
    "DelaySeconds": (0, 900),
    "MaximumMessageSize": (1024, 1048576),
    "ReceiveMessageWaitTimeSeconds": (0, 20),
}
#: The most a stored text attribute may hold: SQS's quota for a queue's Policy.
MAX_TEXT_BYTES = 8192
#: Attributes kept as given and reported back, without effect here.
STORED_TEXT = (
    "RedriveAllowPolicy",
    "Policy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
    "DeduplicationScope",
    "FifoThroughputLimit",
)
COUNTS = {
    "ApproximateNumberOfMessages": "active",
    "ApproximateNumberOfMessagesNotVisible": "locked",
    "ApproximateNumberOfMessagesDelayed": "scheduled",
}
READ_ONLY = (*COUNTS, "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn")
SETTABLE = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "RedrivePolicy",
    "ContentBasedDeduplication",
    *STORED_NUMBERS,
    *STORED_TEXT,
)
#: Engine options of a queue created through SQS (a retention of four days, expired
#: messages dropped, no dead-lettering until a RedrivePolicy says so).
NO_REDRIVE_COUNT = 10_000
CREATE_DEFAULTS: dict[str, Any] = {
    "lock_duration": 30,
    "default_ttl": 345_600,
    "dead_letter_on_expire": False,
    "max_delivery_count": NO_REDRIVE_COUNT,
    "forward_dead_letters_to": None,
    "dedup_window": 300,
    "content_dedup": False,
}
# Seconds stand for "visible at once": the engine's leases are never zero long.
ZERO_LEASE_S = 0.001


def _int(name: str, value: Any, lo: int, hi: int) -> int:
    try:
        number = int(value) if not isinstance(value, bool | float) else lo - 1
    except (TypeError, ValueError, OverflowError):
        number = lo - 1
    if not lo <= number <= hi:
        raise SQSError("InvalidAttributeValue", f"Invalid value for the parameter {name}.")
    return number


def _bool(name: str, value: Any) -> bool:
    if str(value).lower() not in ("true", "false"):
        raise SQSError("InvalidAttributeValue", f"Invalid value for the parameter {name}.")
    return str(value).lower() == "true"


def parse(
    ctx: Context, name: str, attrs: dict[str, Any], *, creating: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """(engine option changes, stored attribute changes) for the given attributes."""
    engine: dict[str, Any] = {}
    stored: dict[str, str] = {}
    fifo_name = name.endswith(".fifo")
    for key, value in attrs.items():
        if key == "FifoQueue":
            if not creating:
                raise SQSError("InvalidAttributeName", "FifoQueue can only be set at creation.")
            if _bool(key, value) != fifo_name:
                raise invalid("A FIFO queue needs FifoQueue=true and a name ending in .fifo.")
        elif key == "VisibilityTimeout":
            seconds = _int(key, value, 0, 43200)
            engine["lock_duration"] = seconds or ZERO_LEASE_S
        elif key == "MessageRetentionPeriod":
            engine["default_ttl"] = _int(key, value, 60, 1_209_600)
        elif key == "ContentBasedDeduplication":
            if not fifo_name:
                raise SQSError("InvalidAttributeName", f"Unknown Attribute {key}.")
            engine["content_dedup"] = _bool(key, value)
        elif key == "RedrivePolicy":
            engine.update(_redrive(ctx, name, value))
        elif key in STORED_NUMBERS:
            stored[key] = str(_int(key, value, *STORED_NUMBERS[key]))
        elif key in STORED_TEXT:
            if not isinstance(value, str) or len(value.encode("utf-8", "replace")) > MAX_TEXT_BYTES:
                raise SQSError(
                    "InvalidAttributeValue",
                    f"Invalid value for the parameter {key}: a string of at most "
                    f"{MAX_TEXT_BYTES} bytes.",
                )
            if key == "RedriveAllowPolicy":
                _check_allow_policy(value)
            if key == "Policy" and value and policy_document(value) is None:
                raise SQSError("InvalidAttributeValue", "Invalid value for the parameter Policy.")
            stored[key] = value
        else:
            raise SQSError("InvalidAttributeName", f"Unknown Attribute {key}.")
    return engine, stored


def policy_document(value: str) -> dict[str, Any] | None:
    """A ``Policy`` value as a document: a JSON object whose ``Statement``, when given,
    is one statement or a list of them (objects); None for anything else."""
    try:
        document = json.loads(value)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    found = document.get("Statement", [])
    statements = [found] if isinstance(found, dict) else found
    if not isinstance(statements, list) or not all(isinstance(s, dict) for s in statements):
        return None
    return document


def _redrive(ctx: Context, name: str, value: Any) -> dict[str, Any]:
    if value in ("", None):
        return {"forward_dead_letters_to": None, "max_delivery_count": NO_REDRIVE_COUNT}
    try:
        policy = json.loads(value) if isinstance(value, str) else value
        target = ctx.name_from_arn(policy["deadLetterTargetArn"], "deadLetterTargetArn")
        count = _int("maxReceiveCount", policy["maxReceiveCount"], 1, 1000)
    except (ValueError, KeyError, TypeError):
        raise SQSError("InvalidAttributeValue", "Invalid value for RedrivePolicy.") from None
    ctx.allow("read", target)
    try:
        dlq = load(target)
    except SQSError:
        raise invalid("Value for parameter RedrivePolicy is invalid: no such queue.") from None
    if target == name or dlq.fifo != name.endswith(".fifo"):
        raise invalid("The dead-letter queue must be another queue of the same type.")
    _check_allowed_source(ctx, dlq, name)
    return {"forward_dead_letters_to": target, "max_delivery_count": count}


def _check_allow_policy(value: Any) -> None:
    try:
        policy = json.loads(value)
        permission = policy["redrivePermission"]
        sources = policy.get("sourceQueueArns", [])
        ok = permission in ("allowAll", "denyAll", "byQueue") and isinstance(sources, list)
        ok = ok and (permission == "byQueue") == bool(sources) and len(sources) <= 10
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise SQSError("InvalidAttributeValue", "Invalid value for RedriveAllowPolicy.")


def _check_allowed_source(ctx: Context, dlq: QueueInfo, source: str) -> None:
    raw = dlq.attributes.get("RedriveAllowPolicy")
    if not raw:
        return
    policy = json.loads(raw)
    permission = policy["redrivePermission"]
    if permission == "denyAll" or (
        permission == "byQueue" and ctx.arn(source) not in policy.get("sourceQueueArns", [])
    ):
        raise invalid("The dead-letter queue's RedriveAllowPolicy does not allow this queue.")


def render(ctx: Context, info: QueueInfo, names: list[str]) -> dict[str, str]:
    """The requested attributes (``All`` for every one) as SQS strings."""
    known = set(SETTABLE) | set(READ_ONLY) | {"FifoQueue"}
    unknown = [n for n in names if n != "All" and n not in known]
    if unknown:
        raise SQSError("InvalidAttributeName", f"Unknown Attribute {unknown[0]}.")
    wanted = set(known) if "All" in names else set(names)
    q = info.queue
    created_s = int(q.created_at.timestamp())
    out: dict[str, str] = {
        "QueueArn": ctx.arn(q.name),
        "CreatedTimestamp": str(created_s),
        "LastModifiedTimestamp": str(
            created_s if info.modified_ms is None else info.modified_ms // 1000
        ),
        "VisibilityTimeout": str(int(q.lock_duration)),
        # A queue without a time to live keeps messages for ever; SQS's maximum is shown.
        "MessageRetentionPeriod": str(int(q.default_ttl or 1_209_600)),
    }
    out.update({k: info.attribute(k) for k in STORED_NUMBERS})
    # SQS's defaults: SSE-SQS on for a new queue; a FIFO queue deduplicates per queue at
    # the per-queue throughput limit.
    out["SqsManagedSseEnabled"] = "true"
    if info.fifo:
        out.update(DeduplicationScope="queue", FifoThroughputLimit="perQueue")
    out.update({k: v for k, v in info.attributes.items() if k in STORED_TEXT})
    if out.get("Policy") == "":
        del out["Policy"]  # SetQueueAttributes Policy="" removes it, as on SQS
    if q.forward_dead_letters_to is not None:
        out["RedrivePolicy"] = json.dumps(
            {
                "deadLetterTargetArn": ctx.arn(q.forward_dead_letters_to),
                "maxReceiveCount": q.max_delivery_count,
            }
        )
    if info.fifo:
        out["FifoQueue"] = "true"
        out["ContentBasedDeduplication"] = "true" if q.content_dedup else "false"
    if wanted & set(COUNTS):
        counts = mq.stats(q.name).counts
        out.update({k: str(counts.get(state, 0)) for k, state in COUNTS.items()})
    return {k: v for k, v in out.items() if k in wanted}


def matches(info: QueueInfo, engine: dict[str, Any], stored: dict[str, str]) -> bool:
    """Do the queue's settings already equal these (for an idempotent CreateQueue)?"""
    for key, value in engine.items():
        if getattr(info.queue, key) != value:
            return False
    return all(info.attribute(k) == v for k, v in stored.items())


def update_engine(name: str, changes: dict[str, Any]) -> None:
    """Change some of a queue's engine options, leaving the others as they are."""
    if not changes:
        return
    update = getattr(mq, "update_queue", None)
    if update is not None:
        update(name, **changes)
        return
    current = dataclasses.asdict(mq.get_queue(name))
    options = {k: v for k, v in current.items() if k not in ("name", "created_at")}
    options["ordering"] = str(options["ordering"])
    mq.create_queue(name, **{**options, **changes})
