"""Changelists on deep queues: no unbounded COUNT(*) over mqlite_message; counts beyond
the cap come from an estimate."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.admin import gauges, pagination

PAGES = [
    "/admin/django_mqlite/message/",
    "/admin/django_mqlite/message/?state=active",
    "/admin/django_mqlite/message/?q=abc",
    "/admin/django_mqlite/deadletter/",
    "/admin/django_mqlite/queue/",
]


def unbounded_counts(sqls: list[str]) -> list[str]:
    """Queries that count rows of mqlite_message without a LIMIT inside the count."""
    bad = []
    for sql in sqls:
        low = sql.lower()
        if "count(" in low and "mqlite_message" in low and not re.search(r"\blimit\b", low):
            bad.append(sql)
    return bad


@pytest.mark.parametrize("url", PAGES)
def test_changelists_never_count_every_row(admin_client: Client, make_queue, url: str):
    q = make_queue().name
    mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(30)])
    with CaptureQueriesContext(connection) as ctx:
        response = admin_client.get(url)
    assert response.status_code == 200
    sqls = [c["sql"] for c in ctx.captured_queries]
    assert any("mqlite_message" in s for s in sqls)
    assert unbounded_counts(sqls) == []


def test_the_checker_catches_a_plain_count():
    assert unbounded_counts(['SELECT COUNT(*) FROM "mqlite_message"']) != []
    assert (
        unbounded_counts(
            ['SELECT COUNT(*) FROM (SELECT 1 FROM "mqlite_message" LIMIT 10001) subquery']
        )
        == []
    )


def test_beyond_the_cap_the_count_is_an_estimate(
    admin_client: Client, make_queue, monkeypatch, vendor
):
    monkeypatch.setattr(pagination, "EXACT_COUNT_CAP", 5)
    monkeypatch.setattr(gauges, "EXACT_COUNT_CAP", 5)
    q = make_queue().name
    mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(40)])
    # The estimate follows the vendor, as pagination.estimated_count does: PostgreSQL's
    # planner statistics (fresh after ANALYZE), SQLite's span of sequence numbers.
    if vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE mqlite_message")
    response = admin_client.get("/admin/django_mqlite/message/")
    count = response.context["cl"].result_count
    assert count > 5  # not the capped number: an estimate
    if vendor == "sqlite":
        assert count == 40  # the seq span, exact here because nothing was removed
    html = admin_client.get("/admin/django_mqlite/queue/").content.decode()
    assert 'data-state="active">5+<' in html  # the gauges say "more than the cap"
