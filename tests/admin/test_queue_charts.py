"""History charts in the admin: a small throughput chart per queue on the Queues page,
completed / failed / depth charts on a queue's page; inline SVG with class ``mq-chart``
and a text alternative (``<title>`` and ``<desc>``, referenced by ``aria-labelledby``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.test import Client

import django_mqlite as mq
from django_mqlite.admin import charts
from django_mqlite.models import Queue

URL = "/admin/django_mqlite/queue/"
T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def svgs(html: str) -> list[str]:
    return re.findall(r'<svg class="mq-chart[^"]*".*?</svg>', html, flags=re.S)


def text_alternative(svg: str) -> tuple[str, str]:
    """The chart's title and description, checked to be what aria-labelledby names."""
    labelled = re.search(r'aria-labelledby="([^"]+) ([^"]+)"', svg)
    assert labelled and 'role="img"' in svg
    title = re.search(rf'<title id="{labelled.group(1)}">([^<]+)</title>', svg)
    desc = re.search(rf'<desc id="{labelled.group(2)}">([^<]+)</desc>', svg)
    assert title and desc
    return title.group(1), desc.group(1)


def traffic(clock: mq.clock.FrozenClock, queue: str, minutes: int = 5) -> None:
    """Some minutes of sends, completions and failures, sampled by the reaper."""
    for i in range(minutes):
        mq.send_batch(queue, [mq.OutMessage(f"{i}")] * (i + 2))
        got = mq.receive(queue, max_messages=i + 2)
        for m in got[1:]:
            m.complete()
        got[0].abandon()
        clock.advance(60)
        mq.reap()


def test_queue_list_has_a_throughput_chart_per_queue(admin_client: Client, db: Any) -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("busy")
        mq.create_queue("idle")
        traffic(clock, "busy")
        html = admin_client.get(URL).content.decode()
    small = svgs(html)
    assert len(small) == 2 and all("mq-chart-small" in s for s in small)
    by_queue = dict(text_alternative(s) for s in small)
    busy = by_queue["busy: messages sent and completed per minute, last 60 minutes"]
    # 2+3+4+5+6 sent, one of each minute's batch abandoned (and received again later).
    total = mq.stats("busy").totals
    assert f"completed: {total['completed']} in total" in busy
    assert f"sent: {total['enqueued']} in total, at most 6 per minute" in busy
    idle = by_queue["idle: messages sent and completed per minute, last 60 minutes"]
    assert "completed: 0 in total" in idle


def test_queue_page_has_completed_failed_and_depth_charts(admin_client: Client, db: Any) -> None:
    with mq.clock.frozen(T0) as clock:
        q = mq.create_queue("busy")
        traffic(clock, "busy")
        pk = Queue.objects.get(name="busy").pk
        html = admin_client.get(f"{URL}{pk}/change/").content.decode()
    big = svgs(html)
    assert len(big) == 3 and not any("mq-chart-small" in s for s in big)
    titles = [text_alternative(s)[0] for s in big]
    assert titles == [
        f"{q.name}: completed, last 60 minutes, per minute",
        f"{q.name}: failed deliveries, last 60 minutes, per minute",
        f"{q.name}: messages by state, last 60 minutes, per minute",
    ]
    completed, failed, depth = (text_alternative(s)[1] for s in big)
    totals = mq.stats("busy").totals
    assert completed.startswith(f"completed: {totals['completed']} in total, at most 5 per minute")
    assert failed.startswith("failed: 5 in total, at most 1 per minute")
    counts = mq.stats("busy").counts
    assert f"active: {counts['active']} at the end" in depth
    assert "dead_lettered: 0 at the end" in depth
    assert 'aria-current="page">1 hour<' in html


def test_queue_page_window(admin_client: Client, db: Any) -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("busy")
        traffic(clock, "busy", minutes=2)
        pk = Queue.objects.get(name="busy").pk
        day = admin_client.get(f"{URL}{pk}/change/?minutes=1440").content.decode()
        bad = admin_client.get(f"{URL}{pk}/change/?minutes=abc").content.decode()
    assert "last 1,440 minutes, per 6 minutes" in text_alternative(svgs(day)[0])[0]
    assert 'aria-current="page">24 hours<' in day
    assert "last 60 minutes, per minute" in text_alternative(svgs(bad)[0])[0]


def test_no_charts_without_the_view_permission(staff_client: Any, make_queue: Any) -> None:
    pk = Queue.objects.get(name=make_queue().name).pk
    client = staff_client(view=False)
    assert client.get(f"{URL}{pk}/change/").status_code == 403
    assert client.get(URL).status_code == 403


def test_gaps_break_the_depth_line_and_columns_merge() -> None:
    starts = [T0 + dt.timedelta(minutes=i) for i in range(4)]
    svg = charts.chart([charts.Series("active", [1, None, 3, 4], kind="line")], starts, title="t")
    assert svg.count("<polyline") == 2
    buckets = [
        {"start": s, "completed": i, "depth": None if i == 3 else {"active": i}}
        for i, s in enumerate(starts)
    ]
    size, merged = charts.group(buckets, 2)
    assert size == 2
    assert [(b["completed"], b["depth"]) for b in merged] == [
        (1, {"active": 1}),
        (5, {"active": 2}),
    ]
    assert charts.describe([charts.Series("x", [None, None])], starts[:2], 1) == "x: no data."
