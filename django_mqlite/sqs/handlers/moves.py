"""Message move tasks: moving a dead-letter queue's messages back to a source queue.

A task runs in a background thread of the process that started it, in chunks: each
chunk is received from the dead-letter queue, then sent to the destination and deleted
from the dead-letter queue in one transaction, so a message is moved exactly once or
stays where it was. Tasks are recorded on the dead-letter queue (the last ten); a task
checks its record before every chunk, so CancelMessageMoveTask from any process stops
it, and a task whose record has not moved for a minute is reported as failed (its
process stopped).

A task never moves a message twice. It moves only the messages that were in the
dead-letter queue when it started (seq at most the highest seq there then): a moved
message is a new message with a higher seq, so one that dead-letters back into the
source while the task runs is handed back untouched (its delivery uncounted) and left
for a later task. The destination is never the source itself.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from django.db import close_old_connections, connections, transaction

import django_mqlite as mq

from .. import access, store
from ..context import Context, integer, load, text
from ..errors import SQSError, invalid

CHUNK = 100
STALE_AFTER_MS = 60_000


def _resend(m: mq.Received, dest: mq.Queue) -> mq.OutMessage:
    # A fresh dedup id: the original one may still be inside the destination's window
    # (it came from there), and a move must never be dropped as a duplicate.
    dedup = m.message_id is not None or dest.content_dedup
    return mq.OutMessage(
        m.body,
        content_type=m.content_type,
        properties=m.properties or None,
        group_id=m.group_id,
        message_id=f"moved-{m.seq}-{uuid.uuid4().hex}" if dedup else None,
        subject=m.subject,
        correlation_id=m.correlation_id,
        reply_to=m.reply_to,
        priority=m.priority,
    )


def _move_chunk(source: str, dest: mq.Queue, size: int, last_seq: int) -> int | None:
    """Move up to ``size`` messages with seqs up to ``last_seq``; None when none is left."""
    got = mq.receive(source, max_messages=size, lock_duration=300)
    late = [m for m in got if m.seq > last_seq]
    if late:  # arrived after the task started (a moved message among them): not ours
        mq.release(source, [(m.seq, m.lock_token or "") for m in late])
    ours = [m for m in got if m.seq <= last_seq]
    if not ours:
        return None
    with transaction.atomic():
        mq.send_batch(dest.name, [_resend(m, dest) for m in ours])
        done = mq.complete_batch(source, [(m.seq, m.lock_token or "") for m in ours])
    return sum(done)


def run(source: str, dest: mq.Queue, handle: str, per_second: int | None, last_seq: int) -> None:
    """Move until no message of the source older than the task is left, or the task is
    cancelled (the task's thread)."""
    size = min(CHUNK, per_second or CHUNK)
    moved = 0
    status, reason = "COMPLETED", None
    try:
        while store.move_task_status(source, handle) == "RUNNING":
            started = time.monotonic()
            n = _move_chunk(source, dest, size, last_seq)
            if n is None:
                break
            moved += n
            store.update_move_task(source, handle, ApproximateNumberOfMessagesMoved=moved)
            if per_second:
                time.sleep(max(0.0, n / per_second - (time.monotonic() - started)))
        else:
            status = "CANCELLED"
    except Exception as exc:
        status, reason = "FAILED", f"{type(exc).__name__}: {exc}"
    finally:
        fields: dict[str, Any] = {"Status": status, "ApproximateNumberOfMessagesMoved": moved}
        if reason is not None:
            fields["FailureReason"] = reason
        store.update_move_task(source, handle, **fields)
        connections.close_all()


def start_message_move_task(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    source_arn = text(p, "SourceArn", required=True)
    source = ctx.name_from_arn(source_arn, "SourceArn")
    ctx.allow("manage", source)
    load(source)
    feeders = sorted(q.name for q in mq.list_queues() if q.forward_dead_letters_to == source)
    if not feeders:
        raise invalid("Source queue must be configured as a Dead Letter Queue.")
    dest_arn = text(p, "DestinationArn")
    if dest_arn:
        dest_name = ctx.name_from_arn(dest_arn, "DestinationArn")
    elif len(feeders) == 1:
        dest_name = feeders[0]
    else:
        raise invalid("Several queues dead-letter into this one: give a DestinationArn.")
    if dest_name == source:
        raise invalid("The destination of a message move task cannot be its source queue.")
    ctx.allow("send", dest_name)
    dest = load(dest_name).queue
    per_second = None
    if p.get("MaxNumberOfMessagesPerSecond") not in (None, ""):
        per_second = integer(p, "MaxNumberOfMessagesPerSecond", 1, 500)
    handle = uuid.uuid4().hex
    last_seq = store.highest_seq(source)
    task: dict[str, Any] = {
        "TaskHandle": handle,
        "Status": "RUNNING",
        "SourceArn": source_arn,
        "DestinationArn": ctx.arn(dest.name),
        "ApproximateNumberOfMessagesMoved": 0,
        "ApproximateNumberOfMessagesToMove": int(mq.stats(source).counts.get("active", 0)),
        "StartedTimestamp": mq.clock.now_ms(),
    }
    if per_second is not None:
        task["MaxNumberOfMessagesPerSecond"] = per_second
    if not store.add_move_task(source, task):
        raise SQSError("UnsupportedOperation", "A move task is already running on this queue.")
    threading.Thread(
        target=_thread_main, args=(source, dest, handle, per_second, last_seq), daemon=True
    ).start()
    return {"TaskHandle": handle}


def _thread_main(
    source: str, dest: mq.Queue, handle: str, per_second: int | None, last_seq: int
) -> None:
    close_old_connections()
    run(source, dest, handle, per_second, last_seq)


def _reported(task: dict[str, Any], now_ms: int) -> dict[str, Any]:
    shown = {k: v for k, v in task.items() if k != "UpdatedMs"}
    if (
        task["Status"] in ("RUNNING", "CANCELLING")
        and now_ms - task.get("UpdatedMs", 0) > STALE_AFTER_MS
    ):
        shown["Status"] = "FAILED"
        shown["FailureReason"] = "The process running the task stopped."
    return shown


def list_message_move_tasks(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    source_arn = text(p, "SourceArn", required=True)
    source = ctx.name_from_arn(source_arn, "SourceArn")
    ctx.allow("read", source)
    load(source)
    limit = integer(p, "MaxResults", 1, store.KEEP_MOVE_TASKS, 1)
    now_ms = mq.clock.now_ms()
    results = [_reported(t, now_ms) for t in store.move_tasks(source)[:limit]]
    for task in results:
        # A destination is a queue of its own: named only to a caller who may read it.
        dest = task.get("DestinationArn")
        if isinstance(dest, str) and not access.allowed(
            ctx.user, "read", ctx.name_from_arn(dest, "DestinationArn")
        ):
            del task["DestinationArn"]
    return {"Results": results}


def cancel_message_move_task(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    handle = text(p, "TaskHandle", required=True)
    source = store.find_move_task(handle)
    if source is None:
        raise SQSError("ResourceNotFoundException", "The specified task does not exist.")
    ctx.allow("manage", source)
    task = store.cancel_move_task(source, handle)
    if task is None:
        raise SQSError("ResourceNotFoundException", "The task is not running.")
    return {"ApproximateNumberOfMessagesMoved": task["ApproximateNumberOfMessagesMoved"]}
