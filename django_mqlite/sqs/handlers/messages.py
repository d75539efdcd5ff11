"""Sending and receiving: SendMessage(Batch) and ReceiveMessage."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import django_mqlite as mq

from ...tasks.front import remote_message
from .. import md5, receipts, store
from ..context import Context, integer, text
from ..errors import SQSError, from_mqlite, invalid, missing
from ..store import QueueInfo
from . import batches, receiving
from . import message_attributes as ma

# Characters SQS accepts in a body: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000+.
_BAD_CHARS = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ID_RE = re.compile(r"[\x21-\x7e]{1,128}")
MAX_BATCH_BYTES = 1024 * 1024
# The lease taken for a receive with VisibilityTimeout=0, handed back at once.
_ZERO_VISIBILITY_LEASE_S = 30


@dataclass
class Prepared:
    out: mq.OutMessage
    size: int
    reply: dict[str, Any]


def prepare(info: QueueInfo, p: dict[str, Any], http_trace: str | None = None) -> Prepared:
    """A checked message to send, and the fields of its reply that do not need its seq.
    ``http_trace`` is the request's ``X-Amzn-Trace-Id`` header: as on AWS, the message's
    ``AWSTraceHeader`` when it has no such system attribute of its own."""
    body = text(p, "MessageBody", required=True)
    if _BAD_CHARS.search(body):
        raise SQSError("InvalidMessageContents", "Invalid characters found in the message body.")
    attrs = ma.check(p.get("MessageAttributes"))
    trace = ma.trace_header(p.get("MessageSystemAttributes"))
    stored_trace = trace if trace is not None else http_trace
    size = len(body.encode("utf-8")) + ma.size(attrs)
    cap = info.number("MaximumMessageSize")
    if size > cap:
        raise invalid(
            f"One or more parameters are invalid. Reason: Message must be shorter than {cap} bytes."
        )
    group, dedup = fifo_ids(info, p)
    if info.fifo and dedup is None:
        # Content-based deduplication: SQS's deduplication id is then the SHA-256 of the
        # body (hex), so an explicit id equal to it is the same id, and a receive reports it.
        dedup = hashlib.sha256(body.encode("utf-8")).hexdigest()
    delay = info.number("DelaySeconds")
    if p.get("DelaySeconds") not in (None, ""):
        asked = integer(p, "DelaySeconds", 0, 900)
        if info.fifo and asked != 0:
            # A FIFO message takes the queue's delay; an explicit 0 is accepted (as SQS).
            raise invalid(
                f"Value {asked} for parameter DelaySeconds is invalid. Reason: The request "
                "include parameter that is not valid for this queue type."
            )
        if not info.fifo:
            delay = asked
    out = mq.OutMessage(
        body,
        group_id=group,
        message_id=dedup,
        properties=ma.to_properties(attrs, stored_trace),
        delay=delay or None,
    )
    try:
        out = remote_message(info.name, out)  # a task call to an open task queue: signed
        # The engine's admission, per entry, so one bad entry of a batch fails alone.
        mq.admission.check_message(out)
    except mq.MQLiteError as exc:
        raise from_mqlite(exc) from None
    reply: dict[str, Any] = {"MD5OfMessageBody": md5.of_body(body)}
    if attrs:
        reply["MD5OfMessageAttributes"] = md5.of_attributes(attrs)
    if trace is not None:
        system = {"AWSTraceHeader": {"DataType": "String", "StringValue": trace}}
        reply["MD5OfMessageSystemAttributes"] = md5.of_attributes(system)
    return Prepared(out, size, reply)


def _http_trace(ctx: Context) -> str | None:
    """An X-Ray ``X-Amzn-Trace-Id`` request header (``Root=…``), which AWS keeps as the
    ``AWSTraceHeader`` of the messages of a send that give none themselves."""
    header = ctx.request.headers.get("X-Amzn-Trace-Id", "")
    return header if header.startswith("Root=") and len(header) <= 1024 else None


def fifo_ids(info: QueueInfo, p: dict[str, Any]) -> tuple[str | None, str | None]:
    """The message's group and deduplication ids, checked against the queue's type."""
    group = _identifier(p, "MessageGroupId")
    dedup = _identifier(p, "MessageDeduplicationId")
    if info.fifo:
        if group is None:
            raise missing("MessageGroupId")
        if dedup is None and not info.queue.content_dedup:
            raise invalid(
                "The queue should either have ContentBasedDeduplication enabled or "
                "MessageDeduplicationId provided explicitly"
            )
    elif dedup is not None:
        raise invalid("MessageDeduplicationId is only valid for FIFO queues.")
    return group, dedup


def _entry_size(entry: dict[str, Any]) -> int:
    """What an entry counts towards the batch's 1 MiB, as sent (body and attributes;
    an entry whose attributes are not valid fails on its own, counting its body)."""
    body = entry.get("MessageBody")
    size = len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0
    try:
        return size + ma.size(ma.check(entry.get("MessageAttributes")))
    except SQSError:
        return size


def _identifier(p: dict[str, Any], name: str) -> str | None:
    value = text(p, name)
    if not value:
        return None
    if not _ID_RE.fullmatch(value):
        raise invalid(f"Value {value} for parameter {name} is invalid.")
    return value


def _sent(info: QueueInfo, prepared: Prepared, seq: int) -> dict[str, Any]:
    reply = {"MessageId": receipts.message_id(seq), **prepared.reply}
    if info.fifo and seq > 0:
        reply["SequenceNumber"] = str(seq)
    return reply


def send_message(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "send")
    prepared = prepare(info, p, _http_trace(ctx))
    # A batch of one: a FIFO resend with another body is then dropped, as SQS does,
    # instead of failing as a single native send would.
    (seq,) = mq.send_batch(info.name, [prepared.out])
    return _sent(info, prepared, seq)


def send_message_batch(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "send")
    entries = batches.entries(p, "SendMessageBatchRequestEntry")
    # Whole-request errors, as SQS makes them, before any entry is sent: the size of the
    # batch as sent, and on a FIFO queue an entry without its group or deduplication id.
    total = sum(_entry_size(entry) for entry in entries)
    if total > MAX_BATCH_BYTES:
        raise SQSError(
            "BatchRequestTooLong",
            f"Batch requests cannot be longer than {MAX_BATCH_BYTES} bytes. "
            f"You have sent {total} bytes.",
        )
    if info.fifo:
        for entry in entries:
            fifo_ids(info, entry)
    ok: list[tuple[str, Prepared]] = []
    failed: list[dict[str, Any]] = []
    for entry in entries:
        try:
            ok.append((entry["Id"], prepare(info, entry, _http_trace(ctx))))
        except SQSError as exc:
            failed.append(batches.failure(entry["Id"], exc))
    seqs = mq.send_batch(info.name, [prep.out for _, prep in ok]) if ok else []
    successful = [
        {"Id": entry_id, **_sent(info, prep, seq)}
        for (entry_id, prep), seq in zip(ok, seqs, strict=True)
    ]
    return {"Successful": successful, "Failed": failed}


def receive_message(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    ask = receiving.parse(info, p)  # every argument, before anything is claimed
    zero = ask.visibility == 0 or (ask.visibility is None and info.queue.lock_duration < 1)
    got = mq.receive(
        info.name,
        max_messages=ask.count,
        wait=ask.wait,
        lock_duration=_ZERO_VISIBILITY_LEASE_S if zero else ask.visibility,
        attempt_id=ask.attempt_id,
        attempt_scope=receiving.attempt_scope(ctx),
        max_bytes=receiving.max_bytes(),
        # SQS returns as many messages of one group as it can, in order.
        group_batch=info.fifo,
    )
    if zero:
        # Visible again at once: the receive still counts towards maxReceiveCount.
        for m in got:
            assert m.lock_token is not None
            try:
                mq.abandon(info.name, m.seq, m.lock_token)
            except mq.LockLostError:
                pass
    now_ms = mq.clock.now_ms()
    # A dead letter forwarded here shows its source and keeps counting its receives.
    sources = store.forwarded(info.name, [m.seq for m in got])
    out = [
        _received(ctx, info, m, ask.system, ask.attributes, now_ms, sources.get(m.seq)) for m in got
    ]
    return {"Messages": out} if out else {}


def _received(
    ctx: Context,
    info: QueueInfo,
    m: mq.Received,
    system: frozenset[str],
    wanted: list[str],
    now_ms: int,
    source: tuple[str, int] | None = None,
) -> dict[str, Any]:
    body = m.body.decode("utf-8", errors="replace")
    assert m.lock_token is not None
    msg: dict[str, Any] = {
        "MessageId": receipts.message_id(m.seq),
        "ReceiptHandle": receipts.encode(m.seq, m.lock_token),
        "MD5OfBody": md5.of_body(body),
        "Body": body,
    }
    attrs = _system_attributes(ctx, info, m, now_ms)
    if source is not None:
        attrs["DeadLetterQueueSourceArn"] = ctx.arn(source[0])
        attrs["ApproximateReceiveCount"] = str(m.delivery_count + source[1])
    if "All" not in system:
        attrs = {k: v for k, v in attrs.items() if k in system}
    if attrs:
        msg["Attributes"] = attrs
    chosen = ma.select(ma.from_properties(m.properties), wanted)
    if chosen:
        msg["MessageAttributes"] = chosen
        msg["MD5OfMessageAttributes"] = md5.of_attributes(chosen)
    return msg


def _system_attributes(
    ctx: Context, info: QueueInfo, m: mq.Received, now_ms: int
) -> dict[str, str]:
    sent = str(int(m.enqueued_at.timestamp() * 1000))
    attrs = {
        "SenderId": ctx.caller.access_key,
        "SentTimestamp": sent,
        "ApproximateReceiveCount": str(m.delivery_count),
        # Exact on a first receive; the send time on later ones (not recorded here).
        "ApproximateFirstReceiveTimestamp": str(now_ms) if m.delivery_count <= 1 else sent,
    }
    if m.group_id is not None:
        attrs["MessageGroupId"] = m.group_id
    if info.fifo:
        attrs["SequenceNumber"] = str(m.seq)
        if m.message_id is not None:
            attrs["MessageDeduplicationId"] = m.message_id
    trace = m.properties.get(ma.TRACE_KEY)
    if isinstance(trace, str):
        attrs["AWSTraceHeader"] = trace
    return attrs
