"""A real ``Worker`` run in this process: ``burst`` serves ``queues`` from ``registry``
until nothing is claimable, then returns; ``Running`` runs one on a thread while the test
sends and counts. No signal handlers (pytest owns them) and no reaper thread unless a
test asks for one (``burst``)."""

from __future__ import annotations

import threading
from typing import Any

from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from tests.support.procs import wait_for


def first_and_standby(registry: Registry, queue: str) -> tuple[Worker, Worker]:
    """The two processes of ``runworker --processes 2`` over ``queue``, as two workers
    in this process sharing one ``Siblings``: the first (reaper and ticker off here) and
    a standby one."""
    from django_mqlite.worker.prefork import Siblings

    siblings = Siblings(1)
    first = Worker([queue], install_signals=False, registry=registry, siblings=siblings)
    standby = Worker(
        [queue],
        install_signals=False,
        registry=registry,
        siblings=siblings,
        reaper=False,
        periodic=False,
        standby=True,
    )
    return first, standby


def burst(registry: Registry, *queues: str, **options: Any) -> Worker:
    """Run a burst worker over ``queues`` (every queue of ``registry`` when none is
    named) with ``options`` for ``Worker``; returns it, run, for its counters."""
    options.setdefault("reaper", False)
    worker = Worker(list(queues), burst=True, install_signals=False, registry=registry, **options)
    worker.run()
    return worker


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
