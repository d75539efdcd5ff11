"""How far this host's clock is from the database's.

Leases, schedules and heartbeats are timestamps written by each worker from its own
host's clock and compared with timestamps written by other hosts. A host whose clock
runs ahead shortens every lease others grant (and reclaims too early); one that runs
behind grants leases that outlive their holder. The worker measures the difference
against the database server's clock at start and with every heartbeat, logs it, and
refuses to start beyond ``MQLITE["MAX_CLOCK_SKEW"]``.
"""

from __future__ import annotations

import time

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from ..conf import mqlite_settings
from ..engine.dialects import dialect_for

#: The default bound is this fraction of the shortest lease the worker's queues grant.
DEFAULT_FRACTION = 0.25


def measure_ms(using: str) -> int:
    """Database clock minus this host's clock, in ms (positive: this host is behind).

    Compares against the midpoint of the round trip, so the query's latency does not
    count as skew. Reads the host's real clock, never the engine's injectable one."""
    sql = dialect_for(using).clock_ms_sql()
    with connections[using].cursor() as cursor:
        before = time.time_ns() // 1_000_000
        cursor.execute(sql)
        row = cursor.fetchone()
        after = time.time_ns() // 1_000_000
    assert row is not None
    return int(row[0]) - (before + after) // 2


def bound_s(lock_durations: list[float]) -> float:
    """The largest skew tolerated: ``MAX_CLOCK_SKEW``, else a quarter of the shortest lease."""
    configured = mqlite_settings.MAX_CLOCK_SKEW
    if configured is not None:
        return float(configured)
    return DEFAULT_FRACTION * min(lock_durations, default=30.0)


def describe(skew_ms: int) -> str:
    direction = "behind" if skew_ms > 0 else "ahead of"
    return f"this host's clock is {abs(skew_ms) / 1000:.3f}s {direction} the database's"


def check_at_start(using: str, lock_durations: list[float]) -> int:
    """Measure the skew; raise ``ImproperlyConfigured`` beyond the bound."""
    skew = measure_ms(using)
    limit = bound_s(lock_durations)
    if abs(skew) > limit * 1000:
        raise ImproperlyConfigured(
            f"{describe(skew)}, more than the {limit:g}s allowed (MQLITE['MAX_CLOCK_SKEW'], "
            "default a quarter of the shortest lock_duration): leases would be wrong. "
            "Synchronise this host's clock (NTP: chrony or systemd-timesyncd) and restart."
        )
    return skew
