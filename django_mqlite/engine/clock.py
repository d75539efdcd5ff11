"""The engine's clock: epoch milliseconds, injectable for tests.

Every timestamp the engine compares or stores is an integer of milliseconds since the
epoch. ``frozen()`` pins the time for every thread of the process until the block exits,
so expiry, backoff and TTL can be tested deterministically without sleeping.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FrozenClock", "from_ms", "frozen", "now", "now_ms", "to_ms"]


class FrozenClock:
    """A manual clock. ``advance()`` moves it forward; it never moves on its own."""

    def __init__(self, start_ms: int) -> None:
        self._ms = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return self._ms

    def now(self) -> dt.datetime:
        return from_ms(self._ms)

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (may be fractional, never negative)."""
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._ms += round(seconds * 1000)

    def set(self, when: dt.datetime) -> None:
        with self._lock:
            self._ms = to_ms(when)


_frozen: FrozenClock | None = None


def now_ms() -> int:
    """The current time in epoch milliseconds, as the engine sees it."""
    clock = _frozen
    if clock is not None:
        return clock.now_ms()
    return time.time_ns() // 1_000_000


def now() -> dt.datetime:
    return from_ms(now_ms())


@contextmanager
def frozen(start: dt.datetime | None = None) -> Iterator[FrozenClock]:
    """Freeze the engine's time (for all threads) at ``start`` (default: now)."""
    global _frozen
    previous = _frozen
    clock = FrozenClock(to_ms(start) if start is not None else now_ms())
    _frozen = clock
    try:
        yield clock
    finally:
        _frozen = previous


def to_ms(when: dt.datetime) -> int:
    if when.tzinfo is None:
        raise ValueError("naive datetime: pass an aware datetime (UTC recommended)")
    return int(when.timestamp() * 1000)


def from_ms(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
