"""A ``Worker`` running in a thread of the test process, for tests that count what it
does (transactions, claims) while the test sends."""

from __future__ import annotations

import threading

from django_mqlite.worker import Worker
from tests.support.procs import wait_for


class Running:
    """``with Running(worker):`` runs it on a thread named ``mqlite-worker-main`` (a
    test may rename it before entering), returns once it has registered, and stops and
    joins it on the way out."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.thread = threading.Thread(target=worker.run, name="mqlite-worker-main")

    def __enter__(self) -> Worker:
        self.thread.start()
        wait_for(lambda: self.worker.worker_id is not None, timeout=10, what="the start")
        return self.worker

    def __exit__(self, *exc: object) -> None:
        self.worker.stop()
        self.thread.join(30)
        assert not self.thread.is_alive()
