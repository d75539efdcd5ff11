"""The worker's background threads: heartbeat, reaper, and (PostgreSQL) the NOTIFY listener.

Each runs a small loop until its stop event is set, uses its own database connection and
closes it on exit. A failing pass is logged and retried on the next tick; it never takes
the worker down.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, connections

from ..engine import events
from ..engine.clock import now_ms

# The NOTIFY listener lives in the engine, shared with ``areceive``; re-exported here.
from ..engine.listen import NOTIFY_CHANNEL as NOTIFY_CHANNEL
from ..engine.listen import Listener as Listener
from ..engine.listen import Service
from ..engine.listen import listen_wrapper as listen_wrapper
from ..engine.maintenance import reap
from . import db_health
from .reaper import Pace, found_work

logger = logging.getLogger("django_mqlite.worker")


class Loop(Service):
    """Call ``step()`` every ``interval_s`` seconds until ``stop()``; a step that returns
    a number of seconds waits that long instead."""

    def __init__(self, name: str, interval_s: float, step: Callable[[], Any]) -> None:
        super().__init__(name)
        self.interval_s = interval_s
        self.step = step

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                wait = self.interval_s
                try:
                    db_health.refresh()  # this thread's connection, once per pass
                    asked = self.step()
                    if isinstance(asked, int | float):
                        wait = float(asked)
                except Exception as exc:
                    logger.exception("%s pass failed", self.name)
                    connections.close_all()  # a broken connection reconnects next time
                    if isinstance(exc, DatabaseError):
                        db_health.suspect_all()  # other threads' connections may be gone
                self.stopping.wait(wait)
        finally:
            connections.close_all()


# -- the worker registry ---------------------------------------------------------------


def register_worker(queues: list[str], using: str, clock_skew_ms: int | None = None) -> int:
    """Insert this process's row in ``mqlite_worker``; returns its id."""
    from ..models import Worker

    now = now_ms()
    row = Worker.objects.using(using).create(
        host=socket.gethostname()[:255],
        pid=os.getpid(),
        queues=queues,
        started_at=now,
        last_seen=now,
        in_flight=0,
        clock_skew_ms=clock_skew_ms,
    )
    if events.listening(events.worker_started):
        started = {"worker_id": int(row.pk), "queues": list(queues), "using": using}
        events.after_commit(using, events.worker_started, [started])
    return int(row.pk)


def heartbeat(
    worker_id: int,
    in_flight: int,
    using: str,
    gauges: Callable[[], dict[str, int | None]] | None = None,
) -> None:
    """Refresh ``last_seen`` and the gauges ``gauges()`` reads (``claimed``, ``failed``,
    ``clock_skew_ms``)."""
    from django.db import transaction
    from django.db.models import F
    from django.db.models.functions import Greatest

    from ..models import Worker

    # The time is read once the transaction has begun (on SQLite, holding the write
    # lock, which a long wait for it would otherwise make stale), and last_seen never
    # moves back: a claim or renewal may have stamped a later one meanwhile. The gauges
    # are read inside it too: the clock-skew reading is a query, which outside a
    # transaction is a transaction of its own on PostgreSQL (two a beat instead of one).
    with transaction.atomic(using=using):
        values = gauges() if gauges is not None else {}
        Worker.objects.using(using).filter(pk=worker_id).update(
            last_seen=Greatest(F("last_seen"), now_ms()), in_flight=in_flight, **values
        )


def mark_stopped(worker_id: int, using: str, **gauges: int) -> None:
    from ..models import Worker

    now = now_ms()
    rows = Worker.objects.using(using).filter(pk=worker_id)
    rows.update(last_seen=now, stopped_at=now, in_flight=0, **gauges)
    if events.listening(events.worker_stopped):
        queues = list(rows.values_list("queues", flat=True)[:1])
        stopped = {"worker_id": worker_id, "queues": queues[0] if queues else [], "using": using}
        events.after_commit(using, events.worker_stopped, [stopped])


def heartbeat_loop(
    worker_id: int,
    interval_s: float,
    in_flight: Callable[[], int],
    using: str,
    gauges: Callable[[], dict[str, int | None]] | None = None,
    on_beat: Callable[[float], None] | None = None,
) -> Loop:
    """``on_beat(t)`` hears of each heartbeat that committed, ``t`` being
    ``time.monotonic()`` read before it was written."""

    def step() -> None:
        before = time.monotonic()
        heartbeat(worker_id, in_flight(), using, gauges)
        if on_beat is not None:
            on_beat(before)

    return Loop("mqlite-heartbeat", interval_s, step)


def reaper_loop(interval_s: float, using: str) -> Loop:
    pace = Pace(interval_s)

    def step() -> float:
        counts = reap(using=using, quiet=pace.quiet)
        done = {k: v for k, v in counts.items() if v}
        if done:
            logger.info("reaper: %s", done)
        return pace.after(found_work(done))

    return Loop("mqlite-reaper", interval_s, step)
