"""Pause/resume and the claim limits over HTTP."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq

from .conftest import error, url


def test_pause_and_resume(api: Any, db: Any) -> None:
    mq.create_queue("work")
    r = api.post(url("queues/work/pause/"))
    assert r.status_code == 200, r.content
    assert r.json()["paused"] is True
    assert api.get(url("queues/work/")).json()["paused"] is True
    assert api.get(url("queues/work/stats/")).json()["paused"] is True
    # Sends still go in; nothing comes out.
    assert api.post(url("queues/work/messages/"), {"body": 1}, format="json").status_code == 201
    r = api.post(url("queues/work/receive/"), {"max_messages": 5}, format="json")
    assert r.status_code == 200 and r.json()["messages"] == []
    r = api.post(url("queues/work/resume/"))
    assert r.status_code == 200 and r.json()["paused"] is False
    r = api.post(url("queues/work/receive/"), {"max_messages": 5}, format="json")
    assert len(r.json()["messages"]) == 1


def test_pausing_an_unknown_or_invalid_queue(api: Any, db: Any) -> None:
    error(api.post(url("queues/nope/pause/")), 404, "not_found")
    error(api.post(url("queues/nope/resume/")), 404, "not_found")
    error(api.post(url("queues/a%20b/pause/")), 400, "invalid_argument")


def test_limits_on_create_and_patch(api: Any, db: Any) -> None:
    r = api.post(
        url("queues/"), {"name": "lim", "rate_limit": 2.5, "max_in_flight": 4}, format="json"
    )
    assert r.status_code == 201, r.content
    assert (r.json()["rate_limit"], r.json()["max_in_flight"]) == (2.5, 4)
    mq.pause_queue("lim")
    r = api.patch(url("queues/lim/"), {"max_in_flight": None, "lock_duration": 9}, format="json")
    assert r.status_code == 200, r.content
    q = mq.get_queue("lim")
    assert (q.rate_limit, q.max_in_flight, q.lock_duration, q.paused) == (2.5, None, 9, True)
    stats = api.get(url("queues/lim/stats/")).json()
    assert (stats["rate_limit"], stats["max_in_flight"]) == (2.5, None)


def test_bad_limits_are_400(api: Any, db: Any) -> None:
    mq.create_queue("lim")
    for field, value in [
        ("rate_limit", 0),
        ("rate_limit", -1),
        ("rate_limit", "5"),
        ("rate_limit", True),
        ("rate_limit", 1e12),
        ("max_in_flight", 0),
        ("max_in_flight", -2),
        ("max_in_flight", 1.5),
        ("max_in_flight", "3"),
        ("max_in_flight", 10**12),
    ]:
        error(
            api.post(url("queues/"), {"name": "x", field: value}, format="json"),
            400,
            "invalid_argument",
        )
        error(api.patch(url("queues/lim/"), {field: value}, format="json"), 400, "invalid_argument")
    assert mq.list_queues()[0].name == "lim" and len(mq.list_queues()) == 1


def test_metrics_show_pause_and_limits(api: Any, db: Any) -> None:
    mq.create_queue("lim", rate_limit=3, max_in_flight=2)
    mq.create_queue("plain")
    mq.pause_queue("lim")
    text = api.get(url("metrics/")).content.decode()
    assert 'mqlite_queue_paused{queue="lim"} 1.0' in text
    assert 'mqlite_queue_paused{queue="plain"} 0.0' in text
    assert 'mqlite_queue_rate_limit{queue="lim"} 3.0' in text
    assert 'mqlite_queue_max_in_flight{queue="lim"} 2.0' in text
    assert 'mqlite_queue_rate_limit{queue="plain"}' not in text
