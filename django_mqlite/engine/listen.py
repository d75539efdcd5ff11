"""PostgreSQL LISTEN: a thread with a dedicated connection that turns each notification
(its payload is a queue name) into an in-process wake-up (``wakeup.notify``).

Every send runs ``pg_notify('mqlite', queue)`` in its transaction, so a notification
arrives on commit and never for a rollback. A worker runs its own listener; code that
long-polls outside a worker (``areceive(wait=...)``) shares one listener per database
per process, started on first use (``ensure_listener``).
"""

from __future__ import annotations

import logging
import threading

from django.db import connections

from . import wakeup
from .dialects import dialect_for

logger = logging.getLogger("django_mqlite.worker")

NOTIFY_CHANNEL = "mqlite"


class Listener(threading.Thread):
    """LISTENs on a dedicated PostgreSQL connection and turns each notification into an
    in-process wake-up. Reconnects after errors."""

    def __init__(self, using: str, poll_s: float = 0.25) -> None:
        super().__init__(name="mqlite-listener", daemon=True)
        self.using = using
        self.poll_s = poll_s
        self.stopping = threading.Event()
        self.listening = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._listen()
            except Exception:
                self.listening.clear()
                logger.exception("LISTEN connection failed; reconnecting")
                self.stopping.wait(1.0)

    def _listen(self) -> None:
        wrapper = connections[self.using]
        conn = wrapper.get_new_connection(wrapper.get_connection_params())
        try:
            conn.autocommit = True
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            self.listening.set()
            while not self.stopping.is_set():
                for note in conn.notifies(timeout=self.poll_s):
                    wakeup.notify(note.payload)
        finally:
            conn.close()

    def stop(self, wait_s: float = 2.0) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(wait_s)


_shared: dict[str, Listener] = {}
_shared_lock = threading.Lock()


def ensure_listener(using: str) -> bool:
    """Start this process's shared listener for database ``using`` unless it runs; True
    when the database has LISTEN/NOTIFY (PostgreSQL), False otherwise (SQLite)."""
    if not dialect_for(using).has_listen_notify:
        return False
    with _shared_lock:
        current = _shared.get(using)
        if current is None or not current.is_alive():
            current = _shared[using] = Listener(using)
            current.start()
    return True


def stop_shared_listeners() -> None:
    """Stop the shared listeners (tests, before their database is dropped)."""
    with _shared_lock:
        listeners = list(_shared.values())
        _shared.clear()
    for listener in listeners:
        listener.stop()
