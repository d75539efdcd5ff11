"""Huey, as its guide does: a ``RedisHuey`` and one task."""

from __future__ import annotations

from huey import RedisHuey

from ..record import BROKER_REDIS, started

huey = RedisHuey("bench", url=BROKER_REDIS)


@huey.task()
def record(enqueued_at: float | None = None) -> None:
    started(enqueued_at)
