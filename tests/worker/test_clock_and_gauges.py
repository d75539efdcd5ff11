"""The worker measures its host clock against the database's, refuses to start beyond
the bound, and records its gauges (claimed, failed, busy, clock skew) on its row."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.models import Worker as WorkerRow
from django_mqlite.worker import clockskew
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def shift_host_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    real = time.time_ns
    monkeypatch.setattr(clockskew.time, "time_ns", lambda: real() + int(seconds * 1e9))


def handler(msg: mq.Received) -> None:
    if msg.json()["fail"]:
        raise RuntimeError("no")


def test_a_synchronised_clock_measures_near_zero() -> None:
    assert abs(clockskew.measure_ms("default")) < 1000


def test_skew_is_measured_against_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    shift_host_clock(monkeypatch, 20)  # this host 20 s ahead
    assert -21_000 < clockskew.measure_ms("default") < -19_000


def test_a_worker_refuses_to_start_beyond_the_default_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mq.create_queue("skewed", lock_duration=30)  # default bound: 7.5 s
    registry = Registry()
    registry.register("skewed", handler)
    shift_host_clock(monkeypatch, -10)
    with pytest.raises(ImproperlyConfigured, match=r"behind the database's.*NTP"):
        burst(registry, "skewed")
    assert not WorkerRow.objects.exists()  # never registered
    shift_host_clock(monkeypatch, 5)  # within 7.5 s: starts
    burst(registry, "skewed")


def test_the_bound_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    mq.create_queue("skewed", lock_duration=30)
    registry = Registry()
    registry.register("skewed", handler)
    shift_host_clock(monkeypatch, 5)
    with override_settings(MQLITE={"MAX_CLOCK_SKEW": 2}), pytest.raises(ImproperlyConfigured):
        burst(registry, "skewed")


def test_the_row_records_claimed_failed_and_skew(monkeypatch: pytest.MonkeyPatch) -> None:
    mq.create_queue("g", max_delivery_count=1)
    mq.send_batch("g", [mq.OutMessage({"fail": n == 0}) for n in range(3)])
    registry = Registry()
    registry.register("g", handler)
    worker = burst(registry, "g")
    row = WorkerRow.objects.get(pk=worker.worker_id)
    assert (row.claimed, row.failed) == (3, 1)
    assert row.clock_skew_ms is not None and abs(row.clock_skew_ms) < 1000
    gauges: dict[str, Any] = worker._gauges()
    assert gauges["claimed"] == 3 and gauges["failed"] == 1


def test_a_previous_versions_worker_can_still_register() -> None:
    """Rolling upgrade: code that knows nothing of the new columns inserts its row."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO mqlite_worker (host, pid, queues, started_at, last_seen, in_flight) "
            "VALUES ('old', 1, '[]', 0, 0, 0)"
        )
    row = WorkerRow.objects.get(host="old")
    assert (row.claimed, row.failed, row.clock_skew_ms) == (0, 0, None)
