"""A no-op consumer: the drain measures the queue, not the handler."""

from __future__ import annotations

import django_mqlite as mq


@mq.consumer("bench")
def noop(message: mq.Received) -> None:
    return None
