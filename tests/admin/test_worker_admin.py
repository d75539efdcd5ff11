"""The Workers page: live, stale and stopped workers; long-gone ones left off."""

from __future__ import annotations

import re

from django.test import Client, override_settings

from django_mqlite.models import Worker

URL = "/admin/django_mqlite/worker/"


def _worker(now_ms: int, host: str, *, seen_ago_s: float, stopped: bool = False) -> Worker:
    return Worker.objects.create(
        host=host,
        pid=4242,
        queues=["orders", "emails"],
        started_at=now_ms - 3_600_000,
        last_seen=now_ms - int(seen_ago_s * 1000),
        in_flight=3,
        stopped_at=now_ms - 1000 if stopped else None,
    )


def statuses(html: str) -> dict[str, str]:
    found = re.findall(r'>([\w-]+-host)</a></th>.*?data-status="(\w+)"', html, re.S)
    return dict(found)


@override_settings(MQLITE={"WORKER_STALE_AFTER": 15})
def test_live_stale_stopped_and_gone(admin_client: Client, db, clock):
    now = clock.now_ms()
    _worker(now, "live-host", seen_ago_s=2)
    _worker(now, "stale-host", seen_ago_s=60)
    _worker(now, "stopped-host", seen_ago_s=5, stopped=True)
    _worker(now, "gone-host", seen_ago_s=3 * 86400)
    html = admin_client.get(URL).content.decode()
    assert statuses(html) == {
        "live-host": "live",
        "stale-host": "stale",
        "stopped-host": "stopped",
    }
    assert "orders, emails" in html and "1m" in html  # queues; the stale one's age


@override_settings(MQLITE={"WORKER_STALE_AFTER": 15})
def test_status_filter(admin_client: Client, db, clock):
    now = clock.now_ms()
    _worker(now, "live-host", seen_ago_s=2)
    _worker(now, "stale-host", seen_ago_s=60)
    _worker(now, "stopped-host", seen_ago_s=5, stopped=True)
    for status in ("live", "stale", "stopped"):
        html = admin_client.get(f"{URL}?status={status}").content.decode()
        assert set(statuses(html)) == {f"{status}-host"}


def test_detail_page(admin_client: Client, db, clock):
    w = _worker(clock.now_ms(), "box", seen_ago_s=1)
    response = admin_client.get(f"{URL}{w.pk}/change/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "box" in html and "4242" in html and 'name="_save"' not in html
