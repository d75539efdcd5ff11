"""The reaper's pace, and the standalone reaper: ``mq.reap()`` on an interval (what
``runreaper`` runs; a worker runs the same passes in a thread, ``background.reaper_loop``).

Every pass is set-based and safe alongside any number of other reapers and workers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import FrameType

from django.db import connections

from ..engine.maintenance import reap
from .stopping import stop_on_signals

logger = logging.getLogger("django_mqlite.reaper")

#: How far an idle reaper stretches its interval: at most this many ``REAP_INTERVAL``s.
IDLE_FACTOR = 8


#: What a pass does on its own clock, whatever the queues hold: the minute's history
#: sample and its trimming. A pass that did only that found no work.
ROUTINE = frozenset({"history_sampled", "history_trimmed"})


def found_work(counts: dict[str, int]) -> bool:
    """Whether a pass's counts show work found (``Pace.after``): anything but the
    routine history steps. Otherwise each minute's sample made the next pass an
    ordinary one (a transaction per statement, about ten) and reset the stretched wait."""
    return any(n for name, n in counts.items() if name not in ROUTINE)


class Pace:
    """How long a reaper waits between passes: ``interval_s`` after a pass that did
    something; after passes that found nothing, twice the last wait, up to
    ``IDLE_FACTOR`` intervals, and never past the next minute boundary (plus one
    interval), so each minute's history sample is taken as promptly as before.

    An idle queue database then costs a reaper pass every 8 s instead of every second,
    and that pass is one transaction (``quiet``) instead of about ten. Nothing a
    consumer waits for depends on the reaper's pace: a receive first returns its
    queue's lapsed leases itself, and promotes its due scheduled messages."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.time) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.wait_s = interval_s
        #: The last pass found nothing: the next runs quiet (``reap(quiet=True)``, one
        #: transaction instead of one per statement).
        self.quiet = False

    def after(self, did_work: bool) -> float:
        """The wait after a pass (``did_work``: it changed or sampled something)."""
        self.quiet = not did_work
        if did_work:
            self.wait_s = self.interval_s
        else:
            self.wait_s = min(self.wait_s * 2, self.interval_s * IDLE_FACTOR)
        to_minute = 60.0 - self.clock() % 60.0 + self.interval_s
        return max(self.interval_s, min(self.wait_s, to_minute))


class Reaper:
    def __init__(self, *, interval_s: float = 1.0, using: str | None = None) -> None:
        self.interval_s = interval_s
        #: None: every queue database (``mq.reap`` covers them all).
        self.using = using
        self._stopping = threading.Event()

    def run_once(self, *, quiet: bool = False) -> dict[str, int]:
        return reap(using=self.using, quiet=quiet)

    def run(self, report: Callable[[dict[str, int]], None] | None = None) -> int:
        """Reap every ``interval_s`` seconds until SIGTERM/SIGINT or ``stop()``."""
        pace = Pace(self.interval_s)
        with stop_on_signals(self._on_signal):
            while not self._stopping.is_set():
                wait = self.interval_s
                try:
                    counts = self.run_once(quiet=pace.quiet)
                    if report is not None and any(counts.values()):
                        report(counts)
                    wait = pace.after(found_work(counts))
                except Exception:
                    logger.exception("reaper pass failed")
                    connections.close_all()
                self._stopping.wait(wait)
        return 0

    def stop(self) -> None:
        self._stopping.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop()
