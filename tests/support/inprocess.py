"""A real ``Worker`` run in this process, in burst mode: it serves ``queues`` from
``registry`` until nothing is claimable, then returns. No signal handlers (pytest owns
them) and no reaper thread unless a test asks for one."""

from __future__ import annotations

from typing import Any

from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker


def burst(registry: Registry, *queues: str, **options: Any) -> Worker:
    """Run a burst worker over ``queues`` (every queue of ``registry`` when none is
    named) with ``options`` for ``Worker``; returns it, run, for its counters."""
    options.setdefault("reaper", False)
    worker = Worker(list(queues), burst=True, install_signals=False, registry=registry, **options)
    worker.run()
    return worker
