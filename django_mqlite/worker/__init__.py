"""The worker: runs registered consumers (and, through the registry, Django Tasks).

``Worker(queues, concurrency=...).run()`` is what ``manage.py runworker`` calls; tests
drive it in-process the same way (``install_signals=False`` off the main thread).

May import: ``engine``, ``consumers`` (the registry it serves), ``models``, ``conf``
and ``exceptions``; never ``tasks``: Tasks plugs into the worker through the registry
(``tests/test_layers.py``).
"""

from __future__ import annotations

from .multi import MultiWorker, build
from .retry import backoff_delay
from .runner import Worker

__all__ = ["MultiWorker", "Worker", "backoff_delay", "build"]
