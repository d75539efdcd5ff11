"""Long-poll receive for the HTTP API.

The wait is the engine's own (``mq.receive(wait=...)``): each poll is one short
transaction on the request's connection, which stays open between polls (closing and
reopening it every poll would storm a database without a pool), and no transaction is
held while it sleeps: the route is excluded from ``ATOMIC_REQUESTS``. A send in this
process wakes the wait early; otherwise polls back off up to half a second.
"""

from __future__ import annotations

from typing import Any

import django_mqlite as mq


def receive(queue: str, *, wait: float, **options: Any) -> list[mq.Received]:
    return mq.receive(queue, wait=wait, **options)
