"""The worker's background threads: heartbeat, reaper, and (PostgreSQL) the NOTIFY listener.

Each runs a small loop until its stop event is set, uses its own database connection and
closes it on exit. A failing pass is logged and retried on the next tick; it never takes
the worker down.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connections

from ..engine import wakeup
from ..engine.clock import now_ms
from ..engine.maintenance import reap

logger = logging.getLogger("django_mqlite.worker")

NOTIFY_CHANNEL = "mqlite"


class Loop(threading.Thread):
    """Call ``step()`` every ``interval_s`` seconds until ``stop()``."""

    def __init__(self, name: str, interval_s: float, step: Callable[[], Any]) -> None:
        super().__init__(name=name, daemon=True)
        self.interval_s = interval_s
        self.step = step
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    self.step()
                except Exception:
                    logger.exception("%s pass failed", self.name)
                    connections.close_all()  # a broken connection reconnects next time
                self.stopping.wait(self.interval_s)
        finally:
            connections.close_all()

    def stop(self, wait_s: float = 2.0) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(wait_s)


# -- the worker registry ---------------------------------------------------------------


def register_worker(queues: list[str], using: str) -> int:
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
    )
    return int(row.pk)


def heartbeat(worker_id: int, in_flight: int, using: str) -> None:
    from ..models import Worker

    Worker.objects.using(using).filter(pk=worker_id).update(last_seen=now_ms(), in_flight=in_flight)


def mark_stopped(worker_id: int, using: str) -> None:
    from ..models import Worker

    now = now_ms()
    Worker.objects.using(using).filter(pk=worker_id).update(
        last_seen=now, stopped_at=now, in_flight=0
    )


def heartbeat_loop(
    worker_id: int, interval_s: float, in_flight: Callable[[], int], using: str
) -> Loop:
    return Loop("mqlite-heartbeat", interval_s, lambda: heartbeat(worker_id, in_flight(), using))


def reaper_loop(interval_s: float, using: str) -> Loop:
    def step() -> None:
        counts = reap(using=using)
        done = {k: v for k, v in counts.items() if v}
        if done:
            logger.info("reaper: %s", done)

    return Loop("mqlite-reaper", interval_s, step)


# -- LISTEN/NOTIFY ---------------------------------------------------------------------

#: Seconds the listener waits for its own test notification after LISTEN.
PROBE_S = 5.0


def listen_wrapper(using: str) -> Any:
    """The connection settings LISTEN uses for database ``using``, or None when
    ``MQLITE["LISTEN"]`` turns it off there. A dict there overrides the database's own
    settings (e.g. the PORT of PostgreSQL itself when the alias points at PgBouncer)."""
    from ..conf import mqlite_settings

    overrides = (mqlite_settings.LISTEN or {}).get(using, {})
    wrapper = connections[using]
    if overrides is False or overrides is None:
        return None
    if overrides:
        wrapper = type(wrapper)({**wrapper.settings_dict, **overrides}, alias=f"{using}:listen")
    return wrapper


class Listener(threading.Thread):
    """LISTENs on a dedicated PostgreSQL connection and turns each notification (its
    payload is a queue name) into an in-process wake-up. Reconnects after errors.

    LISTEN needs a session of its own: through a transaction-pooling PgBouncer it
    succeeds but never hears anything. So after LISTEN the listener sends itself a test
    notification the way producers send theirs; when it does not arrive, the listener
    says so in the log and stops (``on_unavailable``): the worker then polls.
    """

    def __init__(
        self,
        using: str,
        poll_s: float = 0.25,
        on_unavailable: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(name="mqlite-listener", daemon=True)
        self.using = using
        self.poll_s = poll_s
        self.on_unavailable = on_unavailable
        self.stopping = threading.Event()
        self.listening = threading.Event()

    def run(self) -> None:
        wrapper = listen_wrapper(self.using)
        if wrapper is None:
            self._give_up(f'LISTEN is off for database {self.using!r} (MQLITE["LISTEN"])')
            return
        while not self.stopping.is_set():
            try:
                self._listen(wrapper)
            except Exception:
                self.listening.clear()
                logger.exception("LISTEN connection failed; reconnecting")
                self.stopping.wait(1.0)

    def _listen(self, wrapper: Any) -> None:
        conn = wrapper.get_new_connection(wrapper.get_connection_params())
        try:
            conn.autocommit = True
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            if not self._probe(conn):
                self._give_up(
                    f"LISTEN on database {self.using!r} hears no notifications (a "
                    "transaction-pooling PgBouncer in between?); point "
                    f'MQLITE["LISTEN"][{self.using!r}] at PostgreSQL itself, e.g. '
                    '{"PORT": 5432}'
                )
                return
            self.listening.set()
            while not self.stopping.is_set():
                for note in conn.notifies(timeout=self.poll_s):
                    wakeup.notify(note.payload)
        finally:
            conn.close()
            connections[self.using].close()

    def _probe(self, conn: Any) -> bool:
        """Send a notification through the database's ordinary connection (as a
        producer would) and wait for it on ``conn``."""
        payload = f"#probe-{secrets.token_hex(8)}"
        with connections[self.using].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, payload])
        deadline = time.monotonic() + PROBE_S
        while not self.stopping.is_set() and time.monotonic() < deadline:
            for note in conn.notifies(timeout=self.poll_s):
                if note.payload == payload:
                    return True
                wakeup.notify(note.payload)
        return False

    def _give_up(self, why: str) -> None:
        logger.warning("%s: idle workers poll for new messages instead", why)
        self.stopping.set()
        if self.on_unavailable is not None:
            self.on_unavailable()

    def stop(self, wait_s: float = 2.0) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(wait_s)
