"""Dramatiq, as its "Getting started" page does: a broker set once, one actor.
``BENCH_BROKER``: ``redis`` or ``amqp``."""

from __future__ import annotations

import os

import dramatiq

from ..record import BROKER_AMQP, BROKER_REDIS, started

if os.environ.get("BENCH_BROKER") == "amqp":
    from dramatiq.brokers.rabbitmq import RabbitmqBroker

    dramatiq.set_broker(RabbitmqBroker(url=BROKER_AMQP.rstrip("/") + "/%2F"))
else:
    from dramatiq.brokers.redis import RedisBroker

    dramatiq.set_broker(RedisBroker(url=BROKER_REDIS))


@dramatiq.actor(queue_name="bench")
def record(enqueued_at: float | None = None) -> None:
    started(enqueued_at)
