"""healthz (open), metrics (Prometheus text) and schema (OpenAPI 3)."""

from __future__ import annotations

from typing import Any

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
    assert len(ops) == 25
    assert ("/queues/{name}/messages/{seq}/renew/", "post") in ops
    assert ("/queues/{name}/pause/", "post") in ops
    for path, item in schema["paths"].items():
        for method, op in item.items():
            if path != "/healthz/":
                assert {"401", "403"} <= set(op["responses"]), (path, method)


def test_schema_as_yaml(api: Any, db: Any) -> None:
    r = api.get(url("schema/"), HTTP_ACCEPT="application/vnd.oai.openapi")
    assert r.status_code == 200
    assert r.content.startswith(b"openapi:")
