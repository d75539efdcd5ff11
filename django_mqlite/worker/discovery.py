"""Finding the work a worker serves: the ``consumers`` and ``tasks`` modules of every
installed app (as the admin finds ``admin`` modules), then what the integrations
registered with ``registry.register_discovery`` add (the Django Tasks integration: the
task runner for the queues of every django-mqlite Tasks backend, ``tasks.plugin``).

The worker imports no integration: the Tasks runner registers itself into the registry,
never the reverse (``tests/test_layers.py``).
"""

from __future__ import annotations

from django.utils.module_loading import autodiscover_modules

from .registry import discoveries, registry


def autodiscover() -> None:
    """Import every installed app's ``consumers`` and ``tasks`` modules and register the
    task runner for each queue a django-mqlite Tasks backend serves."""
    autodiscover_modules("consumers", "tasks")
    for discover in discoveries():  # the Tasks integration's (``tasks.plugin``)
        discover(registry)
