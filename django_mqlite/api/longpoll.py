"""Long-poll receive that leaves no database connection pinned while it waits.

Each poll is one ``mq.receive(wait=0)`` (one short transaction). Between polls the
request's connection is closed (back to the pool, if the project uses one), unless the
caller is inside ``transaction.atomic()`` (e.g. ``ATOMIC_REQUESTS``, or a test), where
closing would break the transaction. Polls back off from 10 ms to 250 ms, so a message
that arrives during the wait is returned within about a quarter of a second.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import connections

import django_mqlite as mq

FIRST_DELAY_S = 0.01
MAX_DELAY_S = 0.25


def release_connection(alias: str) -> None:
    connection = connections[alias]
    if not connection.in_atomic_block:
        connection.close()


def receive(queue: str, *, wait: float, **options: Any) -> list[mq.Received]:
    deadline = time.monotonic() + wait
    delay = FIRST_DELAY_S
    alias = mq.database_of(queue, using=options.get("using"))
    while True:
        got = mq.receive(queue, wait=0, **options)
        remaining = deadline - time.monotonic()
        if got or remaining <= 0:
            return got
        release_connection(alias)
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, MAX_DELAY_S)
