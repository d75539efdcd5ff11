"""The worker: runs registered consumers (and, through the registry, Django Tasks).

``Worker(queues, concurrency=...).run()`` is what ``manage.py runworker`` calls; tests
drive it in-process the same way (``install_signals=False`` off the main thread).
``registry.py`` is the consumer registry it serves (``django_mqlite.consumers`` is its
documented import path).

The runtime (``Worker``, ``MultiWorker``, ``build``, ``backoff_delay``) loads on first
use: ``import django_mqlite`` imports the registry for ``mq.consumer``, which runs this
module first, and must stay light (no claim loop, no models).

May import: ``engine``, ``models``, ``conf`` and ``exceptions``; never ``tasks``: Tasks
plugs into the worker through the registry (``tests/test_layers.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .multi import MultiWorker, build
    from .retry import backoff_delay
    from .runner import Worker

__all__ = ["MultiWorker", "Worker", "backoff_delay", "build"]


def __getattr__(name: str) -> Any:
    """``from django_mqlite.worker import Worker``: the runtime, imported when named."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import multi, retry, runner

    found = {
        "MultiWorker": multi.MultiWorker,
        "Worker": runner.Worker,
        "backoff_delay": retry.backoff_delay,
        "build": multi.build,
    }
    return found[name]
