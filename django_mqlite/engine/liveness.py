"""The worker-liveness rule, in one place.

A worker is *alive* while its row says it has not stopped (``stopped_at`` is null) and
its last heartbeat is strictly newer than ``WORKER_STALE_AFTER`` ago::

    stopped_at IS NULL AND last_seen > now - WORKER_STALE_AFTER

A heartbeat exactly ``WORKER_STALE_AFTER`` old is no longer alive, as a lease is expired
at its deadline. Everything else is *not alive*: the reaper's stale-worker pass reclaims
such a worker's locks (``maintenance.reclaim_stale_workers``), the admin shows it stale
or stopped, ``mqlite health`` fails for it, its metrics read ``mqlite_worker_alive 0``.

The ORM spells the rule as ``Worker.objects.alive(now)`` / ``.stale(now)`` and
``Worker.is_alive(now)`` (models.py), raw SQL as ``NOT_ALIVE_SQL``; both take their
boundary from ``stale_before_ms``.
"""

from __future__ import annotations

from ..conf import current

#: Workers (``mqlite_worker w``) that are not alive. One parameter: ``stale_before_ms(now)``.
NOT_ALIVE_SQL = "w.stopped_at IS NOT NULL OR w.last_seen <= %s"


def stale_before_ms(now: int) -> int:
    """The boundary (epoch ms): a heartbeat at or before it is stale, after it alive."""
    return now - current().worker_stale_after_ms


def is_alive(stopped_at: int | None, last_seen: int, now: int) -> bool:
    """The rule for a row already read."""
    return stopped_at is None and last_seen > stale_before_ms(now)
