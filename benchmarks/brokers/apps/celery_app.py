"""Celery, configured as its "First steps" page does: an app with a broker URL and one
task. ``BENCH_BROKER``: ``redis`` or ``amqp``; ``BENCH_CELERY_RESULTS=1`` adds the Redis
result backend (every task's result stored, as ``ignore_result`` off does)."""

from __future__ import annotations

import os

from celery import Celery

from ..record import BROKER_AMQP, BROKER_REDIS, started

_broker = BROKER_AMQP if os.environ.get("BENCH_BROKER") == "amqp" else BROKER_REDIS
_results = BROKER_REDIS if os.environ.get("BENCH_CELERY_RESULTS") == "1" else None

app = Celery("bench", broker=_broker, backend=_results)
app.conf.broker_connection_retry_on_startup = True


@app.task(name="bench.record")
def record(enqueued_at: float | None = None) -> None:
    started(enqueued_at)
