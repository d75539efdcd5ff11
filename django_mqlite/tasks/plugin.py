"""How the Django Tasks integration plugs into the worker, through the registration any
consumer uses (``worker.registry``: ``register_discovery``, ``register_service`` and
``register_declarations``): the task runner for the queues of every MQLiteBackend, the
periodic schedules' ticker, and the declared queues with their Tasks ``keep_results``.

``install()`` runs in ``AppConfig.ready()``. It imports no Tasks framework: each hook
imports what it needs when the worker calls it, so a project without one still starts.
"""

from __future__ import annotations

from typing import Any

from ..worker.registry import (
    Registry,
    register_declarations,
    register_discovery,
    register_service,
)
from .declared import declared_queues


def register_task_queues(registry: Registry) -> None:
    """Register the task runner for each queue a django-mqlite Tasks backend serves."""
    try:
        from .runner import register_task_queues as register
    except ImportError:  # neither django.tasks nor the django-tasks backport
        return
    register(registry)


def periodic_ticker(using: str | None) -> Any:
    """The ticker of ``MQLITE["PERIODIC"]`` and of the schedules stored in the database
    (which an operator may create at any time, so every worker runs it)."""
    from .periodic import ticker_loop

    return ticker_loop(using=using)


def install_schedules() -> None:
    """Let the engine's stored schedules check task paths and enqueue runs."""
    from ..engine import schedules
    from .periodic import StoredSchedules

    schedules.hooks = StoredSchedules()


def install_chains() -> None:
    """Sign the envelopes of chains' task steps (``tasks.chains``); nothing to do
    without a Tasks framework."""
    try:
        from .chains import install
    except ImportError:  # neither django.tasks nor the django-tasks backport
        return
    install()


def install() -> None:
    from .topics import install as install_topics

    install_topics()  # task subscriptions of topics (mq.subscribe_task)
    install_chains()  # task steps of chains (tasks.chains.step)
    install_schedules()  # schedules stored in the database (engine.schedules)
    register_discovery(register_task_queues)
    register_service(periodic_ticker)
    register_declarations(declared_queues)
