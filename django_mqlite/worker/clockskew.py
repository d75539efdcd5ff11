"""How far this host's clock is from the database's.

Leases, schedules and heartbeats are timestamps written by each worker from its own
host's clock and compared with timestamps written by other hosts. A host whose clock
runs ahead shortens every lease others grant (and reclaims too early); one that runs
behind grants leases that outlive their holder. The worker measures the difference
against the database server's clock at start and with every heartbeat, logs it, and
refuses to start beyond ``MQLITE["MAX_CLOCK_SKEW"]``. While it runs, ``ClockGuard``
notices the host's clock jumping and holds claims until the skew is measured again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from ..conf import current
from ..engine.clock import now_ms
from ..engine.dialects import dialect_for

logger = logging.getLogger("django_mqlite.worker")

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
    configured = current().max_clock_skew_s
    if configured is not None:
        return configured
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


#: A change of (wall clock - monotonic clock) beyond this is a jump of the wall clock
#: (NTP slews a clock far more slowly; a step, a VM restore or a manual ``date -s`` jumps).
JUMP_THRESHOLD_S = 1.0
#: While the skew is beyond the bound after a jump, it is measured again this often.
RECHECK_EVERY_S = 1.0


class ClockGuard:
    """Notices this host's clock jumping, and holds the worker's claims until the skew
    against the database has been measured again and is within the bound.

    The wall clock is the engine's (``now_ms``: the host's clock, or a test's frozen
    one), compared with ``time.monotonic()``, which never jumps. A jump larger than
    ``JUMP_THRESHOLD_S`` (or half the skew bound, if smaller) is logged as a warning and
    the skew is measured before the next claim: within the bound, claiming goes on;
    beyond it, the worker claims nothing (it still renews, settles and heartbeats what
    it holds) and measures again every ``RECHECK_EVERY_S`` until the skew is back within
    the bound. Leases this host would grant with a jumped clock are wrong by the jump,
    so a claim then risks two live leases on one message."""

    def __init__(
        self,
        using: str,
        bound_s: float,
        *,
        wall_ms: Callable[[], int] = now_ms,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.using = using
        self.bound_s = bound_s
        self.threshold_s = min(JUMP_THRESHOLD_S, bound_s / 2)
        self._wall_ms = wall_ms
        self._monotonic = monotonic
        self._offset_s = self._read_offset()
        self.holding = False
        self._next_check = 0.0
        #: Jumps noticed, and skew measurements made because of one (for tests and logs).
        self.jumps = 0
        self.rechecks = 0

    def _read_offset(self) -> float:
        return self._wall_ms() / 1000 - self._monotonic()

    def may_claim(self) -> bool:
        """False while the worker must not claim (see the class docstring)."""
        offset = self._read_offset()
        jump = offset - self._offset_s
        self._offset_s = offset
        if abs(jump) > self.threshold_s:
            self.jumps += 1
            logger.warning(
                "clock: this host's clock jumped %+.3fs against its monotonic clock; "
                "measuring the skew against the database before claiming again",
                jump,
            )
            self.holding = True
            self._next_check = 0.0
        if not self.holding:
            return True
        now = self._monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + RECHECK_EVERY_S
        self.rechecks += 1
        skew = measure_ms(self.using)
        if abs(skew) > self.bound_s * 1000:
            logger.warning(
                "clock: %s, more than the %gs allowed: not claiming until it is fixed "
                "(fix NTP on this host)",
                describe(skew),
                self.bound_s,
            )
            return False
        logger.warning("clock: %s after the jump; claiming again", describe(skew))
        self.holding = False
        return True
