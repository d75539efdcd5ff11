"""Message move tasks: moving a dead-letter queue's messages back to a source queue.

A task runs to completion inside StartMessageMoveTask, in chunks: each chunk is received
from the dead-letter queue, then sent to the destination and deleted from the
dead-letter queue in one transaction, so a message is moved exactly once or stays where
it was. Tasks are recorded on the dead-letter queue (the last ten) for
ListMessageMoveTasks.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

import django_mqlite as mq

from .. import store
from ..context import Context, load, text
from ..errors import SQSError, invalid

CHUNK = 100
KEEP_TASKS = 10


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


def _move_all(source: str, dest: mq.Queue) -> int:
    moved = 0
    while True:
        got = mq.receive(source, max_messages=CHUNK, lock_duration=300)
        if not got:
            return moved
        with transaction.atomic():
            mq.send_batch(dest.name, [_resend(m, dest) for m in got])
            done = mq.complete_batch(source, [(m.seq, m.lock_token or "") for m in got])
        moved += sum(done)


def start_message_move_task(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    source_arn = text(p, "SourceArn", required=True)
    source = ctx.name_from_arn(source_arn, "SourceArn")
    ctx.allow("manage", source)
    info = load(source)
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
    ctx.allow("send", dest_name)
    dest = load(dest_name).queue
    if any(t["Status"] == "RUNNING" for t in store.move_tasks(source)):
        raise SQSError("UnsupportedOperation", "A move task is already running on this queue.")
    to_move = int(mq.stats(source).counts.get("active", 0))
    handle = uuid.uuid4().hex
    started = mq.clock.now_ms()
    moved = _move_all(info.name, dest)
    task: dict[str, Any] = {
        "TaskHandle": handle,
        "Status": "COMPLETED",
        "SourceArn": source_arn,
        "DestinationArn": ctx.arn(dest.name),
        "ApproximateNumberOfMessagesMoved": moved,
        "ApproximateNumberOfMessagesToMove": to_move,
        "StartedTimestamp": started,
    }
    if p.get("MaxNumberOfMessagesPerSecond") not in (None, ""):
        task["MaxNumberOfMessagesPerSecond"] = int(p["MaxNumberOfMessagesPerSecond"])
    store.save(source, move_tasks=[task, *store.move_tasks(source)][:KEEP_TASKS])
    return {"TaskHandle": handle}


def list_message_move_tasks(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    source_arn = text(p, "SourceArn", required=True)
    source = ctx.name_from_arn(source_arn, "SourceArn")
    ctx.allow("read", source)
    load(source)
    limit = int(p.get("MaxResults") or 1)
    if not 1 <= limit <= KEEP_TASKS:
        raise invalid(f"MaxResults must be between 1 and {KEEP_TASKS}.")
    return {"Results": store.move_tasks(source)[:limit]}


def cancel_message_move_task(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    handle = text(p, "TaskHandle", required=True)
    for q in mq.list_queues():
        for task in store.move_tasks(q.name):
            if task["TaskHandle"] == handle:
                ctx.allow("manage", q.name)
                # Tasks run to completion within StartMessageMoveTask: none is running.
                raise SQSError(
                    "ResourceNotFoundException",
                    "The task has already finished and cannot be cancelled.",
                )
    raise SQSError("ResourceNotFoundException", "The specified task does not exist.")
