"""The worker-liveness rule, in one place (``models.stale_before_ms``, the ``Worker``
queryset's ``alive()``/``stale()`` and ``Worker.is_alive``): alive while not stopped and
heard from within ``WORKER_STALE_AFTER``; every reader (admin, metrics, ``mqlite
health``) asks it."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_mqlite.admin.workers import status
from django_mqlite.models import Worker

pytestmark = pytest.mark.django_db

NOW = 1_000_000_000


def row(last_seen: int, stopped_at: int | None = None) -> Worker:
    return Worker.objects.create(
        host="h", pid=last_seen, started_at=0, last_seen=last_seen, stopped_at=stopped_at
    )


@override_settings(MQLITE={"WORKER_STALE_AFTER": 15})
def test_alive_is_a_heartbeat_newer_than_the_stale_boundary() -> None:
    fresh = row(NOW - 14_999)
    edge = row(NOW - 15_000)  # exactly WORKER_STALE_AFTER ago: no longer alive
    stopped = row(NOW, stopped_at=NOW)
    assert list(Worker.objects.alive(NOW)) == [fresh]
    assert list(Worker.objects.stale(NOW)) == [edge]
    assert [w.is_alive(NOW) for w in (fresh, edge, stopped)] == [True, False, False]


def test_the_admin_status_asks_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    w = row(NOW)
    monkeypatch.setattr(Worker, "is_alive", lambda self, now=None: False)
    assert status(w) == "stale"
    monkeypatch.setattr(Worker, "is_alive", lambda self, now=None: True)
    assert status(w) == "live"
