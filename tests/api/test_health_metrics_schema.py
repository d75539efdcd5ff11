"""healthz (open), metrics (Prometheus text) and schema (OpenAPI 3)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import django_mqlite as mq

from .conftest import url


def test_healthz_is_open(anon: Any) -> None:
    r = anon.get(url("healthz/"))
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "database": True}


def test_metrics(api: Any, q: str) -> None:
    mq.send(q, 1)
    mq.send(q, 2, delay=60)
    r = api.get(url("metrics/"), HTTP_ACCEPT="text/plain")
    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.content.decode())
        for s in family.samples
    }
    assert samples[("mqlite_queue_messages", (("queue", q), ("state", "active")))] == 1
    assert samples[("mqlite_queue_messages", (("queue", q), ("state", "scheduled")))] == 1
    assert samples[("mqlite_queue_messages", (("queue", q), ("state", "dead_lettered")))] == 0
    assert samples[("mqlite_messages_enqueued_total", (("queue", q),))] == 2
    assert ("mqlite_queue_oldest_active_age_seconds", (("queue", q),)) in samples


def test_metrics_needs_auth(anon: Any) -> None:
    assert anon.get(url("metrics/")).status_code in (401, 403)


def test_schema(api: Any, db: Any) -> None:
    r = api.get(url("schema/"), HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    schema = r.json()
    assert schema["openapi"].startswith("3.")
    assert schema["servers"] == [{"url": "/mq"}]
    ops = {(p, m) for p, item in schema["paths"].items() for m in item if m != "parameters"}
    assert len(ops) == 38
    assert ("/topics/{topic}/publish/", "post") in ops
    assert ("/topics/{topic}/subscriptions/{name}/", "put") in ops
    assert ("/queues/{name}/messages/{seq}/renew/", "post") in ops
    assert ("/queues/{name}/messages/{seq}/snooze/", "post") in ops
    assert ("/queues/{name}/messages/{seq}/cancel/", "post") in ops
    assert ("/queues/{name}/history/", "get") in ops
    assert ("/queues/{name}/pause/", "post") in ops
    assert ("/batches/", "get") in ops and ("/batches/{batch_id}/", "get") in ops
    assert ("/batches/", "post") in ops
    for path, item in schema["paths"].items():
        for method, op in item.items():
            if path != "/healthz/":
                assert {"401", "403"} <= set(op["responses"]), (path, method)


def test_schema_as_yaml(api: Any, db: Any) -> None:
    r = api.get(url("schema/"), HTTP_ACCEPT="application/vnd.oai.openapi")
    assert r.status_code == 200
    assert r.content.startswith(b"openapi:")


def scrape(api: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = api.get(url("metrics/"), HTTP_ACCEPT="text/plain")
    assert r.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.content.decode())
        for s in family.samples
    }


def test_a_scrape_never_counts_every_message(
    api: Any, q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_mqlite.api import metrics

    monkeypatch.setattr(metrics, "COUNT_CAP", 3)
    mq.send_batch(q, [mq.OutMessage(n) for n in range(6)])
    with CaptureQueriesContext(connection) as queries:
        samples = scrape(api)
    assert samples[("mqlite_queue_messages", (("queue", q), ("state", "active")))] == 4  # cap+1
    assert samples[("mqlite_messages_enqueued_total", (("queue", q),))] == 6  # exact totals
    on_messages = [x["sql"] for x in queries if "mqlite_message" in x["sql"]]
    assert on_messages and all("LIMIT" in sql for sql in on_messages), on_messages


def test_worker_gauges(api: Any, q: str) -> None:
    from django_mqlite.engine.clock import now_ms
    from django_mqlite.models import Worker

    now = now_ms()
    live = Worker.objects.create(
        host="h", pid=7, queues=[q], started_at=now, last_seen=now, in_flight=2,
        claimed=40, failed=3, clock_skew_ms=-12,
    )  # fmt: skip
    Worker.objects.create(host="h", pid=8, queues=[], started_at=0, last_seen=0)  # silent
    Worker.objects.create(host="h", pid=9, queues=[], started_at=0, last_seen=0, stopped_at=1)
    samples = scrape(api)
    key = (("host", "h"), ("pid", "7"), ("worker", str(live.pk)))
    assert samples[("mqlite_worker_alive", key)] == 1
    assert samples[("mqlite_worker_busy", key)] == 2
    assert samples[("mqlite_worker_claimed_total", key)] == 40
    assert samples[("mqlite_worker_failed_total", key)] == 3
    assert samples[("mqlite_worker_clock_skew_seconds", key)] == -0.012
    silent = [k for (name, k) in samples if name == "mqlite_worker_alive" and ("pid", "8") in k]
    assert [samples[("mqlite_worker_alive", k)] for k in silent] == [0]
    assert not [k for (_, k) in samples if ("pid", "9") in k]  # stopped: not exported
