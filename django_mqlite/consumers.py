"""``django_mqlite.consumers``: the documented import path of the consumer registry.

The registry lives in ``worker/registry.py`` (with the worker it serves); this module
re-exports its public names, so ``consumers.register("default", run_task)`` and
``from django_mqlite.consumers import Registry`` keep working.
"""

from __future__ import annotations

from .worker.registry import (
    Consumer,
    ConsumerConflictError,
    Discovery,
    Handler,
    Registry,
    Service,
    consumer,
    declared_queues,
    discoveries,
    register,
    register_declarations,
    register_discovery,
    register_service,
    registry,
    services,
)

__all__ = [
    "Consumer",
    "ConsumerConflictError",
    "Discovery",
    "Handler",
    "Registry",
    "Service",
    "consumer",
    "declared_queues",
    "discoveries",
    "register",
    "register_declarations",
    "register_discovery",
    "register_service",
    "registry",
    "services",
]
