"""A periodic schedule's times: its cron occurrences, read in its time zone, and the
stable jitter of each.

One definition for both kinds of schedule: those declared in ``MQLITE["PERIODIC"]``
(``tasks/periodic.py`` parses them) and those stored in the database
(``engine/schedules.py``). Times are epoch milliseconds, as everywhere in the engine.

Jitter: an occurrence is enqueued ``offset`` after its fire time, where ``offset`` is in
``[0, jitter_s]`` seconds and derived from the schedule's name and the occurrence (a
SHA-256), so every host computes the same offset for it and a ticker that restarts does
not draw a new one. An occurrence is *due* once its fire time plus its offset has
passed. A jitter longer than the time between two occurrences lets a later occurrence
come due before an earlier one; the earlier one is then skipped, as a missed occurrence
is after downtime (``catchup="latest"``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings

from ..exceptions import InvalidArgumentError
from .clock import from_ms, to_ms

OVERLAP = ("allow", "skip")
MAX_JITTER_S = 86_400


def check_when(cron: Any, timezone: Any) -> tuple[str, ZoneInfo]:
    """A schedule's ``cron`` and the time zone of its ``timezone`` (default
    ``settings.TIME_ZONE``, then UTC), both checked: the one rule for schedules in
    settings and in the database (InvalidArgumentError says what is wrong)."""
    if not isinstance(cron, str) or len(cron.split()) != 5:
        raise InvalidArgumentError(f"cron must be a 5-field cron expression, not {cron!r}")
    try:
        CronSim(cron, dt.datetime.now(dt.UTC))
    except CronSimError as exc:
        raise InvalidArgumentError(f"bad cron expression {cron!r}: {exc}") from None
    tz_name = timezone or getattr(settings, "TIME_ZONE", None) or "UTC"
    try:
        return cron, ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidArgumentError(f"unknown time zone {tz_name!r}") from None


@dataclass(frozen=True)
class Schedule:
    """A periodic schedule: declared in ``MQLITE["PERIODIC"]`` (``stored`` False) or
    stored in the database (``mq.create_schedule``). It enqueues a call of ``task``
    (a dotted path) with ``args``/``kwargs``, or a message with ``body`` to ``queue``, at
    each fire time of ``cron`` read in time zone ``tz``, ``jitter_s`` seconds late at
    most; ``overlap`` is ``"allow"`` or ``"skip"`` (no run while the last one is live).
    A stored schedule's ``version`` changes at every change, pause and resume."""

    name: str
    cron: str
    tz: ZoneInfo
    catchup: str = "latest"
    task: str | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str | None = None
    body: Any = None
    overlap: str = "allow"
    jitter_s: int = 0
    paused: bool = False
    stored: bool = False
    version: int = 0

    def latest(self, now: int) -> int:
        """The latest fire time at or before ``now`` (epoch ms)."""
        return next(self._before(now))

    def due(self, now: int) -> int:
        """The latest occurrence whose jittered enqueue time is at or before ``now``."""
        if not self.jitter_s:
            return self.latest(now)
        for when in self._before(now):
            if when + self.offset_ms(when) <= now or when <= now - self.jitter_s * 1000:
                return when
        raise AssertionError("a cron expression always has an earlier occurrence")

    def offset_ms(self, occurrence: int) -> int:
        """The stable jitter of ``occurrence``: in ``[0, jitter_s * 1000]`` ms."""
        if not self.jitter_s:
            return 0
        digest = hashlib.sha256(f"{self.name}\0{occurrence}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % (self.jitter_s * 1000 + 1)

    def after(self, since: int, until: int) -> Iterator[int]:
        """Fire times in ``(since, until]``."""
        for when in CronSim(self.cron, from_ms(since).astimezone(self.tz)):
            ms = to_ms(when)
            if ms > until:
                return
            yield ms

    def upcoming(self, now: int, count: int) -> list[tuple[int, int]]:
        """The next ``count`` fire times after ``now``, each with its enqueue time."""
        out: list[tuple[int, int]] = []
        for when in CronSim(self.cron, from_ms(now).astimezone(self.tz)):
            if len(out) >= count:
                break
            ms = to_ms(when)
            out.append((ms, ms + self.offset_ms(ms)))
        return out

    def key(self, occurrence: int) -> str:
        """The message id an occurrence is sent with (producer dedup)."""
        return f"periodic:{self.name}:{from_ms(occurrence).strftime('%Y-%m-%dT%H:%M:%SZ')}"

    def _before(self, now: int) -> Iterator[int]:
        start = from_ms(now).astimezone(self.tz) + dt.timedelta(microseconds=1)
        for when in CronSim(self.cron, start, reverse=True):
            yield to_ms(when)
