"""The Django Tasks integration plugs into the worker through the consumers registry
(``tasks/plugin.py``, installed by ``AppConfig.ready``): the worker imports no tasks module,
yet a worker serves the Tasks queues, starts the periodic ticker and creates the declared
queues with their Tasks ``keep_results``."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from django_mqlite import consumers
from django_mqlite.consumers import Registry
from django_mqlite.tasks import plugin
from django_mqlite.worker import Worker
from django_mqlite.worker.discovery import autodiscover

pytestmark = pytest.mark.django_db(transaction=True)

SCHEDULE = {"p": {"cron": "*/5 * * * *", "queue": "pings", "body": 1}}


def test_the_app_registers_the_tasks_hooks() -> None:
    assert plugin.register_task_queues in consumers.discoveries()
    assert plugin.periodic_ticker in consumers.services()
    assert consumers.declared_queues() == plugin.declared_queues()


def test_autodiscovery_registers_the_task_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.worker import discovery

    registry = Registry()
    monkeypatch.setattr(discovery, "registry", registry)
    autodiscover()
    assert "tasks" in registry.queues()  # tests.settings: TASKS serves the "tasks" queue
    assert registry.get("tasks").name.endswith("run_task")  # type: ignore[union-attr]


def test_a_worker_starts_the_ticker_with_or_without_declared_schedules() -> None:
    """Schedules stored in the database may be created at any time, so every worker
    ticks (one small read a second when none is declared)."""
    registry = Registry()
    registry.register("pings", lambda msg: None)
    names = []
    for periodic in ({}, SCHEDULE):
        with override_settings(
            MQLITE={**settings.MQLITE, "PERIODIC": periodic, "QUEUES": {"pings": {}}}
        ):
            worker = Worker(["pings"], registry=registry, install_signals=False)
            worker._start()
            try:
                names.append(sorted(t.name for t in worker._threads))
            finally:
                worker.stop()
                worker._finish()
    assert "mqlite-periodic" in names[0]
    assert "mqlite-periodic" in names[1]
