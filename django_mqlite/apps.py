from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class MQLiteConfig(AppConfig):
    name = "django_mqlite"
    verbose_name = "Message queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
        from .tasks import plugin

        plugin.install()  # the Tasks queues and the periodic ticker, into the worker

        from django.core.signals import setting_changed

        from . import otel

        otel.configure()  # imports OpenTelemetry only when MQLITE["TRACING"] allows it
        setting_changed.connect(otel._reload)

        post_migrate.connect(_sync_declared_queues, sender=self)
        post_migrate.connect(_sync_declared_topics, sender=self)


def _sync_declared_queues(using: str, **kwargs: Any) -> None:
    """After ``migrate`` on a database, create or update the queues ``MQLITE["QUEUES"]``
    declares there (those without ``"database"`` live on ``MQLITE["DATABASE"]``)."""
    from .conf import mqlite_settings
    from .engine.queues import sync_declared
    from .tasks.declared import declared_queues

    if not mqlite_settings.QUEUES:
        return
    sync_declared(declared_queues(), using=using)


def _sync_declared_topics(using: str, **kwargs: Any) -> None:
    """After ``migrate`` on a database (and its queues), create the topics
    ``MQLITE["TOPICS"]`` declares there, with their declared subscriptions."""
    from .conf import mqlite_settings
    from .engine.declared_topics import sync_declared

    if not mqlite_settings.TOPICS:
        return
    sync_declared(mqlite_settings.TOPICS, using=using)
