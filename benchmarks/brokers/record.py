"""What every system's no-op task does: record its start in Redis.

``started(enqueued_at)`` adds one to the counter the harness watches and, when the
task was given the wall time it was enqueued at, pushes the pickup latency (start
minus enqueue, in seconds) to a list. One ``INCR`` (and one ``RPUSH``) per task, for
every system alike.
"""

from __future__ import annotations

import os
import time
from typing import Any

#: Redis database 15 holds the counters; the brokers that use Redis use database 14.
RECORD_URL = os.environ.get("BENCH_RECORD_URL", "redis://127.0.0.1:6379/15")
BROKER_REDIS = os.environ.get("BENCH_BROKER_REDIS", "redis://127.0.0.1:6379/14")
BROKER_AMQP = os.environ.get("BENCH_BROKER_AMQP", "amqp://guest:guest@127.0.0.1:5672//")
DONE = "bench:done"
LATENCY = "bench:latency"

_client: Any = None


def client() -> Any:
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(RECORD_URL)
    return _client


def started(enqueued_at: float | None = None) -> None:
    now = time.time()
    r = client()
    if enqueued_at is not None:
        r.rpush(LATENCY, now - enqueued_at)
    r.incr(DONE)


def done() -> int:
    return int(client().get(DONE) or 0)


def latencies() -> list[float]:
    return [float(v) for v in client().lrange(LATENCY, 0, -1)]


def reset() -> None:
    """Empty the counters and the Redis brokers' database."""
    import redis

    client().flushdb()
    redis.Redis.from_url(BROKER_REDIS).flushdb()
