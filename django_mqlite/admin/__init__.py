"""The django-mqlite admin: Queues, Messages, Dead letters and Workers pages.

Imported by ``django.contrib.admin``'s autodiscovery; each module registers its admin
with the default site. See docs/admin.md.

May import: the public package, ``models``, ``engine``, ``conf`` and ``exceptions``;
nothing imports it but the admin's autodiscovery.
"""

from __future__ import annotations

from . import messages, queues, workers
from .messages import DeadLetterAdmin, MessageAdmin
from .queues import QueueAdmin
from .workers import WorkerAdmin

__all__ = [
    "DeadLetterAdmin",
    "MessageAdmin",
    "QueueAdmin",
    "WorkerAdmin",
    "messages",
    "queues",
    "workers",
]
