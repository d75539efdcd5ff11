"""The django-mqlite admin: Queues, Messages, Dead letters, Workers, Topics, Batches and
Schedules pages.

Imported by ``django.contrib.admin``'s autodiscovery; each module registers its admin
with the default site. See docs/admin.md.

May import: the public package, ``models``, ``engine``, ``conf`` and ``exceptions``;
nothing imports it but the admin's autodiscovery.
"""

from __future__ import annotations

from . import batches, messages, queues, schedules, topics, workers
from .batches import BatchAdmin
from .messages import DeadLetterAdmin, MessageAdmin
from .queues import QueueAdmin
from .schedules import ScheduleAdmin
from .topics import TopicAdmin
from .workers import WorkerAdmin

__all__ = [
    "BatchAdmin",
    "DeadLetterAdmin",
    "MessageAdmin",
    "QueueAdmin",
    "ScheduleAdmin",
    "TopicAdmin",
    "WorkerAdmin",
    "batches",
    "messages",
    "queues",
    "schedules",
    "topics",
    "workers",
]
