"""The SQS attributes the engine has no notion of, kept per queue in ``SQSQueue``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import django_mqlite as mq

from ..models import SQSQueue

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


def move_tasks(name: str) -> list[dict[str, Any]]:
    row = SQSQueue.objects.filter(name=name).first()
    return [] if row is None else list(row.move_tasks)


def forget(name: str) -> None:
    SQSQueue.objects.filter(name=name).delete()
