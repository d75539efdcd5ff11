"""RQ, as its docs do: a function enqueued on a ``Queue`` over a Redis connection."""

from __future__ import annotations

from ..record import BROKER_REDIS, started

QUEUE = "bench"


def record(enqueued_at: float | None = None) -> None:
    started(enqueued_at)


def queue() -> object:
    from redis import Redis
    from rq import Queue

    return Queue(QUEUE, connection=Redis.from_url(BROKER_REDIS))
