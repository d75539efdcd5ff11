"""The SQS attributes the engine has no notion of, kept per queue in ``SQSQueue``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

import django_mqlite as mq

from ..models import Message, SQSQueue

KEEP_MOVE_TASKS = 10

#: SQS attributes kept here, with their defaults.
STORED_DEFAULTS = {
    "DelaySeconds": "0",
    "MaximumMessageSize": "1048576",
    "ReceiveMessageWaitTimeSeconds": "0",
}


@dataclass
class QueueInfo:
    """A queue as the SQS endpoint sees it: the engine's settings plus the stored rest."""

    queue: mq.Queue
    attributes: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    modified_ms: int | None = None

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo") and self.queue.ordering != mq.Ordering.STANDARD

    def attribute(self, name: str) -> str:
        return self.attributes.get(name, STORED_DEFAULTS.get(name, ""))

    def number(self, name: str) -> int:
        return int(self.attribute(name))


def load(name: str) -> QueueInfo:
    """The queue ``name``; ``mq.QueueNotFoundError`` when it does not exist."""
    queue = mq.get_queue(name)
    row = SQSQueue.objects.filter(name=name).first()
    if row is None:
        return QueueInfo(queue)
    return QueueInfo(queue, dict(row.attributes), dict(row.tags), row.modified_at)


def save(name: str, **fields: Any) -> None:
    """Update (or start) the stored row of ``name``: ``attributes``, ``tags`` or
    ``move_tasks``; the modification time moves with attribute changes."""
    now = mq.clock.now_ms()
    row, _ = SQSQueue.objects.get_or_create(
        name=name, defaults={"created_at": now, "modified_at": now}
    )
    for key, value in fields.items():
        setattr(row, key, value)
    if "attributes" in fields:
        row.modified_at = now
    row.save()


def edit_attributes(name: str, change: Callable[[dict[str, str]], dict[str, str]]) -> None:
    """Replace the stored attributes of ``name`` by ``change(current)``, read and written
    under a row lock, so two edits at once (AddPermission twice) never lose one."""
    now = mq.clock.now_ms()
    with transaction.atomic():
        SQSQueue.objects.get_or_create(name=name, defaults={"created_at": now, "modified_at": now})
        row = SQSQueue.objects.select_for_update().get(name=name)
        row.attributes = change(dict(row.attributes))
        row.modified_at = now
        row.save(update_fields=["attributes", "modified_at"])


def highest_seq(name: str) -> int:
    """The highest seq of any message on the database of queue ``name`` now (0 when
    there is none; a seek of the primary key). Seqs only grow, so every message created
    later, a moved one included, has a higher seq (``handlers.moves``)."""
    found = (
        Message.objects.using(mq.database_of(name))
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    return int(found or 0)


def forwarded(name: str, seqs: list[int]) -> dict[int, tuple[str, int]]:
    """Of these messages of queue ``name``, the dead letters forwarded there: seq ->
    (the queue they came from, the deliveries they had before). One seek of the primary
    key; nothing for a receive that got nothing."""
    if not seqs:
        return {}
    rows = (
        Message.objects.using(mq.database_of(name))
        .filter(seq__in=seqs, forwarded_from__isnull=False)
        .values_list("seq", "forwarded_from", "forwarded_deliveries")
    )
    return {seq: (str(source), int(n or 0)) for seq, source, n in rows}


def move_tasks(name: str) -> list[dict[str, Any]]:
    row = SQSQueue.objects.filter(name=name).first()
    return [] if row is None else list(row.move_tasks)


def add_move_task(name: str, task: dict[str, Any]) -> bool:
    """Record a new RUNNING task on the dead-letter queue ``name``; False when one is
    already running there."""
    now = mq.clock.now_ms()
    with transaction.atomic():
        SQSQueue.objects.get_or_create(name=name, defaults={"created_at": now, "modified_at": now})
        row = SQSQueue.objects.select_for_update().get(name=name)
        if any(t["Status"] in ("RUNNING", "CANCELLING") for t in row.move_tasks):
            return False
        row.move_tasks = [{**task, "UpdatedMs": now}, *row.move_tasks][:KEEP_MOVE_TASKS]
        row.save(update_fields=["move_tasks"])
        return True


def update_move_task(name: str, handle: str, **fields: Any) -> dict[str, Any] | None:
    """Change a recorded task (read and written under a row lock, so a cancellation
    and the task's progress never overwrite each other); the task after the change."""
    with transaction.atomic():
        row = SQSQueue.objects.select_for_update().filter(name=name).first()
        if row is None:
            return None
        found = None
        for task in row.move_tasks:
            if task["TaskHandle"] == handle:
                task.update(fields, UpdatedMs=mq.clock.now_ms())
                found = task
        row.save(update_fields=["move_tasks"])
        return found


def move_task_status(name: str, handle: str) -> str | None:
    for task in move_tasks(name):
        if task["TaskHandle"] == handle:
            return str(task["Status"])
    return None


def cancel_move_task(name: str, handle: str) -> dict[str, Any] | None:
    """Ask a running task to stop; None when it is not running."""
    if move_task_status(name, handle) != "RUNNING":
        return None
    return update_move_task(name, handle, Status="CANCELLING")


def find_move_task(handle: str) -> str | None:
    """The dead-letter queue a task was started on."""
    for row in SQSQueue.objects.exclude(move_tasks=[]):
        if any(t["TaskHandle"] == handle for t in row.move_tasks):
            return row.name
    return None


def forget(name: str) -> None:
    SQSQueue.objects.filter(name=name).delete()
