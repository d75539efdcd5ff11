"""The standalone reaper: ``mq.reap()`` on an interval (what ``runreaper`` runs).

Every pass is set-based and safe alongside any number of other reapers and workers.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from django.db import connections

from ..engine.maintenance import reap

logger = logging.getLogger("django_mqlite.reaper")


class Reaper:
    def __init__(self, *, interval_s: float = 1.0, using: str | None = None) -> None:
        self.interval_s = interval_s
        #: None: every queue database (``mq.reap`` covers them all).
        self.using = using
        self._stopping = threading.Event()

    def run_once(self) -> dict[str, int]:
        return reap(using=self.using)

    def run(self, report: Callable[[dict[str, int]], None] | None = None) -> int:
        """Reap every ``interval_s`` seconds until SIGTERM/SIGINT or ``stop()``."""
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            while not self._stopping.is_set():
                try:
                    counts = self.run_once()
                    if report is not None and any(counts.values()):
                        report(counts)
                except Exception:
                    logger.exception("reaper pass failed")
                    connections.close_all()
                self._stopping.wait(self.interval_s)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return 0

    def stop(self) -> None:
        self._stopping.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop()
