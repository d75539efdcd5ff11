"""Operating: peek, cancel a scheduled message, redrive, purge, stats."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq

from .conftest import error, url


def dead_letter(q: str, body: Any = 1) -> int:
    mq.send(q, body)
    (m,) = mq.receive(q)
    m.reject("Bad")
    return m.seq


def test_peek(api: Any, q: str) -> None:
    seqs = [mq.send(q, i) for i in range(3)]
    r = api.get(url(f"queues/{q}/messages/"), {"limit": 2, "after_seq": seqs[0]})
    assert r.status_code == 200
    got = r.json()["messages"]
    assert [m["seq"] for m in got] == seqs[1:]
    assert got[0]["state"] == "active" and got[0]["body"] == 1
    assert {"visible_at", "expires_at", "dead_letter_reason", "last_error"} <= set(got[0])


def test_peek_by_state_and_errors(api: Any, q: str) -> None:
    dead_letter(q)
    mq.send(q, 2)
    got = api.get(url(f"queues/{q}/messages/"), {"state": "dead_lettered"}).json()["messages"]
    assert [m["dead_letter_reason"] for m in got] == ["Bad"]
    for params in ({"state": "gone"}, {"limit": 0}, {"limit": 1001}, {"after_seq": "x"}):
        error(api.get(url(f"queues/{q}/messages/"), params), 400, "invalid_argument")
    error(api.get(url("queues/nope/messages/")), 404, "not_found")


def test_cancel_scheduled(api: Any, q: str) -> None:
    seq = mq.send(q, 1, delay=60)
    assert api.delete(url(f"queues/{q}/messages/{seq}/")).status_code == 204
    error(api.delete(url(f"queues/{q}/messages/{seq}/")), 404, "not_found")
    error(api.delete(url(f"queues/nope/messages/{seq}/")), 404, "not_found")


def test_redrive(api: Any, q: str, make_queue: Any) -> None:
    dead_letter(q)
    seq = dead_letter(q)
    make_queue("other")
    r = api.post(url(f"queues/{q}/redrive/"), {"seqs": [seq], "to_queue": "other"}, format="json")
    assert r.status_code == 200 and r.json() == {"count": 1}
    assert mq.stats("other").counts["active"] == 1
    assert api.post(url(f"queues/{q}/redrive/"), {}, format="json").json() == {"count": 1}
    error(
        api.post(url(f"queues/{q}/redrive/"), {"to_queue": "nope"}, format="json"), 404, "not_found"
    )
    error(
        api.post(url(f"queues/{q}/redrive/"), {"limit": 0}, format="json"), 400, "invalid_argument"
    )


def test_purge(api: Any, q: str) -> None:
    dead_letter(q)
    mq.send(q, 2)
    r = api.post(url(f"queues/{q}/purge/"), {}, format="json")
    assert r.json() == {"count": 1}
    assert api.post(url(f"queues/{q}/purge/"), {"state": "active"}, format="json").json() == {
        "count": 1
    }
    error(
        api.post(url(f"queues/{q}/purge/"), {"state": "locked"}, format="json"),
        400,
        "invalid_argument",
    )


def test_stats(api: Any, q: str) -> None:
    mq.send(q, 1)
    one = api.get(url(f"queues/{q}/stats/")).json()
    assert one["queue"] == q
    assert one["counts"]["active"] == 1 and one["counts"]["dead_lettered"] == 0
    assert one["totals"]["enqueued"] == 1
    assert isinstance(one["oldest_active_age"], float)
    everything = api.get(url("stats/")).json()["queues"]
    assert list(everything) == [q]
    error(api.get(url("queues/nope/stats/")), 404, "not_found")
