"""The worker-liveness rule, in one place (``engine/liveness.py``, spelled for the ORM
as the ``Worker`` queryset's ``alive()``/``stale()`` and ``Worker.is_alive``): alive while
not stopped and heard from strictly within ``WORKER_STALE_AFTER``; every reader (the
reaper, admin, metrics, ``mqlite health``) asks it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
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


@override_settings(MQLITE={"WORKER_STALE_AFTER": 15})
def test_the_reaper_and_the_orm_draw_the_same_boundary(make_queue: Any, clock: Any) -> None:
    q = make_queue(lock_duration=600).name
    edge, fresh = (
        Worker.objects.create(host="h", pid=pid, started_at=0, last_seen=clock.now_ms()).pk
        for pid in (1, 2)
    )
    held = {}
    for wid in (edge, fresh):
        mq.send(q, str(wid))
        [msg] = mq.receive(q, worker_id=wid)  # stamps the heartbeat: now
        held[wid] = msg.seq
    clock.advance(15)
    now = clock.now_ms()
    Worker.objects.filter(pk=fresh).update(last_seen=now - 14_999)
    assert [w.pk for w in Worker.objects.alive(now)] == [fresh]
    assert [w.pk for w in Worker.objects.stale(now)] == [edge]
    assert mq.reap()["stale_worker_locks"] == 1
    states = {p.seq: p.state for p in mq.peek(q)}
    assert states == {held[edge]: "active", held[fresh]: "locked"}
