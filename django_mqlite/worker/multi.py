"""One worker process for queues on several databases.

``build()`` groups the served queues by the database each lives on (``mq.database_of``).
Queues on one database get the plain ``Worker``. Queues on several get a ``MultiWorker``:
one ``Worker`` per database, each with its own claim loop, handler threads, heartbeat,
reaper and listener, on a thread of its own. Each loop claims only for its own handler
threads, so a busy database never takes capacity from another one: the split is fair
by construction, and ``--concurrency`` is per database.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..conf import current
from ..engine import databases
from . import registry as registry_mod
from .registry import Registry
from .runner import Worker
from .stopping import drain_then_exit, stop_on_signals

logger = logging.getLogger("django_mqlite.worker")


def by_database(
    queues: Iterable[str] | None, using: str | None, registry: Registry
) -> dict[str, list[str]]:
    """The served queue names grouped by database alias, default database first.

    With ``using``, only the queues living on that database are served; a queue named
    explicitly that lives elsewhere is an error (``InvalidArgumentError``).
    """
    wanted = list(queues or [])
    groups: dict[str, list[str]] = {}
    for name in registry.select(wanted):
        if using is not None and not wanted and _home(name) not in (None, using):
            continue  # `--database X` without `--queue`: the queues that live on X
        groups.setdefault(databases.alias_of(using, name), []).append(name)
    if not groups:
        where = "" if using is None else f" for a queue on database {using!r}"
        raise ImproperlyConfigured(f"no consumers are registered{where}")
    first = databases.alias_of(using)
    return dict(sorted(groups.items(), key=lambda item: (item[0] != first, item[0])))


def _home(queue: str) -> str | None:
    """Where a queue of ``MQLITE["QUEUES"]`` lives (None: not declared there)."""
    if queue not in current().queues:
        return None
    return databases.declared_database(queue) or current().database


def build(
    queues: Iterable[str] | None = None,
    *,
    using: str | None = None,
    registry: Registry | None = None,
    **options: Any,
) -> Worker | MultiWorker:
    """The worker for ``queues`` (every queue with a consumer when empty), wherever
    they live. ``options`` are ``Worker``'s."""
    registry = registry if registry is not None else registry_mod.registry
    groups = by_database(queues, using, registry)
    if len(groups) == 1:
        [(alias, names)] = groups.items()
        return Worker(names, using=alias, registry=registry, **options)
    return MultiWorker(groups, registry=registry, **options)


class MultiWorker:
    """A ``Worker`` per database in one process. ``run()`` returns 0 once all stopped.

    A signal (or ``stop()``) stops every loop; a second signal exits at once. Periodic
    schedules are ticked once per process, on the queue database, not once per loop.
    When one loop ends on its own for another reason than ``--burst`` finding nothing
    (``--max-messages``, ``--max-memory``), the others are stopped too, so the process
    exits for its supervisor to restart it.
    """

    def __init__(
        self,
        groups: dict[str, list[str]],
        *,
        install_signals: bool = True,
        periodic: bool = True,
        **options: Any,
    ) -> None:
        self.install_signals = install_signals
        self.periodic = periodic
        self.workers = [
            Worker(names, using=alias, install_signals=False, periodic=False, **options)
            for alias, names in groups.items()
        ]
        self._on_signal = drain_then_exit(self.stop)
        self.errors: list[Exception] = []

    @property
    def stop_reason(self) -> str | None:
        reasons = {w.stop_reason for w in self.workers if w.stop_reason}
        return "; ".join(sorted(reasons)) or None

    def run(self) -> int:
        with stop_on_signals(self._on_signal, install=self.install_signals):
            services = []
            if self.periodic:  # the periodic ticker (tasks.plugin), once for every database
                services = [t for s in registry_mod.services() if (t := s(None)) is not None]
                for t in services:
                    t.start()
            threads = [
                threading.Thread(target=self._run_one, args=(w,), name=f"mqlite-db-{w.using}")
                for w in self.workers
            ]
            try:
                for t in threads:
                    t.start()
                for t in threads:
                    while t.is_alive():
                        t.join(0.2)  # short joins keep the main thread free for signals
            finally:
                for t in services:
                    t.stop()
        if self.errors:
            raise self.errors[0]  # e.g. a served queue that does not exist
        return 0

    def _run_one(self, worker: Worker) -> None:
        try:
            worker.run()
        except Exception as exc:
            logger.exception("the worker loop of database %r failed", worker.using)
            self.errors.append(exc)
            self.stop(f"the loop of database {worker.using!r} failed")
            return
        reason = worker.stop_reason or ""
        if not (worker.burst and reason.startswith("burst")):
            self.stop(f"the loop of database {worker.using!r} stopped ({reason})")

    def stop(self, reason: str = "stop requested") -> None:
        for w in self.workers:
            w.stop(reason)
